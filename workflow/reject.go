package workflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
)

// rejection is what reject (and review with blocking issues) adds to a task.
type rejection struct {
	Sources []taskfile.Source // at least one
	Verdict string
	// Data is the event's data when it records more than the rejection: a
	// *RejectData with a GitHub review's fields, or a structured review's
	// *ReviewData. rejectChange fills in the rejection.
	Data    EventData
	Summary string          // commit message body
	Rule    string          // "reject" or "review"
	Edits   []taskfile.Edit // further frontmatter edits (github_reviews)
	// NoProgress is the structured review's count of rounds in a row that
	// resolved no blocking issue (0 for a plain rejection).
	NoProgress int
}

// Reject sends the work back with feedback.
func (e *Engine) Reject(id, text string) (*Result, error) {
	if err := checkTexts(namedText{"the feedback (-m or -F)", &text}); err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, &UsageError{Msg: "a rejection needs feedback", Next: Next{Advice: AdviseRejectText, Task: id}}
	}
	src := taskfile.Source{From: e.Actor + " via orch reject", Time: e.Now(), Text: text}
	return e.reject(id, ActionReject, rejection{Sources: []taskfile.Source{src}, Summary: firstSentence(text)})
}

// AmendRejection adds a reviewer's note to the newest rejection round
// without rejecting again (orch reject --amend): the rejection workflow's
// lead distills scattered PR comments that orch pr import brought in into a
// note the agent can act on. The count, the lockout and the queue stay; the
// task must not have been submitted since (the next review is the place
// then).
func (e *Engine) AmendRejection(id, text string) (*Result, error) {
	if err := checkTexts(namedText{"the note (-m or -F)", &text}); err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, &UsageError{Msg: "a note needs text", Next: Next{Advice: AdviseAmendText, Task: id}}
	}
	return e.transitionAny(id, ActionAmendRejection, func(t *Task) (*change, error) {
		switch t.Task.Queue {
		case taskfile.Rejected, taskfile.Claimed, taskfile.NeedsContinuation, taskfile.Escalated:
		default:
			return nil, &RuleError{Rule: "amend", Msg: fmt.Sprintf("%s is %s: only a rejected task that was not submitted again takes a note on its newest round", t.Task.ID, t.Task.Queue),
				Next: amendNext(t)}
		}
		rounds := t.File.FeedbackRounds()
		if t.Task.RejectionCount == 0 || len(rounds) == 0 || rounds[0].Approval {
			return nil, &RuleError{Rule: "amend", Msg: fmt.Sprintf("%s has no rejection round to add a note to", t.Task.ID), Next: amendNext(t)}
		}
		ground, err := e.checkReviewer(t, ActionReject)
		if err != nil {
			return nil, err
		}
		f, err := t.File.AddToNewestRound(taskfile.Source{From: e.Actor + " via orch reject --amend", Time: e.Now(), Text: text})
		if err != nil {
			return nil, err
		}
		body := fmt.Sprintf("Note on rejection #%d by %s: %s", rounds[0].Number, e.Actor, firstSentence(text))
		return &change{file: f, body: body, data: &AmendRejectionData{Round: rounds[0].Number, By: e.Actor, ClaimedBy: t.Task.ClaimedBy}, ground: ground}, nil
	})
}

func amendNext(t *Task) Next {
	if t.Task.Queue == taskfile.Provisional {
		return Next{Advice: AdviseAwaitsReview, Task: t.Task.ID}
	}
	return Next{Advice: AdviseShowRounds, Task: t.Task.ID}
}

func firstSentence(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return text.Clip(l, 117)
}

// reject is the one path for every rejection: the feedback round at the top
// of the body, the count, the lockout, and escalation by policy.
func (e *Engine) reject(id string, verb Action, rj rejection) (*Result, error) {
	return e.transition(id, verb, e.rejectStep(verb, rj))
}

// rejectStep is the rejection's transition: review authority, then the
// rejection.
func (e *Engine) rejectStep(verb Action, rj rejection) func(t *Task) (*change, error) {
	return func(t *Task) (*change, error) {
		ground, err := e.checkReviewer(t, verb)
		if err != nil {
			return nil, err
		}
		c, err := e.rejectChange(t, rj)
		if c != nil {
			c.ground = ground
		}
		return c, err
	}
}

func (e *Engine) rejectChange(t *Task, rj rejection) (*change, error) {
	n := t.Task.RejectionCount + 1
	f, err := t.File.AddRound(taskfile.Round{Number: n, Verdict: rj.Verdict, Sources: rj.Sources})
	if err != nil {
		return nil, err
	}
	author := t.Task.SubmittedBy
	if author == "" {
		author = t.Task.ClaimedBy
	}
	locked := append([]string{}, t.Task.LockedOut...)
	lockedNow := false
	if e.Config.Review.LockoutOn() && author != "" && !slices.Contains(locked, author) {
		locked = append(locked, author)
		lockedNow = true
	}
	edits := []taskfile.Edit{
		taskfile.Set(taskfile.KeyRejectionCount, taskfile.Int(n)),
		taskfile.Unset(taskfile.KeyClaimedBy),
		taskfile.Unset(taskfile.KeyClaimedAt),
	}
	if len(locked) > 0 {
		edits = append(edits, taskfile.Set(taskfile.KeyLockedOut, taskfile.ListOf(locked)))
	}
	if t.Task.Branch != "" {
		if tip, err := e.tasks().ReadRef("refs/heads/" + t.Task.Branch); err == nil && !tip.IsZero() {
			edits = append(edits, taskfile.Set(taskfile.KeyRejectedAt, taskfile.String(tip.String())))
		}
	}
	edits = append(edits, rj.Edits...)
	if f, err = f.Apply(edits...); err != nil {
		return nil, err
	}
	rd := RejectionData{Round: n, By: e.Actor, Author: author, Lockout: lockedNow, Branch: t.Task.Branch, PRNumber: t.Task.PRNumber}
	c := &change{file: f, to: taskfile.Rejected,
		body:     fmt.Sprintf("Rejection #%d by %s: %s", n, e.Actor, rj.Summary),
		trailers: gitstore.Trailers{{Key: gitstore.TrailerRound, Value: fmt.Sprint(n)}}}
	if lockedNow {
		c.body += fmt.Sprintf("\n\n%s is locked out of this task.", author)
		c.trailers.Add(gitstore.TrailerLockedOut, author) // orch log names who
	}
	if reason, why := e.escalationFor(&t.Task, n, locked, rj.NoProgress); reason != "" {
		c.to = taskfile.Escalated
		c.extra = append(c.extra, e.escalationMessage(&f.Task, t.Path, reason, why)) // the task after this rejection
		rd.Escalated = reason
		c.escalation = &Escalation{reason, why}
		c.body += "\n\nEscalated: " + why
	}
	switch d := rj.Data.(type) {
	case nil:
		c.data = &RejectData{RejectionData: rd}
	case *RejectData:
		d.RejectionData = rd
		c.data = d
	case *ReviewData:
		d.Rejection = &rd
		c.data = d
	default:
		return nil, fmt.Errorf("internal error: a rejection recorded with data of %T", rj.Data)
	}
	return c, nil
}

// Unlock lifts one agent's lockout.
func (e *Engine) Unlock(id, agent string) (*Result, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	if err := e.requireHuman("unlock", id, "lifting a lockout"); err != nil {
		return nil, err
	}
	s, err := e.Find(id)
	if err != nil {
		return nil, err
	}
	id = s.Task.ID
	if !slices.Contains(s.Task.LockedOut, agent) {
		return nil, &RuleError{Rule: "not_locked_out", Msg: fmt.Sprintf("%s is not locked out of %s (locked out: %s)", printable(agent), id, orNone(s.Task.LockedOut)), Next: Next{Advice: AdviseShowTask, Task: id}}
	}
	return e.transitionAny(id, ActionUnlock, func(t *Task) (*change, error) {
		var rest []string
		for _, a := range t.Task.LockedOut {
			if a != agent {
				rest = append(rest, a)
			}
		}
		edit := taskfile.Set(taskfile.KeyLockedOut, taskfile.ListOf(rest))
		if len(rest) == 0 {
			edit = taskfile.Unset(taskfile.KeyLockedOut)
		}
		f, err := t.File.Apply(edit)
		if err != nil {
			return nil, err
		}
		return &change{file: f, body: fmt.Sprintf("Unlocked %s (by %s).", agent, e.Actor), data: &UnlockData{Agent: agent}, trailers: gitstore.Trailers{{Key: gitstore.TrailerUnlocked, Value: agent}}}, nil
	})
}
