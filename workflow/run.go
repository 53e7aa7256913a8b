package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
)

// What orch run (the coordinator, docs/design.md §7) asks of the rules beyond the
// verbs agents use: review claims, so that two reviewers never review one
// submission; fencing, so that an agent of an older attempt (a zombie of
// an expired lease or a killed coordinator) cannot act on a task another
// agent holds now; and the record of a run that ended without a
// transition of its agent (a pause with a note, a crash count, an
// escalation, a released review claim).

// Fence is the run an agent process belongs to: ORCH_TASK, ORCH_ATTEMPT
// and ORCH_ROLE as orch run sets them. A verb on that task is refused
// unless the task is still that run's.
type Fence struct {
	Task     string
	Attempt  int
	Reviewer bool
}

// checkFence refuses a transition of the fenced task that the run does not
// hold any more.
func (e *Engine) checkFence(t *taskfile.Task) error {
	f := e.Fence
	if f == nil {
		return e.checkUnfenced(t)
	}
	if f.Task != t.ID || f.Attempt <= 0 {
		return nil
	}
	var held bool
	var now string
	if f.Reviewer {
		held = t.Queue == taskfile.Provisional && t.ReviewClaimedBy == e.Actor && t.ReviewAttempts == f.Attempt
		now = fmt.Sprintf("review claim %d", t.ReviewAttempts)
		if t.ReviewClaimedBy != "" {
			now += " held by " + t.ReviewClaimedBy
		}
	} else {
		held = t.Queue == taskfile.Claimed && t.ClaimedBy == e.Actor && t.Attempts == f.Attempt
		now = fmt.Sprintf("attempt %d", t.Attempts)
		if t.Queue == taskfile.Claimed {
			now += " claimed by " + t.ClaimedBy
		}
	}
	if held {
		return nil
	}
	return &RuleError{Rule: "stale_attempt",
		Msg:  fmt.Sprintf("%s: this process belongs to attempt %d (ORCH_ATTEMPT), and the task is %s, at %s: that run has ended", t.ID, f.Attempt, t.Queue, now),
		Next: Next{Advice: AdviseRunEnded, Task: t.ID}}
}

// checkUnfenced applies the fence to a process without one: an agent
// process that names the slot of orch run holding t (its claim or review
// claim) but carries no ORCH_ATTEMPT has left its run's environment on
// purpose (a zombie of an older attempt that unset it, say). Inside the
// task's worktree, where only the run's own process works, the verb is
// refused; elsewhere it goes ahead (a person may work as a slot by hand),
// and is recorded as unfenced, for orch inbox: the evidence a deliberate
// act must leave.
func (e *Engine) checkUnfenced(t *taskfile.Task) error {
	if e.Signals.EnvAgent == "" || e.Actor != e.Signals.EnvAgent || !e.Config.IsRunSlot(e.Actor) {
		return nil
	}
	var held string
	switch {
	case t.Queue == taskfile.Claimed && t.ClaimedBy == e.Actor:
		held = fmt.Sprintf("attempt %d", t.Attempts)
	case t.Queue == taskfile.Provisional && t.ReviewClaimedBy == e.Actor:
		held = fmt.Sprintf("review %d", t.ReviewAttempts)
	default:
		return nil
	}
	repo := e.Store.Repo
	inWorktree := t.Branch != "" && repo.WorkTree != "" && repo.WorkTree != repo.MainWorkTree && repo.HeadBranch() == t.Branch
	if inWorktree {
		return e.refuseAuthority(e.Verb, t.ID, "unfenced",
			fmt.Sprintf("%s: this process says it is %s, which holds the task under orch run (%s), but it carries no ORCH_ATTEMPT: inside the task's worktree only that run's own process acts on it", t.ID, e.Actor, held),
			Next{Advice: AdviseRunEnded, Task: t.ID})
	}
	e.recordEvidence(e.Verb, t.ID, "unfenced", fmt.Sprintf("%s ran orch %s on %s unfenced", e.Actor, e.Verb, t.ID),
		fmt.Sprintf("%s ran orch %s on %s (%s under orch run) from a process without ORCH_ATTEMPT, outside the task's worktree: allowed, and recorded as unfenced", e.Actor, e.Verb, t.ID, held),
		"It went ahead. If no person did this by hand, a process of the agent left its run's environment: read orch log "+t.ID+" and the run's logs (orch logs "+t.ID+").")
	return nil
}

// reviewLeaseEnd is when a review claim runs out: claim_timeout after it
// began or was last renewed.
func (e *Engine) reviewLeaseEnd(t *taskfile.Task) time.Time {
	return t.ReviewClaimedAt.Add(time.Duration(e.Config.ClaimTimeout))
}

// reviewClaimed reports whether anyone holds a live review claim on t: a
// claim is a run's, not a name's (two coordinators may each have a slot
// rev-1), so a reviewer never takes a live claim over, even one held under
// its own name; the run that holds it renews or releases it.
func (e *Engine) reviewClaimed(t *taskfile.Task) bool {
	return t.ReviewClaimedBy != "" && e.Now().Before(e.reviewLeaseEnd(t))
}

// reviewClaimedByOther reports whether another reviewer holds a live review
// claim on t.
func (e *Engine) reviewClaimedByOther(t *taskfile.Task) bool {
	return t.ReviewClaimedBy != "" && t.ReviewClaimedBy != e.Actor && e.Now().Before(e.reviewLeaseEnd(t))
}

// mayReview reports whether the actor may review t under review.reviewers,
// its scope and the rule that nobody reviews their own work (checkReviewer
// without recording a refusal: a search, not an attempt).
func (e *Engine) mayReview(t *taskfile.Task) bool {
	if !e.IsHuman() {
		if !e.Config.IsReviewer(e.Actor) {
			return false
		}
		if r := e.Config.ReviewerEntry(e.Actor); r != nil {
			if _, ok := r.Covers(roleOf(t, e.Config), t.Labels); !ok {
				return false
			}
		}
	}
	return !slices.Contains(workers(t), e.Actor)
}

// ReviewClaim is a review claim: the submission a reviewer holds.
type ReviewClaim struct {
	Result
	Attempt int // the task's review claims so far: the reviewer's ORCH_ATTEMPT
}

// ClaimReview takes the next submission the actor may review, in claim
// order (priority, then age), and holds it for the actor as a lease of
// claim_timeout; id names one. skip, when set, passes over the tasks it
// names (ones this reviewer cannot start just now). Nil when there is none.
func (e *Engine) ClaimReview(id string, skip func(id string) bool) (*ReviewClaim, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	var candidates []*gitstore.Summary
	if id != "" {
		s, err := e.Find(id)
		if err != nil {
			return nil, err
		}
		candidates = []*gitstore.Summary{s}
	} else {
		e.Store.EachSummaryIn(map[taskfile.Queue]bool{taskfile.Provisional: true}, func(s *gitstore.Summary) {
			candidates = append(candidates, s)
		})
		sortClaimOrder(candidates, false)
	}
	for _, s := range candidates {
		t := &s.Task
		if t.Queue != taskfile.Provisional || e.reviewClaimed(t) || !e.mayReview(t) || e.editable(s) != nil || skip != nil && skip(t.ID) || e.needsCheck(t) {
			continue
		}
		out := &ReviewClaim{}
		res, err := e.transitionAny(t.ID, ActionClaimReview, func(t *Task) (*change, error) {
			if t.Task.Queue != taskfile.Provisional || e.reviewClaimed(&t.Task) || !e.mayReview(&t.Task) {
				return nil, &RuleError{Rule: "review_claimed", Msg: fmt.Sprintf("%s cannot be claimed for review now (it is %s, review claimed by %s)", t.Task.ID, t.Task.Queue, orDash(t.Task.ReviewClaimedBy))}
			}
			out.Attempt = t.Task.ReviewAttempts + 1
			f, err := t.File.Apply(
				taskfile.Set(taskfile.KeyReviewBy, taskfile.String(e.Actor)),
				taskfile.Set(taskfile.KeyReviewAt, taskfile.Time(e.Now())),
				taskfile.Set(taskfile.KeyReviewCount, taskfile.Int(out.Attempt)))
			if err != nil {
				return nil, err
			}
			return &change{file: f, body: fmt.Sprintf("Review claimed by %s (review %d).", e.Actor, out.Attempt),
				data: &ClaimReviewData{Attempt: out.Attempt, LeaseUntil: taskfile.FormatTime(e.reviewLeaseEnd(&f.Task))}}, nil
		})
		if err != nil {
			return nil, err
		}
		out.Result = *res
		return out, nil
	}
	return nil, nil
}

// RunEnd is how a run of orch run ended without a transition of its agent.
type RunEnd struct {
	Task     string
	Agent    string // the slot
	Attempt  int    // the run's ORCH_ATTEMPT
	Reviewer bool
	// Reason: crash (an exit), timeout, stall, rate_limit, stopped (the
	// lead stopped orch run), orphaned (its coordinator died).
	Reason string
	// Note says what happened, for the next agent: the exit status, the
	// duration, the log's last lines.
	Note string
	// Crash counts toward run.max_crashes; MaxCrashes in a row escalate.
	Crash      bool
	MaxCrashes int
	Logs       []string
}

// RunLostError says the task is no longer the run's: the coordinator
// leaves it alone.
type RunLostError struct{ Msg string }

func (e *RunLostError) Error() string { return e.Msg }

// EndRun records a run that ended without a transition of its agent, as
// the coordinator (the actor, a human: docs/design.md §7.2, "Who acts"): an
// implementer's task is paused with the note (or escalated after
// run.max_crashes crashes in a row), a reviewer's claim released.
func (e *Engine) EndRun(end RunEnd) (*Result, error) {
	res, err := e.endRun(end)
	var illegal *IllegalTransitionError
	if errors.As(err, &illegal) {
		// The task moved on before the ending was recorded (the agent
		// submitted, and its coordinator died before it heard): the run
		// is not the task's any more.
		return nil, &RunLostError{Msg: fmt.Sprintf("%s is not %s's run %d any more: %v", end.Task, end.Agent, end.Attempt, err)}
	}
	return res, err
}

func (e *Engine) endRun(end RunEnd) (*Result, error) {
	if err := checkTexts(namedText{"the note", &end.Note}); err != nil {
		return nil, err
	}
	if end.Reviewer && end.Reason == "unstartable" {
		// No reviewer could start on it either (its branch is gone, say):
		// a person must look, not the next reviewer slot for ever.
		return e.transition(end.Task, ActionEscalate, func(t *Task) (*change, error) {
			if t.Task.Queue != taskfile.Provisional || t.Task.ReviewClaimedBy != end.Agent || t.Task.ReviewAttempts != end.Attempt {
				return nil, &RunLostError{fmt.Sprintf("%s is not %s's review %d any more", end.Task, end.Agent, end.Attempt)}
			}
			why := fmt.Sprintf("orch run could not start a review of it: %s", firstSentence(end.Note))
			msg := e.escalationMessage(&t.Task, t.Path, "unreviewable", why)
			return &change{file: t.File, to: taskfile.Escalated, body: "Escalated by orch run: " + why, extra: []gitstore.Change{msg},
				data:     &EscalateData{Reason: "unreviewable", Text: end.Note, RunData: runData(end, 0)},
				trailers: runTrailers(end), escalation: &Escalation{"unreviewable", why}}, nil
		})
	}
	if end.Reviewer {
		return e.endReview(end)
	}
	var res *Result
	var err error
	lost := func(t *Task) error {
		if t.Task.Queue != taskfile.Claimed || t.Task.ClaimedBy != end.Agent || t.Task.Attempts != end.Attempt {
			return &RunLostError{fmt.Sprintf("%s is not %s's attempt %d any more (it is %s, attempt %d)", end.Task, end.Agent, end.Attempt, t.Task.Queue, t.Task.Attempts)}
		}
		return nil
	}
	crashes := 0
	if end.Crash {
		// Read the count first: whether the run escalates decides which
		// transition it is.
		s := e.Store.SummaryByID(end.Task)
		if s == nil {
			return nil, &NotFoundError{What: "task", Ref: end.Task, Next: Next{Advice: AdviseListTasks}}
		}
		crashes = s.Task.Crashes + 1
	}
	if reason, why := crashEscalation(crashes, end); reason != "" {
		res, err = e.transition(end.Task, ActionEscalate, func(t *Task) (*change, error) {
			if err := lost(t); err != nil {
				return nil, err
			}
			f, err := t.File.AddSection(runNote(e, end))
			if err != nil {
				return nil, err
			}
			if f, err = f.Apply(taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt), taskfile.Set(taskfile.KeyCrashes, taskfile.Int(crashes))); err != nil {
				return nil, err
			}
			msg := e.escalationMessage(&f.Task, t.Path, reason, why)
			return &change{file: f, to: taskfile.Escalated, body: "Escalated by orch run: " + why, extra: []gitstore.Change{msg},
				data:     &EscalateData{Reason: reason, Text: why, RunData: runData(end, crashes)},
				trailers: runTrailers(end), escalation: &Escalation{reason, why}}, nil
		})
		return res, err
	}
	return e.transition(end.Task, ActionPause, func(t *Task) (*change, error) {
		if err := lost(t); err != nil {
			return nil, err
		}
		f, err := t.File.AddSection(runNote(e, end))
		if err != nil {
			return nil, err
		}
		edits := []taskfile.Edit{taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)}
		if end.Crash {
			edits = append(edits, taskfile.Set(taskfile.KeyCrashes, taskfile.Int(crashes)))
		}
		if f, err = f.Apply(edits...); err != nil {
			return nil, err
		}
		return &change{file: f, to: taskfile.NeedsContinuation, body: fmt.Sprintf("Paused by orch run after %s's attempt %d ended (%s).", end.Agent, end.Attempt, end.Reason),
			data:     &PauseData{Note: end.Note, Branch: t.Task.Branch, RunData: runData(end, crashes)},
			trailers: runTrailers(end)}, nil
	})
}

// endReview records a review run that ended without a verdict: the review
// claim is released, and a crash (an exit, a timeout, a stall) counts in
// crashes as an implementer's does (the submit cleared them, a verdict
// clears them again): run.max_crashes in a row escalate the task, so that a
// reviewer that always crashes is not paid to run for ever.
func (e *Engine) endReview(end RunEnd) (*Result, error) {
	lost := func(t *Task) error {
		if t.Task.Queue != taskfile.Provisional || t.Task.ReviewClaimedBy != end.Agent || t.Task.ReviewAttempts != end.Attempt {
			return &RunLostError{fmt.Sprintf("%s is not %s's review %d any more", end.Task, end.Agent, end.Attempt)}
		}
		return nil
	}
	crashes := 0
	if end.Crash {
		s := e.Store.SummaryByID(end.Task)
		if s == nil {
			return nil, &NotFoundError{What: "task", Ref: end.Task, Next: Next{Advice: AdviseListTasks}}
		}
		crashes = s.Task.Crashes + 1
	}
	if end.Crash && end.MaxCrashes > 0 && crashes >= end.MaxCrashes {
		return e.transition(end.Task, ActionEscalate, func(t *Task) (*change, error) {
			if err := lost(t); err != nil {
				return nil, err
			}
			why := fmt.Sprintf("%d review runs in a row ended without a verdict (run.max_crashes is %d); the last was %s's review %d (%s).",
				crashes, end.MaxCrashes, end.Agent, end.Attempt, end.Reason)
			if len(end.Logs) > 0 {
				why += " Logs: " + strings.Join(end.Logs, ", ") + " (orch logs " + end.Task + ")."
			}
			f, err := t.File.Apply(taskfile.Set(taskfile.KeyCrashes, taskfile.Int(crashes)))
			if err != nil {
				return nil, err
			}
			msg := e.escalationMessage(&f.Task, t.Path, "review_crashes", why)
			return &change{file: f, to: taskfile.Escalated, body: "Escalated by orch run: " + why, extra: []gitstore.Change{msg},
				data:     &EscalateData{Reason: "review_crashes", Text: why, RunData: runData(end, crashes)},
				trailers: runTrailers(end), escalation: &Escalation{"review_crashes", why}}, nil
		})
	}
	return e.transitionAny(end.Task, ActionReleaseReview, func(t *Task) (*change, error) {
		if err := lost(t); err != nil {
			return nil, err
		}
		edits := []taskfile.Edit{taskfile.Unset(taskfile.KeyReviewBy), taskfile.Unset(taskfile.KeyReviewAt)}
		if end.Crash {
			edits = append(edits, taskfile.Set(taskfile.KeyCrashes, taskfile.Int(crashes)))
		}
		f, err := t.File.Apply(edits...)
		if err != nil {
			return nil, err
		}
		return &change{file: f, body: fmt.Sprintf("Review claim of %s released by orch run (%s): %s", end.Agent, end.Reason, firstSentence(end.Note)),
			data:     &ReleaseReviewData{Note: end.Note, RunData: runData(end, crashes)},
			trailers: runTrailers(end)}, nil
	})
}

// runData is the event data of a step orch run takes for a run.
func runData(end RunEnd, crashes int) *RunData {
	return &RunData{Via: "orch run", Agent: end.Agent, Attempt: end.Attempt, End: end.Reason, Crashes: crashes, Logs: end.Logs}
}

// runTrailers say, in the commit, that orch run took the step and why.
func runTrailers(end RunEnd) gitstore.Trailers {
	return gitstore.Trailers{{Key: gitstore.TrailerVia, Value: "orch run"}, {Key: gitstore.TrailerRunEnd, Value: end.Reason}}
}

// runNote is the continuation note a run without a transition leaves in
// the task, where the next agent's prompt shows it.
func runNote(e *Engine, end RunEnd) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Continuation Note (orch run, %s)\n\n", taskfile.FormatTime(e.Now()))
	fmt.Fprintf(&b, "%s's attempt %d ended without a transition (%s). %s\n", end.Agent, end.Attempt, end.Reason, demote(end.Note))
	if len(end.Logs) > 0 {
		fmt.Fprintf(&b, "\nLog: %s (orch logs %s)\n", end.Logs[len(end.Logs)-1], end.Task)
	}
	return b.String()
}

// StartRun is what orch run starts from: the run: section of config.yaml
// as the branch has it now (a later change takes effect at the next
// start). Starting agents is a human's decision (docs/design.md §5.2): an agent is
// refused.
func (e *Engine) StartRun() (*config.Run, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	if err := e.requireHuman("run", "", "starting agents (orch run)"); err != nil {
		return nil, err
	}
	if e.ConfigErr != nil {
		return nil, e.ConfigErr
	}
	if e.Reconciled != nil {
		// A hand edit of config.yaml that does not parse: orch run would
		// start what the branch has, which is not what the person meant
		// (a typo'd agents: would start no one, and say so as if that
		// were the config). Its mistake is the answer, said once.
		if err, ok := e.Reconciled.Broken[gitstore.ConfigFile]; ok {
			delete(e.Reconciled.Broken, gitstore.ConfigFile)
			return nil, err
		}
	}
	if err := e.pendingPolicyEdit(); err != nil {
		return nil, err
	}
	r := e.Config.Run
	return &r, nil
}

// pendingPolicyEdit refuses to start agents while a policy file in the
// view differs from the branch (held by an engine opened with
// Options.HoldPolicyEdits): what runs must be what a person committed, not
// an edit an agent may have made in the main worktree. The refusal shows
// the edit and how a person commits it on purpose.
func (e *Engine) pendingPolicyEdit() error {
	held := e.HeldPolicyEdits()
	if len(held) == 0 {
		return nil
	}
	var b strings.Builder
	for _, p := range held {
		fmt.Fprintf(&b, "\n--- %s (the state branch)\n+++ %s/%s (the view)\n", p, gitstore.ViewDirName, p)
		branch, _ := e.Store.Snapshot().Read(p)
		mine, err := e.Store.ReadViewFile(p)
		if err != nil {
			fmt.Fprintf(&b, "(cannot read it: %v)\n", err)
			continue
		}
		b.WriteString(text.Visible(LineDiff(string(branch), string(mine))))
	}
	first := held[0]
	return &RuleError{Rule: "policy_edit_pending",
		Msg: fmt.Sprintf("%s/%s has a change that is not committed, and orch run starts only what the state branch holds: an edit of a policy file may come from an agent, so orch run never commits one, and will not start beside one%s",
			gitstore.ViewDirName, first, strings.TrimRight(b.String(), "\n")),
		Next: Next{Advice: AdvisePolicyEditPending, Path: first, Branch: strings.TrimPrefix(e.Store.Ref, "refs/heads/")}}
}

// HeldPolicyEdits are the policy files whose hand edits the reconcile kept
// out of the branch, sorted.
func (e *Engine) HeldPolicyEdits() []string {
	if e.Reconciled == nil {
		return nil
	}
	var out []string
	for p := range e.Reconciled.Held {
		if isPolicyFile(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// RecordHeldEdit records, as agent's, that a policy file was found changed
// in the view when agent's run of task (attempt) ended: orch cannot prove
// who wrote it, but the run that had just ended is the evidence a person
// needs, in the event log and in orch inbox. The edit itself stays in the
// view, uncommitted.
func (e *Engine) RecordHeldEdit(path, agent, task string, attempt int) {
	msg := fmt.Sprintf("%s/%s was found changed in the view when %s's run of %s (attempt %d) under orch run ended; policy files are a human's, so it is not committed, and orch run will not start again until a person commits it (orch check) or undoes it",
		gitstore.ViewDirName, path, agent, task, attempt)
	actor := e.Actor
	e.Actor = agent
	defer func() { e.Actor = actor }()
	e.recordEvidence("edit "+path, task, "policy_file", fmt.Sprintf("%s's run left a change of %s/%s", agent, gitstore.ViewDirName, path), msg,
		"The change is in the view, not on the state branch: nothing runs from it. Read it (orch run shows it), then commit it yourself if you mean it (orch check), or undo it.")
}

// LineDiff shows how b differs from a, a line at a time: "-" a line only a
// has, "+" one only b has, in order (a longest common subsequence), with
// the unchanged lines left out. Policy files are short: the quadratic table
// is small.
func LineDiff(a, b string) string {
	al := strings.Split(strings.TrimSuffix(a, "\n"), "\n")
	bl := strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	if len(al)*len(bl) > 4<<20 {
		return "(too long to show: compare the two files)\n"
	}
	lcs := make([][]int, len(al)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(bl)+1)
	}
	for i := len(al) - 1; i >= 0; i-- {
		for j := len(bl) - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(al) || j < len(bl) {
		switch {
		case i < len(al) && j < len(bl) && al[i] == bl[j]:
			i, j = i+1, j+1
		case j < len(bl) && (i == len(al) || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("+" + bl[j] + "\n")
			j++
		default:
			out.WriteString("-" + al[i] + "\n")
			i++
		}
	}
	return out.String()
}

// RunClaim is a claim (or review claim) an actor made on this clone.
type RunClaim struct {
	Task    string
	Attempt int
}

// ClaimsHere lists the tasks actor holds (its claims, or with reviewer its
// review claims) that it took at since or later through this clone: the
// claim's event is in this clone's event log. orch run uses it to give
// back the claims a coordinator made just before it died, before it had
// recorded them (a slot's name may hold claims on other clones too, which
// this never lists).
func (e *Engine) ClaimsHere(actor string, reviewer bool, since time.Time) []RunClaim {
	action := ActionClaim
	if reviewer {
		action = ActionClaimReview
	}
	var out []RunClaim
	// Claim times are kept to the millisecond.
	since = since.Truncate(time.Millisecond)
	e.Store.EachSummaryIn(map[taskfile.Queue]bool{taskfile.Claimed: !reviewer, taskfile.Provisional: reviewer}, func(s *gitstore.Summary) {
		t := &s.Task
		switch {
		case !reviewer && t.Queue == taskfile.Claimed && t.ClaimedBy == actor && !t.ClaimedAt.Before(since):
			out = append(out, RunClaim{t.ID, t.Attempts})
		case reviewer && t.Queue == taskfile.Provisional && t.ReviewClaimedBy == actor && !t.ReviewClaimedAt.Before(since):
			out = append(out, RunClaim{t.ID, t.ReviewAttempts})
		}
	})
	if len(out) == 0 {
		return nil
	}
	mine := map[string]bool{}
	prefix := gitstore.EventsDir + "/"
	snap := e.Store.Snapshot()
	for _, fe := range snap.Files(gitstore.EventsDir) {
		name := strings.TrimPrefix(fe.Path, prefix)
		if !strings.Contains(name, "-"+e.cloneID()) || name < since.UTC().Format("2006-01-02") {
			continue
		}
		data, err := snap.ReadBlob(fe.Blob)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			var ev scannedEvent
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Action == action && ev.Actor == actor {
				mine[ev.Task] = true
			}
		}
	}
	return slices.DeleteFunc(out, func(c RunClaim) bool { return !mine[c.Task] })
}

// RecordRun records one run of orch run on the state branch: an event of
// its own, the task file unchanged, so that every clone's orch show, orch
// stats and board see what each attempt spent and how it ended.
func (e *Engine) RecordRun(task string, d *RunRecordData) error {
	if err := e.RequireInit(); err != nil {
		return err
	}
	d.Words = text.Clip(text.Visible(d.Words), 300)
	_, err := e.Store.Update(func(snap *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		ev := Event{Time: taskfile.FormatTime(e.Now()), Task: task, Action: ActionRun, Actor: e.Actor}
		c, err := e.eventChange(snap, ev, d)
		if err != nil {
			return nil, err
		}
		body := fmt.Sprintf("Run of %s (%s %d) ended: exit %d after %s", d.Agent, d.Role, d.Attempt, d.Exit, time.Duration(d.DurationMS)*time.Millisecond)
		if d.Words != "" {
			body += "; " + d.Words
		}
		body += fmt.Sprintf(". Tokens: %d in, %d out; cost $%.4f.", d.Input, d.Output, d.CostUSD)
		return &gitstore.CommitRequest{Changes: []gitstore.Change{c},
			Message: commitMessage(task, ActionRun, "", "", e.Actor, body, gitstore.Trailers{{Key: gitstore.TrailerVia, Value: "orch run"}}),
			Author:  e.Signature()}, nil
	})
	return err
}

// SlotStopped records that a slot of orch run stopped (its setup cannot
// run), with a message for orch inbox: the lead's to fix, not a task's.
func (e *Engine) SlotStopped(slot string, reviewer bool, why string) error {
	if err := e.RequireInit(); err != nil {
		return err
	}
	why = text.Clip(text.Visible(why), 1000)
	_, err := e.Store.Update(func(snap *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		ev := Event{Time: taskfile.FormatTime(e.Now()), Action: ActionSlotStopped, Actor: e.Actor}
		c, err := e.eventChange(snap, ev, &SlotStoppedData{Slot: slot, Reviewer: reviewer, Why: why})
		if err != nil {
			return nil, err
		}
		now := e.Now().UTC()
		// The slot in the name: two slots stop in the same millisecond
		// (both commands missing), and neither message may replace the other.
		name := fmt.Sprintf("%s/%s-slot-%s-%s.md", gitstore.MessagesDir, now.Format("20060102T150405.000Z"), fileWord(slot), e.cloneID())
		msg := fmt.Sprintf("---\nreason: slot\ncreated: %s\nslot: %q\n---\n# orch run's slot %s stopped\n\n## Why\n\n%s\n\nIts tasks went back to the queue, with no crash counted. Fix the slot's setup (its cmd or harness in run:, the CLI's login or key, run.allow), then start orch run again.\n",
			taskfile.FormatTime(now), slot, slot, why)
		return &gitstore.CommitRequest{Changes: []gitstore.Change{c, {Path: name, Data: []byte(msg)}},
			Message: commitMessage("-", ActionSlotStopped, "", "", e.Actor, fmt.Sprintf("Slot %s stopped: %s", slot, why), gitstore.Trailers{{Key: gitstore.TrailerVia, Value: "orch run"}}),
			Author:  e.Signature()}, nil
	})
	return err
}

// fileWord is name with what a file name should not hold (space, @, +,
// letters beyond ASCII) as "-".
func fileWord(name string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r == '.' || r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '-'
	}, name)
}

// TaskRun is one run of orch run on a task, as its event records it.
type TaskRun struct {
	Time time.Time
	RunRecordData
}

// TaskRuns lists the runs of orch run on task t, oldest first, from the
// event log: only the files of the days the task lived are read (its
// creation to its end), so the cost follows the task's age, not the log's.
func (e *Engine) TaskRuns(t *taskfile.Task) []TaskRun {
	from := t.Created.UTC().Format("2006-01-02")
	to := "9999"
	if !t.FinishedAt.IsZero() {
		to = t.FinishedAt.UTC().Format("2006-01-02") + "~"
	}
	snap := e.Store.Snapshot()
	prefix := gitstore.EventsDir + "/"
	needle := []byte(`"task":"` + t.ID + `"`)
	var out []TaskRun
	for _, fe := range snap.Files(gitstore.EventsDir) {
		name := strings.TrimPrefix(fe.Path, prefix)
		if len(name) < 10 || name[:10] < from || name > to {
			continue
		}
		data, err := snap.ReadBlob(fe.Blob)
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if !bytes.Contains(line, needle) || !bytes.Contains(line, []byte(`"action":"run"`)) {
				continue
			}
			var ev Event
			if json.Unmarshal(line, &ev) != nil || ev.Task != t.ID || ev.Action != ActionRun {
				continue
			}
			var d RunRecordData
			if json.Unmarshal(ev.Data, &d) != nil {
				continue
			}
			at, _ := taskfile.ParseTime(ev.Time)
			out = append(out, TaskRun{Time: at, RunRecordData: d})
		}
	}
	slices.SortStableFunc(out, func(a, b TaskRun) int { return a.Time.Compare(b.Time) })
	return out
}
