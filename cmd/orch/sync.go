package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

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
		return writeJSON(o.g.io.Out, res)
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
