package workflow

import (
	"fmt"
	"time"

	"github.com/orch-tool/orch/gitstore"
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
	res, err := e.transitionAny(id, "heartbeat", func(t *Task) (*change, error) {
		if t.Task.Queue != taskfile.Claimed {
			return nil, &RuleError{Rule: "not_claimed", Msg: fmt.Sprintf("%s is %s: only a claimed task has a lease to renew", id, t.Task.Queue), Hint: "orch claim --worktree takes a task"}
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
		// (ShareRenewal) tells other clones the renewed lease.
		return &change{file: f, body: fmt.Sprintf("Lease renewed by %s until %s.", e.Actor, until),
			data:     map[string]any{"lease_until": until},
			trailers: leaseTrailers(t.Task.Attempts, out.LeaseUntil)}, nil
	})
	if err != nil {
		return nil, err
	}
	out.Result = *res
	return out, nil
}

// takeoverNote is the note a claim leaves when it takes over a task whose
// lease ran out: what sweep would have written.
func (e *Engine) takeoverNote(t *Task) string {
	return fmt.Sprintf("## Continuation Note (orch claim, %s)\n\n%s claimed this at %s and its lease ran out at %s (claim_timeout %s, renewed by orch heartbeat and orch respond); %s took it over. The work so far is on %s; read `git log %s` first.\n",
		taskfile.FormatTime(e.Now()), t.Task.ClaimedBy, taskfile.FormatTime(t.Task.ClaimedAt), taskfile.FormatTime(e.leaseEnd(t.Summary)),
		time.Duration(e.Config.ClaimTimeout), e.Actor, orDash(t.Task.Branch), orDash(t.Task.Branch))
}
