package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/workflow"
)

type syncOptions struct {
	g             *globalOptions
	RestoreRemote bool
	AcceptRewrite bool
}

// syncAttempts bounds the fetch-merge-push loop.
const syncAttempts = 40

// backoff waits a random time, growing with the attempt, after a lost push:
// without it the clone whose attempts take longer (it has to merge) can lose
// every race to a faster one.
//
// ORCH_SYNC_BACKOFF_MAX caps the wait (a Go duration): the testscripts
// that lose every race on purpose set it, so that they do not sleep for
// seconds.
func backoff(attempt int) {
	limit := 10 * time.Millisecond << min(attempt, 5)
	if d, err := time.ParseDuration(os.Getenv("ORCH_SYNC_BACKOFF_MAX")); err == nil && d > 0 && d < limit {
		limit = d
	}
	time.Sleep(time.Duration(rand.Int64N(int64(limit))))
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

func remoteOrDefault(r string) (string, error) {
	if r == "" {
		r = "origin"
	}
	if !gitstore.ValidRemote(r) {
		return "", &workflow.UsageError{Msg: fmt.Sprintf("%q is not a remote", r)}
	}
	return r, nil
}

// fetchRemote fetches the remote's state branch into its remote-tracking
// ref and returns its tip. The caller holds no lock. When the remote no
// longer holds what was fetched from it before, the tracking ref is put
// back (so the next sync sees it too) and the rewrite is reported, unless
// the person chose (allowRewrite).
func (g *globalOptions) fetchRemote(remote string, allowRewrite bool) (plumbing.Hash, error) {
	h, _, err := g.fetchRemoteWas(remote, allowRewrite)
	return h, err
}

// fetchRemoteWas is fetchRemote, also returning what the tracking ref held
// before the fetch.
func (g *globalOptions) fetchRemoteWas(remote string, allowRewrite bool) (h, prev plumbing.Hash, err error) {
	st, err := gitstore.Open(gitstore.Options{Repo: g.discover(), Dir: g.Dir, StateBranch: g.StateBranch})
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, err
	}
	track := gitstore.TrackingRef(remote, st.Ref)
	prev, _ = st.Repo.ReadRef(track)
	h, err = st.Repo.Fetch(remote, st.Ref)
	if err != nil {
		return plumbing.ZeroHash, prev, remoteFailure(err)
	}
	if !allowRewrite && !prev.IsZero() && !h.IsZero() && !st.Contains(h, prev) {
		mb := st.MovedBackwards(track, prev, h)
		_ = st.Repo.UpdateRef(gitstore.RefUpdate{Name: track, Old: h, New: prev, Who: g.Agent + " <" + g.Agent + "@orch>", Message: "orch: keep what the remote dropped in view"})
		return plumbing.ZeroHash, prev, &hinted{err: mb, hint: "the remote's state branch was rewritten; a person decides: orch sync --restore-remote pushes the dropped transitions back (this clone has them), orch sync --accept-rewrite moves this clone to the remote's branch"}
	}
	// The task branches too, so that a claim here continues the work
	// another clone pushed (a retry after a rejection elsewhere).
	if !h.IsZero() {
		if err := st.Repo.FetchBranches(remote, workflow.BranchPrefixOf(st)); err != nil {
			return plumbing.ZeroHash, prev, remoteFailure(err)
		}
	}
	return h, prev, nil
}

func remoteFailure(err error) error {
	return &workflow.ExternalError{Msg: err.Error(), Hint: "check the remote (git remote -v) and your access to it; nothing was pushed"}
}

func runSync(o *syncOptions, remoteArg string) error {
	remote, err := remoteOrDefault(remoteArg)
	if err != nil {
		return err
	}
	res := &workflow.SyncResult{Remote: remote}
	all := []workflow.SyncConflict{}
	var changed []string
	done := false
	for attempt := 1; attempt <= syncAttempts; attempt++ {
		res.Attempts = attempt
		// What this attempt merged; earlier attempts' are in all already.
		res.Conflicts, res.Changed = nil, nil
		rtip, prev, err := o.g.fetchRemoteWas(remote, o.RestoreRemote || o.AcceptRewrite)
		if err != nil {
			return err
		}
		var local plumbing.Hash
		var repo *gitstore.Repo
		err = o.g.withEngine(func(e *workflow.Engine) error {
			if !e.Store.Exists() && rtip.IsZero() {
				return &workflow.NotInitializedError{Ref: e.Store.Ref}
			}
			if o.AcceptRewrite {
				if err := e.AcceptRemoteRewrite(remote, prev, rtip); err != nil {
					// Not accepted: the tracking ref keeps what the remote
					// dropped, so the next sync still sees the rewrite.
					if !prev.IsZero() && !e.Store.Contains(rtip, prev) {
						_ = e.Store.Repo.UpdateRef(gitstore.RefUpdate{Name: gitstore.TrackingRef(remote, e.Store.Ref), Old: rtip, New: prev,
							Who: e.Signature().String(), Message: "orch: keep what the remote dropped in view"})
					}
					return err
				}
			}
			if err := e.MergeRemote(remote, rtip, res); err != nil {
				return err
			}
			local, repo = e.Store.Snapshot().Tip, e.Store.Repo
			return nil
		})
		if err != nil {
			return err
		}
		all = append(all, res.Conflicts...)
		changed = append(changed, res.Changed...)
		res.Local = local.String()
		if local == rtip {
			done = true
			break
		}
		err = repo.Push(remote, refOf(o.g), local, rtip)
		if errors.Is(err, gitstore.ErrPushRejected) {
			backoff(attempt)
			continue // another clone pushed first: fetch and merge again
		}
		if err != nil {
			return remoteFailure(err)
		}
		if rtip.IsZero() {
			res.Action = "created_remote"
		} else if res.Merge != "" {
			res.Action = "merged" // by an earlier attempt, pushed by this one
		} else if res.Action == "ahead" || res.Action == "up_to_date" {
			res.Action = "pushed"
		}
		done = true
		break
	}
	if !done { // every push lost the race: nothing was shared
		return &workflow.ConflictError{Msg: workflow.ErrSyncRace.Error(), Hint: "run orch sync again"}
	}
	res.Conflicts, res.Changed = all, nonNil(changed)
	if o.g.JSON {
		return writeJSON(o.g.io.Out, res)
	}
	fmt.Fprintf(o.g.io.Out, "sync %s: %s (local %s)\n", remote, res.Action, shortText(res.Local))
	for _, c := range all {
		fmt.Fprintf(o.g.io.Out, "conflict: %s %s: local %q, remote %q: kept %s\n", c.Path, c.Key, c.Local, c.Remote, c.Kept)
	}
	return nil
}

func refOf(g *globalOptions) string {
	b := g.StateBranch
	if b == "" {
		b = gitstore.DefaultStateBranch
	}
	if len(b) > 5 && b[:5] == "refs/" {
		return b
	}
	return "refs/heads/" + b
}

func shortText(h string) string {
	if len(h) >= 7 {
		return h[:7]
	}
	return h
}
