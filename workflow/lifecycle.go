package workflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// SubmitOptions describe a submission.
type SubmitOptions struct {
	PR   int
	Note string
}

// Submit hands the work in for review.
func (e *Engine) Submit(id string, opts SubmitOptions) (*Result, error) {
	if err := checkTexts(namedText{"the note (-m)", &opts.Note}); err != nil {
		return nil, err
	}
	return e.transition(id, ActionSubmit, func(t *Task) (*change, error) {
		if err := e.requireClaimant(&t.Task, "submit"); err != nil {
			return nil, err
		}
		if err := e.submitGuards(t); err != nil {
			return nil, err
		}
		// One PR per task (the rejection workflow): a retry pushes to the
		// task's PR, whose history the reviewer follows. Moving a task to
		// another PR is a person's explicit edit of pr_number.
		if opts.PR > 0 && t.Task.PRNumber > 0 && opts.PR != t.Task.PRNumber {
			next := Next{Advice: AdviseKeepPR, Task: t.Task.ID, Branch: t.Task.Branch, PR: t.Task.PRNumber}
			if e.IsHuman() {
				next = Next{Advice: AdviseMovePR, Task: t.Task.ID, Branch: t.Task.Branch, PR: t.Task.PRNumber, NewPR: opts.PR}
			}
			return nil, &RuleError{Rule: "one_pr_per_task", Msg: fmt.Sprintf("%s's PR is #%d (pr_number), not #%d: a task keeps one PR across its retries", t.Task.ID, t.Task.PRNumber, opts.PR), Next: next}
		}
		edits := []taskfile.Edit{
			taskfile.Set(taskfile.KeySubmittedBy, taskfile.String(t.Task.ClaimedBy)),
			taskfile.Set(taskfile.KeySubmittedAt, taskfile.Time(e.Now())),
		}
		if t.Task.ClaimedBy == "" {
			edits[0] = taskfile.Set(taskfile.KeySubmittedBy, taskfile.String(e.Actor))
		}
		if opts.PR > 0 {
			edits = append(edits, taskfile.Set(taskfile.KeyPRNumber, taskfile.Int(opts.PR)))
		}
		f, err := t.File.Apply(edits...)
		if err != nil {
			return nil, err
		}
		if opts.Note != "" {
			// The reviewer reads it in the prompt, a person in orch show
			// and on the board.
			if f, err = f.AddSection(fmt.Sprintf("## Submission Note (%s, %s)\n\n%s\n", e.Actor, taskfile.FormatTime(e.Now()), demote(opts.Note))); err != nil {
				return nil, err
			}
		}
		body := "Submitted for review."
		if opts.Note != "" {
			body += "\n\n" + opts.Note
		}
		pr := opts.PR
		if pr == 0 {
			pr = t.Task.PRNumber
		}
		tip, _ := e.Store.ReadRef("refs/heads/" + t.Task.Branch)
		return &change{file: f, to: taskfile.Provisional, body: body,
			data: &SubmitData{Note: opts.Note, PRNumber: pr, Branch: t.Task.Branch, BranchTip: hashText(tip)}}, nil
	})
}

func hashText(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// requireWork refuses a submission whose branch holds no commit beyond
// its base: there is nothing to review, and nothing would land.
func (e *Engine) requireWork(t *taskfile.Task) error {
	if e.Store == nil || t.Branch == "" {
		return nil
	}
	tip, err := e.Store.ReadRef("refs/heads/" + t.Branch)
	if err != nil || tip.IsZero() {
		return err
	}
	base := e.baseOf(t)
	baseTip, err := e.Store.ReadRef("refs/heads/" + base)
	if err != nil || baseTip.IsZero() {
		return nil // no base here to compare with (it was never fetched)
	}
	if tip == baseTip || e.Store.Repo.IsAncestor(tip, baseTip) {
		return &RuleError{Rule: "no_work", Msg: fmt.Sprintf("the branch %s holds no commit beyond %s: there is nothing to review", t.Branch, base),
			Next: Next{Advice: AdviseCommitWork, Task: t.ID, Branch: t.Branch}}
	}
	return nil
}

// submitGuards refuses the three commonest failures of review loops:
// handing in nothing, handing in work that does not answer the blocking
// issues of the last review, and handing in the same work again.
func (e *Engine) submitGuards(t *Task) error {
	if rounds := t.File.FeedbackRounds(); len(rounds) > 0 {
		var missing []string
		for _, s := range rounds[0].Sources {
			for _, is := range s.Issues {
				if is.Blocking && !is.Resolved && len(is.Responses) == 0 {
					missing = append(missing, is.ID)
				}
			}
		}
		if len(missing) > 0 {
			return &RuleError{Rule: "unanswered_blocking", Msg: fmt.Sprintf("blocking issues of the last review have no response: %s", strings.Join(missing, ", ")),
				Next: Next{Advice: AdviseAnswerBlocking, Task: t.Task.ID, Issue: missing[0]}}
		}
	}
	if err := e.requireWork(&t.Task); err != nil {
		return err
	}
	if t.Task.RejectedAt != "" && t.Task.Branch != "" {
		tip, err := e.Store.ReadRef("refs/heads/" + t.Task.Branch)
		if err != nil {
			return err
		}
		if tip.String() == t.Task.RejectedAt {
			return &RuleError{Rule: "unchanged_resubmit", Msg: fmt.Sprintf("the branch %s has no new commit since the last rejection (still %s)", t.Task.Branch, tip.String()[:7]),
				Next: Next{Advice: AdviseCommitFixes, Branch: t.Task.Branch}}
		}
	}
	return nil
}

// Approve accepts the work: provisional -> done. Lockouts are lifted: the
// task is finished.
func (e *Engine) Approve(id, notes string) (*Result, error) {
	if err := checkTexts(namedText{"the notes (-m)", &notes}); err != nil {
		return nil, err
	}
	return e.approve(id, VerdictApproved, notes, nil)
}

func (e *Engine) approve(id, verdict, notes string, extra func(t *Task, f *taskfile.File) (*taskfile.File, error)) (*Result, error) {
	return e.transition(id, ActionApprove, e.approveStep(verdict, notes, extra))
}

// approveStep is the approval's transition: review authority, no blocking
// issue left open, then done.
func (e *Engine) approveStep(verdict, notes string, extra func(t *Task, f *taskfile.File) (*taskfile.File, error)) func(t *Task) (*change, error) {
	return func(t *Task) (*change, error) {
		ground, err := e.checkReviewer(t, ActionApprove)
		if err != nil {
			return nil, err
		}
		if open := unresolvedBlocking(t.File); len(open) > 0 {
			return nil, &RuleError{Rule: "unresolved_blocking", Msg: fmt.Sprintf("blocking issues are unresolved: %s", strings.Join(open, ", ")),
				Next: Next{Advice: AdviseReviewInstead, Task: t.Task.ID}}
		}
		f := t.File
		if extra != nil {
			if f, err = extra(t, f); err != nil {
				return nil, err
			}
		}
		to, f, err := e.approved(&t.Task, f)
		if err != nil {
			return nil, err
		}
		body := fmt.Sprintf("%s by %s.", strings.ReplaceAll(verdict, "_", " "), e.Actor)
		if notes != "" {
			body += "\n\n" + notes
		}
		trailers := append(gitstore.Trailers{{Key: gitstore.TrailerVerdict, Value: verdict}}, unlockedTrailer(&t.Task)...)
		return &change{file: f, to: to, body: body,
			data:     &ApproveData{Verdict: verdict, Notes: notes, Author: t.Task.SubmittedBy, Rounds: t.Task.RejectionCount, Unlocked: t.Task.LockedOut},
			ground:   ground,
			trailers: trailers}, nil
	}
}

// approved is what every approval (orch approve, or a structured review
// with no blocking issue) does to the file besides its round, in one
// place: the claim goes, every lockout and the no-progress count are
// lifted (the work is accepted), and the task goes to done or, with
// landing on, to approved with what was approved (e.approval).
func (e *Engine) approved(t *taskfile.Task, f *taskfile.File) (taskfile.Queue, *taskfile.File, error) {
	edits := []taskfile.Edit{taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt), taskfile.Unset(taskfile.KeyNoProgress)}
	if len(t.LockedOut) > 0 {
		edits = append(edits, taskfile.Unset(taskfile.KeyLockedOut))
	}
	to, landing, err := e.approval(t)
	if err != nil {
		return "", nil, err
	}
	f, err = f.Apply(append(edits, landing...)...)
	return to, f, err
}

// unlockedTrailer names, for orch log, whom an approval let back in.
func unlockedTrailer(t *taskfile.Task) gitstore.Trailers {
	if len(t.LockedOut) == 0 {
		return nil
	}
	return gitstore.Trailers{{Key: gitstore.TrailerUnlocked, Value: strings.Join(t.LockedOut, ", ")}}
}

// unresolvedBlocking lists blocking issues not ticked as resolved.
func unresolvedBlocking(f *taskfile.File) []string {
	var out []string
	for _, is := range f.AllIssues() {
		if is.Blocking && !is.Resolved {
			out = append(out, is.ID)
		}
	}
	return out
}

// Pause stops work before it is finished; the note goes into the next
// prompt.
func (e *Engine) Pause(id, note string) (*Result, error) {
	if err := checkTexts(namedText{"the note (-m)", &note}); err != nil {
		return nil, err
	}
	note = strings.TrimSpace(note)
	if note == "" {
		return nil, &UsageError{Msg: "a pause needs a note for whoever continues", Next: Next{Advice: AdvisePauseText, Task: id}}
	}
	return e.transition(id, ActionPause, func(t *Task) (*change, error) {
		if err := e.requireClaimant(&t.Task, "pause"); err != nil {
			return nil, err
		}
		f, err := t.File.AddSection(fmt.Sprintf("## Continuation Note (%s, %s)\n\n%s\n", e.Actor, taskfile.FormatTime(e.Now()), demote(note)))
		if err != nil {
			return nil, err
		}
		if f, err = f.Apply(taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)); err != nil {
			return nil, err
		}
		return &change{file: f, to: taskfile.NeedsContinuation, body: "Paused by " + e.Actor + ": " + firstSentence(note), data: &PauseData{Note: note, Branch: t.Task.Branch}}, nil
	})
}

// demote keeps free text inside the section it is written to (see
// taskfile.SafeText).
func demote(s string) string { return taskfile.SafeText(s) }

// Fail gives the task up.
func (e *Engine) Fail(id, reason string) (*Result, error) {
	if err := checkTexts(namedText{"the reason (-m)", &reason}); err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return nil, &UsageError{Msg: "say why the task failed", Next: Next{Advice: AdviseFailText, Task: id}}
	}
	return e.transition(id, ActionFail, func(t *Task) (*change, error) {
		// An agent may give up its own claim; failing any other task (failed
		// is final) is a human's decision.
		if t.Task.Queue != taskfile.Claimed || t.Task.ClaimedBy != e.Actor {
			if err := e.requireHuman("fail", t.Task.ID, "failing a task you have not claimed"); err != nil {
				return nil, err
			}
		}
		f, err := t.File.AddSection(fmt.Sprintf("## Failed (%s, %s)\n\n%s\n", e.Actor, taskfile.FormatTime(e.Now()), demote(reason)))
		if err != nil {
			return nil, err
		}
		if f, err = f.Apply(taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)); err != nil {
			return nil, err
		}
		return &change{file: f, to: taskfile.Failed, body: "Failed: " + firstSentence(reason), data: &FailData{Reason: reason}}, nil
	})
}

// Reopen sends a failed task back to incoming: failed is final for agents,
// and only a person undoes it. The branch, the feedback and the counts are
// kept; the reason goes into the task above everything else, for whoever
// claims it next.
func (e *Engine) Reopen(id, reason string) (*Result, error) {
	if err := checkTexts(namedText{"the reason (-m or -F)", &reason}); err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return nil, &UsageError{Msg: "say why the task is reopened", Next: Next{Advice: AdviseReopenText, Task: id}}
	}
	if err := e.requireHuman("reopen", id, "reopening a finished task"); err != nil {
		return nil, err
	}
	return e.transition(id, ActionReopen, func(t *Task) (*change, error) {
		f, err := t.File.AddSection(fmt.Sprintf("## Reopened (%s, %s)\n\n%s\n", e.Actor, taskfile.FormatTime(e.Now()), demote(reason)))
		if err != nil {
			return nil, err
		}
		return &change{file: f, to: taskfile.Incoming, body: "Reopened by " + e.Actor + ": " + firstSentence(reason), data: &ReopenData{Reason: reason}}, nil
	})
}

// Requeue puts the task back in incoming: the claim is cleared; the branch,
// the feedback and the counts are kept. With to, only that agent may claim
// it.
func (e *Engine) Requeue(id, to string) (*Result, error) {
	if to != "" && !taskfile.ValidName(to) {
		return nil, &UsageError{Msg: fmt.Sprintf("%q is not a valid agent name", printable(to))}
	}
	if err := e.requireHuman("requeue", id, "requeueing a task"); err != nil {
		return nil, err
	}
	return e.transition(id, ActionRequeue, func(t *Task) (*change, error) {
		if to != "" && slices.Contains(t.Task.LockedOut, to) {
			return nil, &RuleError{Rule: "lockout", Msg: fmt.Sprintf("%s is locked out of %s", to, id), Next: Next{Advice: AdviseUnlockFirst, Task: id, Agent: to}}
		}
		edits := []taskfile.Edit{taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)}
		if to != "" {
			edits = append(edits, taskfile.Set(taskfile.KeyAssignedTo, taskfile.String(to)))
		}
		f, err := t.File.Apply(edits...)
		if err != nil {
			return nil, err
		}
		body := "Requeued by " + e.Actor + "."
		if to != "" {
			body = fmt.Sprintf("Requeued by %s for %s.", e.Actor, to)
		}
		return &change{file: f, to: taskfile.Incoming, body: body, data: &RequeueData{To: to}}, nil
	})
}

// Archive moves a finished task's file to the archive now, whatever
// archive_after says (archive.go).
func (e *Engine) Archive(id string) (*Result, error) {
	if err := e.requireHuman("archive", id, "archiving a task"); err != nil {
		return nil, err
	}
	return e.transition(id, ActionArchive, func(t *Task) (*change, error) {
		mv, err := archiveMove(e.Store.Snapshot(), t.Summary)
		if err != nil {
			return nil, err
		}
		return &change{extra: mv, body: "Moved " + t.Path + " to " + mv[1].Path + ": orch show, orch log and orch list --all still read it; orch reopen brings it back.",
			data: &ArchiveData{Path: t.Path, Queue: t.Task.Queue}}, nil
	})
}
