package workflow

import (
	"errors"
	"fmt"
	"time"

	"github.com/orch-tool/orch/gitstore/gitrepo"
)

// StepSync does, across clones, a step that two machines must not both do
// to one task: a verdict (approve, reject, review) or a human's decision.
// It fetches and merges the remote's state branch, does the step here
// (do: the verb, on an engine that holds the merged state), and pushes the
// state branch with a lease; the step is answered only once the remote
// holds it. When another clone moved the remote first, the step is undone
// here and done again after a new fetch and merge, under the same rules:
// if the other clone's change was a step on the same task, the rules now
// refuse this one (the task is no longer provisional, or escalated), and
// that refusal is the answer, with a note saying another clone was first.
// Under contention it backs off and tries again until SyncDeadline.
// Refused or given up, the clone keeps the remote's state merged (what orch
// sync would do) without the step.
//
// Unlike a claim, a verdict is not won on a ref of its own: a claim ref
// lets a claim be answered before the state branch holds it (claims are
// many and quick, and a lost one costs nothing), but a verdict carries the
// reviewer's feedback, which must not be answered as done and then lost
// with its machine. With the state branch as the commit point, a per-task
// ref would decide nothing the lease on the state branch does not.
//
// On success the engine is returned still open, so that the caller prints
// the answer from it, then closes it; notes are what the engines'
// reconciles did and the races lost on the way.
func StepSync(opts Options, so SyncOptions, verb string, do func(e *Engine) error) (*Engine, []string, error) {
	remote, err := so.remote()
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	until := so.until()
	for attempt := 1; ; attempt++ {
		fs, _, err := fetchRemote(opts, remote, false)
		if err != nil {
			return nil, notes, err
		}
		e, err := Open(opts)
		if err != nil {
			return nil, notes, err
		}
		fail := func(err error) (*Engine, []string, error) {
			if cerr := closeNoting(e, &notes); err == nil {
				err = cerr
			}
			return nil, notes, err
		}
		// The claim refs decide who holds a task: the verb of a claimant
		// whose claim ended on the remote is refused (claimRefLost).
		e.remoteClaims = readRemoteClaims(e.Store, fs.Claims)
		if err := e.ForActor(e.mergeRemote(remote, fs.Tip, &SyncResult{Remote: remote})); err != nil {
			return fail(err)
		}
		before := e.Store.Snapshot().Tip
		if err := do(e); err != nil {
			if attempt > 1 {
				notes = append(notes, fmt.Sprintf("another clone changed the state on %s since this %s began; it was undone here, and the remote's state now refuses it", remote, verb))
			}
			return fail(e.ForActor(err))
		}
		after := e.Store.Snapshot().Tip
		if after == before || after == fs.Tip {
			return e, notes, nil // nothing to share
		}
		perr := e.Store.Repo.Push(remote, e.Store.Ref, after, fs.Tip)
		if perr == nil {
			return e, notes, nil
		}
		if !errors.Is(perr, gitrepo.ErrPushRejected) {
			return fail(remoteFailure(perr))
		}
		// Another clone pushed first: undo the step here, then fetch,
		// merge and do it again.
		if err := e.Store.MoveTo(before, e.Signature(), "orch: undo "+verb+" (another clone moved "+remote+" first)"); err != nil {
			return fail(err)
		}
		if err := e.afterMove(); err != nil {
			return fail(err)
		}
		if _, _, err := fail(nil); err != nil {
			return nil, notes, err
		}
		notes = append(notes, fmt.Sprintf("another clone moved %s's state branch first; undid the %s here and trying again", remote, verb))
		if time.Now().After(until) {
			return nil, notes, so.gaveUp(remote, "every push lost the race", AdviseRetryCommand)
		}
		so.backoff(attempt)
	}
}
