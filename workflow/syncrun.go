package workflow

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
)

// SyncDeadline is how long sync and claim --sync keep trying when other
// clones win the races on the remote: they back off and try again until
// then, and give up (exit 5) only past it.
const SyncDeadline = 2 * time.Minute

// SyncOptions configure Sync and ClaimSync.
type SyncOptions struct {
	Remote string // default "origin"
	// RestoreRemote pushes back what a rewritten remote dropped;
	// AcceptRewrite moves this clone to the rewritten remote's branch.
	RestoreRemote, AcceptRewrite bool
	// MaxBackoff caps the random wait after a lost push (0: no cap beyond
	// the default growth).
	MaxBackoff time.Duration
	// Deadline overrides SyncDeadline (tests).
	Deadline time.Duration
}

// until is when a sync under contention gives up.
func (so *SyncOptions) until() time.Time {
	if so.Deadline > 0 {
		return time.Now().Add(so.Deadline)
	}
	return time.Now().Add(SyncDeadline)
}

// gaveUp is the error past the deadline.
func (so *SyncOptions) gaveUp(remote, what string, next Advice) error {
	d := SyncDeadline
	if so.Deadline > 0 {
		d = so.Deadline
	}
	return &ConflictError{Msg: fmt.Sprintf("%s on %s for %s, and gave up", what, remote, d), Next: Next{Advice: next}}
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
	return &ExternalError{Msg: err.Error(), Next: Next{Advice: AdviseCheckRemote}}
}

// fetchRemote fetches the remote's state branch into its remote-tracking
// ref, its claim refs and the task branches, in one round trip and without
// the lock; it returns what it learnt and what the tracking ref held
// before. When the remote no longer holds what was fetched from it before,
// the tracking ref is put back (so the next sync sees it too) and the
// rewrite is reported, unless the person chose (allowRewrite).
func fetchRemote(opts Options, remote string, allowRewrite bool) (fs *gitrepo.FetchedState, prev plumbing.Hash, err error) {
	st, err := gitstore.Open(gitstore.Options{Repo: opts.Repo, Dir: opts.Dir, StateBranch: opts.StateBranch})
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	track := gitrepo.TrackingRef(remote, st.Ref)
	prev, _ = st.Repo.ReadRef(track)
	fs, err = st.Repo.FetchState(remote, st.Ref, branchPrefixOf(st))
	if err != nil {
		return nil, prev, remoteFailure(err)
	}
	h := fs.Tip
	if !allowRewrite && !prev.IsZero() && !h.IsZero() && !st.Contains(h, prev) {
		mb := st.MovedBackwards(track, prev, h)
		_ = st.Repo.UpdateRef(gitrepo.RefUpdate{Name: track, Old: h, New: prev, Who: opts.Actor + " <" + opts.Actor + "@orch>", Message: "orch: keep what the remote dropped in view"})
		return nil, prev, &RemoteRewrittenError{mb}
	}
	return fs, prev, nil
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
	until := so.until()
	for attempt := 1; ; attempt++ {
		res.Attempts = attempt
		// What this attempt merged; earlier attempts' are in all already.
		res.Conflicts, res.Changed = nil, nil
		fs, prev, err := fetchRemote(opts, remote, so.RestoreRemote || so.AcceptRewrite)
		if err != nil {
			return nil, notes, err
		}
		rtip := fs.Tip
		e, err := Open(opts)
		if err != nil {
			return nil, notes, err
		}
		// The claim refs decide the claims the merge meets; those the
		// merged state shows have ended are removed once the remote holds
		// that state.
		e.remoteClaims = readRemoteClaims(e.Store, fs.Claims)
		err = e.ForActor(e.syncAttempt(remote, so, prev, rtip, res))
		stale := e.staleClaims()
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
			if err := repo.DropClaims(remote, stale); err != nil {
				notes = append(notes, "warning: could not remove ended claim refs: "+err.Error())
			}
			return res, notes, nil
		}
		err = repo.Push(remote, ref, local, rtip)
		if errors.Is(err, gitrepo.ErrPushRejected) {
			if time.Now().After(until) {
				// Every push lost the race: nothing was shared.
				return nil, notes, so.gaveUp(remote, "every push lost the race", AdviseSyncAgain)
			}
			so.backoff(attempt)
			continue // another clone pushed first: fetch and merge again
		}
		if err != nil {
			return nil, notes, remoteFailure(err)
		}
		if err := repo.DropClaims(remote, stale); err != nil {
			notes = append(notes, "warning: could not remove ended claim refs: "+err.Error())
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
}

// syncAttempt is one merge of the remote's tip under the lock.
func (e *Engine) syncAttempt(remote string, so SyncOptions, prev, rtip plumbing.Hash, res *SyncResult) error {
	if !e.Store.Exists() && rtip.IsZero() {
		return &NotInitializedError{Ref: e.Store.Ref}
	}
	if so.AcceptRewrite {
		if err := e.acceptRemoteRewrite(remote, prev, rtip); err != nil {
			// Not accepted: the tracking ref keeps what the remote
			// dropped, so the next sync still sees the rewrite.
			if !prev.IsZero() && !e.Store.Contains(rtip, prev) {
				_ = e.Store.Repo.UpdateRef(gitrepo.RefUpdate{Name: gitrepo.TrackingRef(remote, e.Store.Ref), Old: rtip, New: prev,
					Who: e.Signature().String(), Message: "orch: keep what the remote dropped in view"})
			}
			return err
		}
	}
	return e.mergeRemote(remote, rtip, res)
}

// ClaimSync makes a claim atomic across clones: the claim is won on the
// remote with the task's claim ref (pushed only if absent), so claims of
// different tasks never contend, and a clone that finds the ref taken undoes
// its claim and tries another task.
//
// With claim_arbiter claim_ref (format 2's default, claimByRef) the claim
// ref alone decides, and an uncontended claim is one round trip: the clone
// claims from the state it has (fetched at most ClaimViewFresh ago), and one
// push carries the claim ref and, with a lease, the state branch as it was
// before this claim (the claim reaches it with the next push, so a state
// branch never takes a claim whose ref was lost). It fetches only when the ref was taken (once: later losses try
// the next task from that fetch), when nothing here is claimable, or when
// its view is older than ClaimViewFresh.
//
// With state_branch the claim ref and the state branch are pushed together,
// atomically, after a fetch, so the state branch decides as it did before
// claim refs (a clone whose orch predates them can share the remote); when
// the state branch moved, the claim is undone and tried again after a new
// fetch.
//
// Under contention it backs off and tries again until SyncDeadline. On
// success the engine is returned still open, so that the caller prints the
// answer from it, then closes it; notes are what the engines' reconciles
// did and the races lost on the way.
func ClaimSync(opts Options, co ClaimOptions, so SyncOptions) (*Engine, *ClaimResult, []string, error) {
	remote, err := so.remote()
	if err != nil {
		return nil, nil, nil, err
	}
	c := &claimSync{opts: opts, co: co, so: so, remote: remote, lost: map[string]bool{}, until: so.until()}
	if arbiter, repo, ref := arbiterAtTip(opts); arbiter == config.ArbiterClaimRef {
		return c.claimByRef(repo, ref)
	}
	for attempt := 1; ; attempt++ {
		fs, _, err := fetchRemote(opts, remote, false)
		if err != nil {
			return nil, nil, c.notes, err
		}
		e, res, again, err := c.claimFrom(fs)
		if err != nil || !again {
			return e, res, c.notes, err
		}
		if time.Now().After(c.until) {
			return nil, nil, c.notes, c.so.gaveUp(remote, "claims kept losing races", AdviseClaimSyncAgain)
		}
		c.so.backoff(attempt)
	}
}

// ClaimViewFresh is how old a clone's view of the remote may be for
// claim --sync to claim from it without fetching (claim_arbiter
// claim_ref): its own claims and the claim refs it lost are always in it;
// other clones' transitions reach it within this time, or at the first
// lost claim ref. docs/github.md says what that staleness costs.
const ClaimViewFresh = 10 * time.Second

// arbiterAtTip is the claim arbiter at the state branch's tip (see
// configAtTip: the arbiter decides how the claim fetches, before the lock
// is taken), with the repository and the state branch's ref.
func arbiterAtTip(opts Options) (arbiter string, repo *gitrepo.Repo, ref string) {
	st, err := gitstore.Open(gitstore.Options{Repo: opts.Repo, Dir: opts.Dir, StateBranch: opts.StateBranch, NoScan: true})
	if err != nil {
		return config.Default().ClaimArbiter, nil, ""
	}
	defer st.Close()
	return configAtTip(st).ClaimArbiter, st.Repo, st.Ref
}

// claimByRef claims with claim refs deciding (claim_arbiter claim_ref).
func (c *claimSync) claimByRef(repo *gitrepo.Repo, ref string) (*Engine, *ClaimResult, []string, error) {
	fs, fetched, err := c.view(repo, ref)
	if err != nil {
		return nil, nil, c.notes, err
	}
	for attempt := 1; ; attempt++ {
		e, err := c.open(fs)
		if err != nil {
			return nil, nil, c.notes, err
		}
		if err := e.ForActor(e.mergeRemote(c.remote, fs.Tip, &SyncResult{Remote: c.remote})); err != nil {
			return nil, nil, c.notes, c.fail(e, err)
		}
		before := e.Store.Snapshot().Tip
		res, err := e.Claim(c.co)
		if err != nil {
			if !fetched {
				// Nothing claimable in this clone's view (or not the task
				// asked for): the remote may know more.
				if err := c.fail(e, nil); err != nil {
					return nil, nil, c.notes, err
				}
				if fs, err = c.fetch(); err != nil {
					return nil, nil, c.notes, err
				}
				fetched = true
				continue
			}
			return nil, nil, c.notes, c.fail(e, e.ForActor(err))
		}
		id := res.Task.Task.ID
		var stale plumbing.Hash // a claim ref that ended or ran out: replaced
		if rc := e.remoteClaims[id]; rc != nil {
			stale = rc.Commit
		}
		// The state branch goes along as it was before this claim: this
		// claim reaches it with the next push, once its ref is won.
		claimErr, stateErr, perr := e.Store.Repo.PushClaimAndState(c.remote, id, res.Commit, stale, e.Store.Ref, before, fs.Tip)
		if perr == nil && claimErr == nil {
			switch {
			case stateErr == nil:
				c.dropEnded(e, id)
			case errors.Is(stateErr, gitrepo.ErrPushRejected):
				c.notes = append(c.notes, fmt.Sprintf("the state branch on %s moved; the claim ref %s holds the claim, and a later claim --sync or orch sync of this clone records it there", c.remote, gitrepo.ClaimRef(id)))
			default:
				c.notes = append(c.notes, fmt.Sprintf("warning: the claim is won (claim ref %s on %s) but the state branch was not pushed: %v; orch sync pushes it", gitrepo.ClaimRef(id), c.remote, stateErr))
			}
			return e, res, c.notes, nil
		}
		if perr == nil {
			perr = claimErr
		}
		if _, err := c.lose(e, res, before, perr); err != nil {
			return nil, nil, c.notes, err
		}
		if time.Now().After(c.until) {
			return nil, nil, c.notes, c.so.gaveUp(c.remote, "claims kept losing races", AdviseClaimSyncAgain)
		}
		// Another clone holds the ref: what else it claimed is on the
		// remote, so a view from before this command is fetched again (and
		// for the one task asked for, the fetch tells why). A view this
		// command fetched is fresh: the next task is tried from it, the
		// lost one counted taken.
		if !fetched || c.co.Task != "" {
			if fs, err = c.fetch(); err != nil {
				return nil, nil, c.notes, err
			}
			fetched = true
		}
	}
}

// view is what the claim starts from: this clone's last fetch of the
// remote when it is fresh (fetched false), else a new one.
func (c *claimSync) view(repo *gitrepo.Repo, ref string) (fs *gitrepo.FetchedState, fetched bool, err error) {
	if at := repo.FetchedAt(c.remote); !at.IsZero() && time.Since(at) < ClaimViewFresh {
		if fs, err := repo.LastFetchedState(c.remote, ref); err == nil {
			return fs, false, nil
		}
	}
	fs, err = c.fetch()
	return fs, true, err
}

// fetch fetches the remote's state and claim refs.
func (c *claimSync) fetch() (*gitrepo.FetchedState, error) {
	fs, _, err := fetchRemote(c.opts, c.remote, false)
	return fs, err
}

// claimSync is one claim --sync under way.
type claimSync struct {
	opts   Options
	co     ClaimOptions
	so     SyncOptions
	remote string
	until  time.Time
	notes  []string
	// lost are the tasks whose claim ref another clone won during this
	// command: not tried again.
	lost map[string]bool
}

// open opens an engine that knows the remote's claims: those fetched, and
// those this command lost.
func (c *claimSync) open(fs *gitrepo.FetchedState) (*Engine, error) {
	e, err := Open(c.opts)
	if err != nil {
		return nil, err
	}
	e.remoteClaims = readRemoteClaims(e.Store, fs.Claims)
	for id := range c.lost {
		if e.remoteClaims[id] != nil {
			continue // the fetch brought the claim that won
		}
		e.remoteClaims[id] = &remoteClaim{ID: id, By: unknownClaimer, Attempt: 1 << 30, Until: e.Now().Add(time.Duration(e.Config.ClaimTimeout))}
	}
	e.claimShare = c.share(e)
	return e, nil
}

// share is this agent's share of the ready tasks (see claimShare): the
// agents claiming are this one and those whose claim refs' leases began
// in the last minute. A heartbeat that moved a claim ref began a lease
// too, so an agent at work may count for a minute after it: its share is
// then taken by the others only when none of their own is among the
// first (older tasks of one priority may wait that minute; a higher
// priority never does). Claiming alone, it takes the next task, or one of
// the next few after a lost race or beside claims still in flight; among
// others, after a lost race, one of the first few of its share.
func (c *claimSync) share(e *Engine) claimShare {
	inFlight := 0
	claimers := map[string]bool{e.Actor: true}
	lately := e.Now().Add(time.Duration(e.Config.ClaimTimeout) - time.Minute)
	for _, rc := range e.remoteClaims {
		if e.claimState(rc) == "pending" {
			inFlight++
		}
		if rc.By != unknownClaimer && rc.Until.After(lately) {
			claimers[rc.By] = true
		}
	}
	return newClaimShare(e.Actor, slices.Collect(maps.Keys(claimers)), inFlight, len(c.lost))
}

// fail closes e and returns err (or what closing said).
func (c *claimSync) fail(e *Engine, err error) error {
	if cerr := closeNoting(e, &c.notes); err == nil {
		err = cerr
	}
	return err
}

// claimFrom claims from one fetch of the remote (claim_arbiter
// state_branch): the next task whose claim ref this clone wins. again asks
// for a new fetch (the state branch moved).
func (c *claimSync) claimFrom(fs *gitrepo.FetchedState) (e *Engine, res *ClaimResult, again bool, err error) {
	for {
		if e, err = c.open(fs); err != nil {
			return nil, nil, false, err
		}
		if err = e.ForActor(e.mergeRemote(c.remote, fs.Tip, &SyncResult{Remote: c.remote})); err != nil {
			return nil, nil, false, c.fail(e, err)
		}
		before := e.Store.Snapshot().Tip
		res, err = e.Claim(c.co)
		if err != nil {
			if before != fs.Tip && !before.IsZero() {
				// Share what the merge made even when nothing is claimable.
				_ = e.Store.Repo.Push(c.remote, e.Store.Ref, before, fs.Tip)
			}
			return nil, nil, false, c.fail(e, e.ForActor(err))
		}
		id := res.Task.Task.ID
		var stale plumbing.Hash // a claim ref that ended or ran out: replaced
		if rc := e.remoteClaims[id]; rc != nil {
			stale = rc.Commit
		}
		// The state branch decides: claim ref and state branch move
		// together (an atomic push), so a clone whose orch predates claim
		// refs, which pushes the state branch alone, can never claim the
		// same task.
		perr := e.Store.Repo.PushClaimWithState(c.remote, id, res.Commit, stale, e.Store.Ref, fs.Tip)
		if perr == nil {
			c.dropEnded(e, "")
			return e, res, false, nil
		}
		again, err := c.lose(e, res, before, perr)
		if err != nil || again {
			return nil, nil, again, err
		}
	}
}

// lose undoes a claim whose push was refused and closes e. The next task
// is tried from the same fetch (again false) when another clone holds the
// task's claim ref; after a fetch (again true) when the state branch moved.
func (c *claimSync) lose(e *Engine, res *ClaimResult, before plumbing.Hash, perr error) (again bool, err error) {
	id := res.Task.Task.ID
	if uerr := e.undoClaim(res, before, perr); uerr != nil {
		return false, c.fail(e, uerr)
	}
	if err := c.fail(e, nil); err != nil {
		return false, err
	}
	switch {
	case errors.Is(perr, gitrepo.ErrClaimTaken):
		c.lost[id] = true
		if c.co.Task != "" {
			c.notes = append(c.notes, fmt.Sprintf("another clone claimed %s on %s first; undid the claim here", id, c.remote))
		} else {
			c.notes = append(c.notes, fmt.Sprintf("another clone claimed %s on %s first; undid the claim here and took the next task", id, c.remote))
		}
		// The one task asked for is taken: a new fetch tells why.
		return c.co.Task != "", nil
	case errors.Is(perr, gitrepo.ErrPushRejected):
		c.notes = append(c.notes, fmt.Sprintf("another clone moved %s's state branch first; undid the claim of %s and trying again", c.remote, id))
		return true, nil
	}
	return false, remoteFailure(perr)
}

// dropEnded removes the claim refs the state branch now on the remote
// shows have ended, but the one this claim just won (claimed: its old ref
// was replaced).
func (c *claimSync) dropEnded(e *Engine, claimed string) {
	stale := e.staleClaims()
	delete(stale, claimed)
	if err := e.Store.Repo.DropClaims(c.remote, stale); err != nil {
		c.notes = append(c.notes, "warning: could not remove ended claim refs: "+err.Error())
	}
}

// undoClaim moves the state branch back to before a claim whose claim ref
// was lost, and deletes the branch the claim created.
func (e *Engine) undoClaim(res *ClaimResult, before plumbing.Hash, why error) error {
	what := "push failed"
	if errors.Is(why, gitrepo.ErrPushRejected) {
		what = "another clone claimed it first"
	}
	if err := e.Store.MoveTo(before, e.Signature(), "orch: undo claim of "+res.Task.Task.ID+" ("+what+")"); err != nil {
		return err
	}
	e.dropClaimBranch(res)
	return e.afterMove()
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
