package workflow

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
)

// SyncAttempts bounds the fetch-merge-push loop of Sync and ClaimSync.
const SyncAttempts = 40

// SyncOptions configure Sync and ClaimSync.
type SyncOptions struct {
	Remote string // default "origin"
	// RestoreRemote pushes back what a rewritten remote dropped;
	// AcceptRewrite moves this clone to the rewritten remote's branch.
	RestoreRemote, AcceptRewrite bool
	// MaxBackoff caps the random wait after a lost push (0: no cap beyond
	// the default growth to 320 ms).
	MaxBackoff time.Duration
}

func (so *SyncOptions) remote() (string, error) {
	r := so.Remote
	if r == "" {
		r = "origin"
	}
	if !gitrepo.ValidRemote(r) {
		return "", &UsageError{Msg: fmt.Sprintf("%q is not a remote", r)}
	}
	return r, nil
}

// backoff waits a random time, growing with the attempt, after a lost
// push: without it the clone whose attempts take longer (it has to merge)
// can lose every race to a faster one.
func (so *SyncOptions) backoff(attempt int) {
	limit := 10 * time.Millisecond << min(attempt, 5)
	if so.MaxBackoff > 0 && so.MaxBackoff < limit {
		limit = so.MaxBackoff
	}
	time.Sleep(time.Duration(rand.Int64N(int64(limit))))
}

// RemoteRewrittenError: the remote's state branch no longer holds what this
// clone fetched from it before (a force push). Nothing is merged or pushed;
// a person decides (sync --restore-remote or --accept-rewrite).
type RemoteRewrittenError struct{ *gitstore.ErrMovedBackwards }

func remoteFailure(err error) error {
	return &ExternalError{Msg: err.Error(), Hint: "check the remote (git remote -v) and your access to it; nothing was pushed"}
}

// fetchRemote fetches the remote's state branch into its remote-tracking
// ref, and the task branches, without the lock; it returns the remote's
// tip and what the tracking ref held before. When the remote no longer
// holds what was fetched from it before, the tracking ref is put back (so
// the next sync sees it too) and the rewrite is reported, unless the person
// chose (allowRewrite).
func fetchRemote(opts Options, remote string, allowRewrite bool) (h, prev plumbing.Hash, err error) {
	st, err := gitstore.Open(gitstore.Options{Repo: opts.Repo, Dir: opts.Dir, StateBranch: opts.StateBranch})
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, err
	}
	track := gitrepo.TrackingRef(remote, st.Ref)
	prev, _ = st.Repo.ReadRef(track)
	h, err = st.Repo.Fetch(remote, st.Ref)
	if err != nil {
		return plumbing.ZeroHash, prev, remoteFailure(err)
	}
	if !allowRewrite && !prev.IsZero() && !h.IsZero() && !st.Contains(h, prev) {
		mb := st.MovedBackwards(track, prev, h)
		_ = st.Repo.UpdateRef(gitrepo.RefUpdate{Name: track, Old: h, New: prev, Who: opts.Actor + " <" + opts.Actor + "@orch>", Message: "orch: keep what the remote dropped in view"})
		return plumbing.ZeroHash, prev, &RemoteRewrittenError{mb}
	}
	// The task branches too, so that a claim here continues the work
	// another clone pushed (a retry after a rejection elsewhere).
	if !h.IsZero() {
		if err := st.Repo.FetchBranches(remote, BranchPrefixOf(st)); err != nil {
			return plumbing.ZeroHash, prev, remoteFailure(err)
		}
	}
	return h, prev, nil
}

// closeNoting closes e and adds what its store did to notes.
func closeNoting(e *Engine, notes *[]string) error {
	err := e.Close()
	*notes = append(*notes, e.AllNotes()...)
	return err
}

// Sync shares the state branch through a remote: fetch (without the lock),
// merge under the lock, push with a lease; when another clone pushed
// first, again, up to SyncAttempts times. notes are what the engines'
// reconciles did on the way.
func Sync(opts Options, so SyncOptions) (res *SyncResult, notes []string, err error) {
	remote, err := so.remote()
	if err != nil {
		return nil, nil, err
	}
	res = &SyncResult{Remote: remote}
	all := []SyncConflict{}
	var changed []string
	for attempt := 1; attempt <= SyncAttempts; attempt++ {
		res.Attempts = attempt
		// What this attempt merged; earlier attempts' are in all already.
		res.Conflicts, res.Changed = nil, nil
		rtip, prev, err := fetchRemote(opts, remote, so.RestoreRemote || so.AcceptRewrite)
		if err != nil {
			return nil, notes, err
		}
		e, err := Open(opts)
		if err != nil {
			return nil, notes, err
		}
		err = e.ForActor(e.syncAttempt(remote, so, prev, rtip, res))
		local, repo, ref := e.Store.Snapshot().Tip, e.Store.Repo, e.Store.Ref
		if cerr := closeNoting(e, &notes); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, notes, err
		}
		all = append(all, res.Conflicts...)
		changed = append(changed, res.Changed...)
		res.Local = local.String()
		if local == rtip {
			res.Conflicts, res.Changed = all, nonNilStrings(changed)
			return res, notes, nil
		}
		err = repo.Push(remote, ref, local, rtip)
		if errors.Is(err, gitrepo.ErrPushRejected) {
			so.backoff(attempt)
			continue // another clone pushed first: fetch and merge again
		}
		if err != nil {
			return nil, notes, remoteFailure(err)
		}
		switch {
		case rtip.IsZero():
			res.Action = "created_remote"
		case res.Merge != "":
			res.Action = "merged" // by an earlier attempt, pushed by this one
		case res.Action == "ahead" || res.Action == "up_to_date":
			res.Action = "pushed"
		}
		res.Conflicts, res.Changed = all, nonNilStrings(changed)
		return res, notes, nil
	}
	// Every push lost the race: nothing was shared.
	return nil, notes, &ConflictError{Msg: ErrSyncRace.Error(), Hint: "run orch sync again"}
}

// syncAttempt is one merge of the remote's tip under the lock.
func (e *Engine) syncAttempt(remote string, so SyncOptions, prev, rtip plumbing.Hash, res *SyncResult) error {
	if !e.Store.Exists() && rtip.IsZero() {
		return &NotInitializedError{Ref: e.Store.Ref}
	}
	if so.AcceptRewrite {
		if err := e.AcceptRemoteRewrite(remote, prev, rtip); err != nil {
			// Not accepted: the tracking ref keeps what the remote
			// dropped, so the next sync still sees the rewrite.
			if !prev.IsZero() && !e.Store.Contains(rtip, prev) {
				_ = e.Store.Repo.UpdateRef(gitrepo.RefUpdate{Name: gitrepo.TrackingRef(remote, e.Store.Ref), Old: rtip, New: prev,
					Who: e.Signature().String(), Message: "orch: keep what the remote dropped in view"})
			}
			return err
		}
	}
	return e.MergeRemote(remote, rtip, res)
}

// ClaimSync makes a claim atomic across clones: fetch (without the lock),
// then under the lock merge the remote, claim, and push the claim with a
// lease. A lost push undoes the claim locally (the branch moves back to
// before it, and a branch the claim created is deleted) and starts again.
// On success the engine is returned still open, so that the caller prints
// the answer from it, then closes it; notes are what the engines'
// reconciles did and the claims undone on the way.
func ClaimSync(opts Options, co ClaimOptions, so SyncOptions) (*Engine, *ClaimResult, []string, error) {
	remote, err := so.remote()
	if err != nil {
		return nil, nil, nil, err
	}
	var notes []string
	for attempt := 1; attempt <= SyncAttempts; attempt++ {
		rtip, _, err := fetchRemote(opts, remote, false)
		if err != nil {
			return nil, nil, notes, err
		}
		e, err := Open(opts)
		if err != nil {
			return nil, nil, notes, err
		}
		res, lost, err := e.claimAndPush(remote, rtip, co)
		if err = e.ForActor(err); err != nil || lost {
			if cerr := closeNoting(e, &notes); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, nil, notes, err
			}
			notes = append(notes, fmt.Sprintf("another clone moved %s first; undid the claim of %s and trying again", remote, res.Task.Task.ID))
			so.backoff(attempt)
			continue
		}
		return e, res, notes, nil
	}
	return nil, nil, notes, &ConflictError{Msg: fmt.Sprintf("every claim lost the race on %s %d times", remote, SyncAttempts), Hint: "run orch claim --sync again"}
}

// claimAndPush merges the remote's tip, claims and pushes the claim; lost
// reports a push that lost the race (the claim is undone).
func (e *Engine) claimAndPush(remote string, rtip plumbing.Hash, co ClaimOptions) (res *ClaimResult, lost bool, err error) {
	sr := &SyncResult{Remote: remote}
	if err := e.MergeRemote(remote, rtip, sr); err != nil {
		return nil, false, err
	}
	before := e.Store.Snapshot().Tip
	res, err = e.Claim(co)
	if err != nil {
		if before != rtip && !before.IsZero() {
			// Share what the merge made even when nothing is claimable.
			_ = e.Store.Repo.Push(remote, e.Store.Ref, before, rtip)
		}
		return nil, false, err
	}
	perr := e.Store.Repo.Push(remote, e.Store.Ref, res.Commit, rtip)
	if perr == nil {
		return res, false, nil
	}
	why := "push failed"
	if errors.Is(perr, gitrepo.ErrPushRejected) {
		why = "lost the race on " + remote
	}
	if err := e.Store.MoveTo(before, e.Signature(), "orch: undo claim of "+res.Task.Task.ID+" ("+why+")"); err != nil {
		return nil, false, err
	}
	e.dropClaimBranch(res)
	aerr := e.AfterMove()
	if errors.Is(perr, gitrepo.ErrPushRejected) {
		return res, true, aerr
	}
	return nil, false, remoteFailure(perr)
}

// dropClaimBranch deletes the branch an undone claim created (only if it
// is still where the claim put it), so that a lost race leaves no branch
// behind and a later claim is not told it continues on a branch with no
// work.
func (e *Engine) dropClaimBranch(res *ClaimResult) {
	if res.BranchReused || res.Branch == "" {
		return
	}
	ref := "refs/heads/" + res.Branch
	if h, err := e.Store.ReadRef(ref); err == nil && !h.IsZero() {
		_ = e.Store.Repo.DeleteRef(ref, h)
	}
}
