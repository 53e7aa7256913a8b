package workflow

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// A claim is a lease of claim_timeout: the claimant's answers (orch
// respond) and orch heartbeat renew it. When it runs out, the task is ready
// again: the next claim takes it over and records why, as orch sweep would,
// so a dead machine's work comes back without anyone running sweep.

// leaseStart is when a claimed task's lease began: the claim, or its last
// renewal (heartbeat_at).
func leaseStart(t *taskfile.Task) time.Time {
	if t.HeartbeatAt.After(t.ClaimedAt) {
		return t.HeartbeatAt
	}
	return t.ClaimedAt
}

// leaseEnd is when a claimed task's lease runs out: claim_timeout after
// its start.
func (e *Engine) leaseEnd(s *gitstore.Summary) time.Time {
	return leaseStart(&s.Task).Add(time.Duration(e.Config.ClaimTimeout))
}

// leaseExpired reports whether s is claimed under a lease that ran out.
func (e *Engine) leaseExpired(s *gitstore.Summary) bool {
	if s.Task.Queue != taskfile.Claimed || s.Task.ClaimedAt.IsZero() {
		return false
	}
	return !e.Now().Before(e.leaseEnd(s))
}

// HeartbeatResult is a renewed lease.
type HeartbeatResult struct {
	Result
	LeaseUntil time.Time
}

// Heartbeat renews the claimant's lease on its task: for long, quiet work
// (a harness hook can run it).
func (e *Engine) Heartbeat(id string) (*HeartbeatResult, error) {
	out := &HeartbeatResult{}
	res, err := e.transitionAny(id, ActionHeartbeat, func(t *Task) (*change, error) {
		if t.Task.Queue == taskfile.Provisional && t.Task.ReviewClaimedBy == e.Actor {
			// A review claim is a lease too.
			now := e.Now()
			f, err := t.File.Apply(taskfile.Set(taskfile.KeyReviewAt, taskfile.Time(now)))
			if err != nil {
				return nil, err
			}
			out.LeaseUntil = e.reviewLeaseEnd(&f.Task)
			until := taskfile.FormatTime(out.LeaseUntil)
			return &change{file: f, body: fmt.Sprintf("Review claim renewed by %s until %s.", e.Actor, until),
				data: &HeartbeatData{LeaseUntil: until, Review: true}}, nil
		}
		if t.Task.Queue != taskfile.Claimed {
			return nil, &RuleError{Rule: "not_claimed", Msg: fmt.Sprintf("%s is %s: only a claimed task has a lease to renew", id, t.Task.Queue), Next: Next{Advice: AdviseClaimWorktree}}
		}
		if t.Task.ClaimedBy != e.Actor {
			return nil, e.requireClaimant(&t.Task, "heartbeat")
		}
		now := e.Now()
		f, err := t.File.Apply(taskfile.Set(taskfile.KeyHeartbeatAt, taskfile.Time(now)))
		if err != nil {
			return nil, err
		}
		out.LeaseUntil = now.Add(time.Duration(e.Config.ClaimTimeout))
		until := taskfile.FormatTime(out.LeaseUntil)
		// The trailers a claim commit has: a claim ref moved to this commit
		// (HeartbeatSync) tells other clones the renewed lease.
		return &change{file: f, body: fmt.Sprintf("Lease renewed by %s until %s.", e.Actor, until),
			data:     &HeartbeatData{LeaseUntil: until},
			trailers: leaseTrailers(t.Task.Attempts, t.Task.ClaimedAt, out.LeaseUntil)}, nil
	})
	if err != nil {
		return nil, err
	}
	out.Result = *res
	return out, nil
}

// HeartbeatSync renews the actor's lease on a task through the remote
// (orch heartbeat --sync). It fetches and merges the remote's state branch
// first, so that a claim that ended on the remote is not renewed: when
// another clone took the task over once the lease ran out (in the state
// branch, or in the task's claim ref alone) or the task moved on, it
// refuses (claimEnded), and the clone keeps what it merged, as orch sync
// would. Otherwise it renews here, pushes the state branch with a lease and
// moves the task's claim ref to the renewal (renewClaimRef). A push that
// loses a race is undone and done again after a new fetch and merge, which
// judge a takeover that landed meanwhile. Past SyncDeadline of lost races,
// or when the remote cannot be reached, the renewal stays committed here
// (and is in the claim ref when that push went through), and the error
// says what was not shared.
//
// On success the engine is returned still open, so that the caller prints
// the answer from it, then closes it; notes are what the engines'
// reconciles did and the races lost on the way.
func HeartbeatSync(opts Options, so SyncOptions, ref string) (*Engine, *HeartbeatResult, []string, error) {
	remote, err := so.remote()
	if err != nil {
		return nil, nil, nil, err
	}
	var notes []string
	until := so.until()
	for attempt := 1; ; attempt++ {
		fs, _, ferr := fetchRemote(opts, remote, false)
		e, err := Open(opts)
		if err != nil {
			return nil, nil, notes, err
		}
		fail := func(err error) (*Engine, *HeartbeatResult, []string, error) {
			if cerr := closeNoting(e, &notes); err == nil {
				err = cerr
			}
			return nil, nil, notes, err
		}
		s, err := e.Lookup(ref)
		if err != nil {
			return fail(err)
		}
		id, was := s.Task.ID, s.Task
		if ferr != nil {
			// Renewed here all the same: the error says it was not shared.
			if _, err := e.Heartbeat(id); err != nil {
				return fail(e.ForActor(err))
			}
			return fail(ferr)
		}
		e.remoteClaims = readRemoteClaims(e.Store, fs.Claims)
		if err := e.ForActor(e.mergeRemote(remote, fs.Tip, &SyncResult{Remote: remote})); err != nil {
			return fail(err)
		}
		if err := e.claimEnded(id, &was, remote); err != nil {
			return fail(err)
		}
		before := e.Store.Snapshot().Tip
		res, err := e.Heartbeat(id)
		if err != nil {
			return fail(e.ForActor(err))
		}
		perr := e.Store.Repo.Push(remote, e.Store.Ref, res.Commit, fs.Tip)
		if errors.Is(perr, gitrepo.ErrPushRejected) && !time.Now().After(until) {
			// Another clone pushed first, maybe a takeover of this task:
			// undo the renewal here, then fetch, merge and judge again.
			if err := e.Store.MoveTo(before, e.Signature(), "orch: undo heartbeat (another clone moved "+remote+" first)"); err != nil {
				return fail(err)
			}
			if err := e.afterMove(); err != nil {
				return fail(err)
			}
			if _, _, _, err := fail(nil); err != nil {
				return nil, nil, notes, err
			}
			notes = append(notes, fmt.Sprintf("another clone moved %s's state branch first; undid the heartbeat here and trying again", remote))
			so.backoff(attempt)
			continue
		}
		if perr == nil {
			if err := e.Store.Repo.DropClaims(remote, e.staleClaims()); err != nil {
				notes = append(notes, "warning: could not remove ended claim refs: "+err.Error())
			}
		}
		// Also when the state branch was not pushed: the claim ref alone
		// tells other clones the renewed lease.
		if moved, err := e.renewClaimRef(remote, id, &res.Task.Task, res.Commit); err != nil {
			notes = append(notes, "warning: the claim ref was not renewed: "+err.Error())
		} else if moved {
			notes = append(notes, "renewed the lease in the claim ref "+gitrepo.ClaimRef(id)+" on "+remote)
		}
		switch {
		case perr == nil:
			return e, res, notes, nil
		case errors.Is(perr, gitrepo.ErrPushRejected):
			return fail(so.gaveUp(remote, "every push lost the race", AdviseRenewalKept))
		default:
			return fail(remoteFailure(perr))
		}
	}
}

// claimEnded refuses the renewal of a claim that has ended on the remote:
// the task this clone knew as the actor's claim (was, before the merge) is,
// with the remote's state merged, claimed by someone else, or no longer
// claimed, or another clone's claim of it is pending in its claim ref. nil
// when the claim stands, or was not the actor's here either (Heartbeat's
// own rules answer then).
func (e *Engine) claimEnded(id string, was *taskfile.Task, remote string) error {
	if was.Queue != taskfile.Claimed || was.ClaimedBy != e.Actor {
		return nil
	}
	var now string
	s := e.Store.SummaryByID(id)
	rc := e.remoteClaims[id]
	switch {
	case rc != nil && !rc.isClaim(was) && (s == nil || !rc.isClaim(&s.Task)) && e.claimState(rc) == "pending":
		// The claim ref decides: another clone's claim of the task.
		now = fmt.Sprintf("%s is claimed by %s now (attempt %d, claim ref %s on %s)", id, rc.By, rc.Attempt, rc.Commit.String()[:12], remote)
	case s == nil:
		now = fmt.Sprintf("%s is archived now (on %s)", id, remote)
	case s.Task.Queue != taskfile.Claimed:
		now = fmt.Sprintf("%s is %s now (on %s)", id, s.Task.Queue, remote)
	case s.Task.ClaimedBy != e.Actor:
		now = fmt.Sprintf("%s is claimed by %s now (attempt %d, on %s)", id, s.Task.ClaimedBy, s.Task.Attempts, remote)
	default:
		return nil
	}
	return &RuleError{Rule: "claim_lost", Msg: now + ": your claim of it has ended, and your lease was not renewed",
		Next: Next{Advice: AdviseClaimLost, Task: id}}
}

// takeoverNote is the note a claim leaves when it takes over a task whose
// lease ran out: what sweep would have written.
func (e *Engine) takeoverNote(t *Task) string {
	return fmt.Sprintf("## Continuation Note (orch claim, %s)\n\n%s claimed this at %s and its lease ran out at %s (claim_timeout %s, renewed by orch heartbeat and orch respond); %s took it over. The work so far is on %s; read `git log %s` first.\n",
		taskfile.FormatTime(e.Now()), t.Task.ClaimedBy, taskfile.FormatTime(t.Task.ClaimedAt), taskfile.FormatTime(e.leaseEnd(t.Summary)),
		time.Duration(e.Config.ClaimTimeout), e.Actor, orDash(t.Task.Branch), orDash(t.Task.Branch))
}

// Sweep moves claims older than the threshold to needs_continuation, one
// commit per task.
func (e *Engine) Sweep(olderThan time.Duration) ([]*Result, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	if err := e.requireHuman("sweep", "", "sweeping other agents' claims"); err != nil {
		return nil, err
	}
	if olderThan <= 0 {
		olderThan = time.Duration(e.Config.ClaimTimeout)
	}
	cutoff := e.Now().Add(-olderThan)
	var ids []string
	e.Store.EachSummaryIn(map[taskfile.Queue]bool{taskfile.Claimed: true}, func(s *gitstore.Summary) {
		if !s.Task.ClaimedAt.IsZero() && leaseStart(&s.Task).Before(cutoff) {
			ids = append(ids, s.Task.ID)
		}
	})
	sort.Strings(ids)
	var out []*Result
	defer e.progress("sweeping stale claims", len(ids), len(ids))
	for i, id := range ids {
		e.progress("sweeping stale claims", i, len(ids))
		res, err := e.transition(id, ActionSweep, func(t *Task) (*change, error) {
			if t.Task.ClaimedAt.IsZero() || !leaseStart(&t.Task).Before(cutoff) {
				return nil, nil // claimed again, or renewed, meanwhile
			}
			note := fmt.Sprintf("## Continuation Note (orch sweep, %s)\n\n%s claimed this at %s and did not finish within %s. The work so far is on %s; read `git log %s` first.\n",
				taskfile.FormatTime(e.Now()), t.Task.ClaimedBy, taskfile.FormatTime(t.Task.ClaimedAt), olderThan, orDash(t.Task.Branch), orDash(t.Task.Branch))
			f, err := t.File.AddSection(note)
			if err != nil {
				return nil, err
			}
			if f, err = f.Apply(taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)); err != nil {
				return nil, err
			}
			return &change{file: f, to: taskfile.NeedsContinuation, body: fmt.Sprintf("Stale claim by %s swept after %s.", t.Task.ClaimedBy, olderThan),
				data: &SweepData{ClaimedBy: t.Task.ClaimedBy, ClaimedAt: taskfile.FormatTime(t.Task.ClaimedAt)}}, nil
		})
		var ierr *IllegalTransitionError
		if errors.As(err, &ierr) {
			continue
		}
		if err != nil {
			return out, err
		}
		if res.Commit.IsZero() {
			continue
		}
		out = append(out, res)
	}
	return out, nil
}
