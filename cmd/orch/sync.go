package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/workflow"
)

type syncOptions struct {
	g             *globalOptions
	RestoreRemote bool
	AcceptRewrite bool
}

// syncOptionsOf is how sync and claim --sync share the queue.
// ORCH_SYNC_BACKOFF_MAX caps the random wait after a lost push and
// ORCH_SYNC_DEADLINE replaces the two minutes sync keeps trying under
// contention (Go durations): the testscripts that lose every race on
// purpose set them, so that they do not sleep for minutes.
func syncOptionsOf(remote string) workflow.SyncOptions {
	so := workflow.SyncOptions{Remote: remote}
	if d, err := time.ParseDuration(os.Getenv("ORCH_SYNC_BACKOFF_MAX")); err == nil && d > 0 {
		so.MaxBackoff = d
	}
	if d, err := time.ParseDuration(os.Getenv("ORCH_SYNC_DEADLINE")); err == nil && d > 0 {
		so.Deadline = d
	}
	return so
}

func newSyncCmd(g *globalOptions) *cobra.Command {
	o := &syncOptions{g: g}
	cmd := &cobra.Command{
		Use:   "sync [REMOTE]",
		Short: "Share the queue with other clones through a remote",
		Long: `Fetch the remote's state branch (default remote: origin), merge it with the
local one, and push with a lease; when another clone pushed first, fetch and
merge again. The view follows.

The merge is task by task: frontmatter key by key, bodies as text, event logs
as a union of lines. A true conflict (both sides changed the same key, or the
same lines, differently) is resolved by one rule: the remote's version wins,
since it was pushed first. Every such conflict is reported here, written in
the merge commit's message and in a sync.conflict event, and a local body
that lost is kept in the task under "## Sync conflict": nothing is dropped
silently.

History only moves forward: when the remote's state branch no longer holds
what this clone fetched from it before (a force-push, a reset), sync merges
and pushes nothing, names the dropped transitions and exits 1. A person
chooses: --restore-remote merges and pushes as usual, which puts them back on
the remote (this clone still has them); --accept-rewrite moves this clone's
branch to the remote's (refused when this clone has transitions of its own
since).`,
		Example: `  orch sync
  orch sync upstream --json
  orch sync --restore-remote`,
		Args: maxArgs(1, "sync [REMOTE]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runSync(o, argOr(args, 0)) },
	}
	cmd.Flags().BoolVar(&o.RestoreRemote, "restore-remote", false, "push back what a rewritten remote dropped (merge and push as usual)")
	cmd.Flags().BoolVar(&o.AcceptRewrite, "accept-rewrite", false, "move this clone's state branch to a rewritten remote's")
	cmd.MarkFlagsMutuallyExclusive("restore-remote", "accept-rewrite")
	return cmd
}

func runSync(o *syncOptions, remote string) error {
	so := syncOptionsOf(remote)
	so.RestoreRemote, so.AcceptRewrite = o.RestoreRemote, o.AcceptRewrite
	res, notes, err := workflow.Sync(o.g.engineOptions(false), so)
	o.g.printNoteList(notes)
	if err != nil {
		return err
	}
	if o.g.JSON {
		return o.g.out().writeJSON(o.g.syncJSON(res))
	}
	fmt.Fprintf(o.g.io.Out, "sync %s: %s (local %s)\n", res.Remote, res.Action, shortText(res.Local))
	for _, c := range res.Conflicts {
		fmt.Fprintf(o.g.io.Out, "conflict: %s %s: local %q, remote %q: kept %s\n", c.Path, c.Key, c.Local, c.Remote, c.Kept)
	}
	return nil
}

func shortText(h string) string {
	if len(h) >= 7 {
		return h[:7]
	}
	return h
}

// syncAnswer is orch sync's JSON answer.
type syncAnswer struct {
	Remote      string             `json:"remote"`
	Action      string             `json:"action"` // up_to_date | pushed | fast_forward | merged | created_remote
	Local       string             `json:"local"`  // the local state branch's commit after the sync
	RemoteTip   string             `json:"remote_tip"`
	MergeCommit string             `json:"merge_commit"` // "" when there was no merge
	Changed     []string           `json:"changed"`      // files the sync changed here, relative to the repository
	Conflicts   []syncConflictJSON `json:"conflicts"`
	Attempts    int                `json:"attempts"`
}

// syncConflictJSON is one conflict the merge resolved by the rule (the
// remote's version wins; a local body that lost is kept in the task).
type syncConflictJSON struct {
	Path   string       `json:"path"`
	TaskID string       `json:"task_id"` // "" when the file is not a task
	Task   *answer.Task `json:"task"`
	Key    string       `json:"key"` // the frontmatter key; "" for the body or a whole file
	Local  string       `json:"local"`
	Remote string       `json:"remote"`
	Kept   string       `json:"kept"` // remote, local, or both (bodies)
}

func (g *globalOptions) syncJSON(res *workflow.SyncResult) syncAnswer {
	out := syncAnswer{Remote: res.Remote, Action: res.Action, Local: res.Local, RemoteTip: res.RemoteTip, MergeCommit: res.Merge,
		Changed: []string{}, Conflicts: []syncConflictJSON{}, Attempts: res.Attempts}
	for _, p := range res.Changed {
		out.Changed = append(out.Changed, viewPath(p))
	}
	refs := map[string]*answer.Task{}
	var ids []string
	for _, c := range res.Conflicts {
		ids = append(ids, c.Task)
	}
	if len(ids) > 0 {
		// The tasks as they are after the sync; no reconcile: the sync did it.
		if e, err := workflow.Open(workflow.Options{Repo: g.discover(), Dir: g.Dir, StateBranch: g.StateBranch, Actor: g.Agent, NoReconcile: true}); err == nil {
			refs = g.taskRefs(e, ids)
			_ = e.Close()
		}
	}
	for _, c := range res.Conflicts {
		out.Conflicts = append(out.Conflicts, syncConflictJSON{viewPath(c.Path), c.Task, refs[c.Task], c.Key, c.Local, c.Remote, c.Kept})
	}
	return out
}
