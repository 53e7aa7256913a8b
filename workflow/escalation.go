package workflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
)

// A task escalates to a human (docs/design.md §6.3) by hand (orch escalate), or by
// policy when a rejection (orch reject, orch review with blocking issues)
// finds that the loop will not converge: escalationFor holds the three
// triggers of the review loop; crashEscalation is orch run's, for agents
// that keep ending without a transition. The escalation writes messages/<time>-<id>.md for orch inbox.

// escalationFor says whether rejection number round of t escalates, and
// why: round reached review.max_rejections; every capable agent is locked
// out (locked: the lockouts after this rejection); or noProgress structured
// review rounds in a row resolved no blocking issue (review.max_no_progress).
// t is the task as the rejection found it.
func (e *Engine) escalationFor(t *taskfile.Task, round int, locked []string, noProgress int) (reason, why string) {
	rv := e.Config.Review
	switch {
	case round >= rv.MaxRejections:
		return "max_rejections", fmt.Sprintf("Rejection #%d reached review.max_rejections (%d): the review loop is not converging.", round, rv.MaxRejections)
	case e.deadlocked(t, locked):
		who := "in the roster"
		if len(e.Config.Roster()) == 0 {
			who = "that has worked on tasks of that role"
		}
		return "lockout_deadlock", fmt.Sprintf("Every agent with role %s %s is locked out of this task (%s).", roleOf(t, e.Config), who, strings.Join(locked, ", "))
	case noProgress >= rv.MaxNoProgress:
		return "no_progress", fmt.Sprintf("%d review rounds in a row resolved no blocking issue (review.max_no_progress is %d).", noProgress, rv.MaxNoProgress)
	}
	return "", ""
}

// crashEscalation is orch run's trigger: run.max_crashes runs in a row
// ended without a transition of their agent (crashes counts this one).
func crashEscalation(crashes int, end RunEnd) (reason, why string) {
	if !end.Crash || end.MaxCrashes <= 0 || crashes < end.MaxCrashes {
		return "", ""
	}
	why = fmt.Sprintf("%d runs in a row ended without a transition of their agent (run.max_crashes is %d); the last was %s's attempt %d (%s).",
		crashes, end.MaxCrashes, end.Agent, end.Attempt, end.Reason)
	if len(end.Logs) > 0 {
		why += " Logs: " + strings.Join(end.Logs, ", ") + " (orch logs " + end.Task + ")."
	}
	return "crashes", why
}

// Escalate asks a human to act.
func (e *Engine) Escalate(id, text string) (*Result, error) {
	if err := checkTexts(namedText{"the message (-m)", &text}); err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, &UsageError{Msg: "say what a human must decide", Next: Next{Advice: AdviseEscalateText, Task: id}}
	}
	return e.transition(id, ActionEscalate, func(t *Task) (*change, error) {
		msg := e.escalationMessage(&t.Task, t.Path, "manual", "Escalated by "+e.Actor+": "+text)
		return &change{file: t.File, to: taskfile.Escalated, body: "Escalated by " + e.Actor + ": " + firstSentence(text),
			extra: []gitstore.Change{msg}, data: &EscalateData{Reason: "manual", Text: text}, escalation: &Escalation{"manual", text}}, nil
	})
}

func roleOf(t *taskfile.Task, cfg *config.Config) string {
	if t.Role != "" {
		return t.Role
	}
	return cfg.DefaultRole
}

// deadlocked reports whether every agent capable of the task's role is
// locked out of it (Reviewer Lockout Protocol, "Deadlock Handling"). The
// capable agents are the roster's with that role; without a roster, every
// agent seen working on a task of that role (worked_by, claimants,
// submitters, lockouts).
func (e *Engine) deadlocked(t *taskfile.Task, locked []string) bool {
	role := roleOf(t, e.Config)
	if roster := e.Config.Roster(); len(roster) > 0 {
		capable := 0
		for _, a := range roster {
			roles := a.Roles
			if len(roles) == 0 {
				roles = []string{e.Config.DefaultRole} // as agentRoles claims
			}
			if !slices.Contains(roles, role) {
				continue
			}
			capable++
			if !slices.Contains(locked, a.Name) {
				return false
			}
		}
		return capable > 0
	}
	capable, free := false, false
	see := func(tk *taskfile.Task) bool {
		if roleOf(tk, e.Config) != role {
			return true
		}
		for _, w := range workers(tk) {
			if slices.Contains(e.Config.Humans, w) {
				continue
			}
			capable = true
			if !slices.Contains(locked, w) {
				free = true
				return false // someone can still take it: stop looking
			}
		}
		return true
	}
	if see(t) {
		e.tasks().EachSummaryWhile(func(s *gitstore.Summary) bool { return s.Task.ID == t.ID || see(&s.Task) })
	}
	return capable && !free
}

// escalationMessage writes messages/<time>-<id>.md for the human inbox.
func (e *Engine) escalationMessage(t *taskfile.Task, path, reason, why string) gitstore.Change {
	now := e.Now().UTC()
	name := fmt.Sprintf("%s/%s-%s.md", gitstore.MessagesDir, now.Format("20060102T150405.000Z"), t.ID)
	var b strings.Builder
	fmt.Fprintf(&b, "---\ntask: %s\nreason: %s\ncreated: %s\nby: %q\n---\n", t.ID, reason, taskfile.FormatTime(now), e.Actor)
	fmt.Fprintf(&b, "# %s escalated: %s\n\n", t.ID, text.OneLine(t.Title))
	b.WriteString("## Why\n\n" + why + "\n\n")
	fmt.Fprintf(&b, "Rejections so far: %d. Locked out: %s. Branch: %s.\n\n", t.RejectionCount, orNone(t.LockedOut), orDash(t.Branch))
	b.WriteString("## Options\n\n")
	fmt.Fprintf(&b, "- Fix it by hand on the branch %s, then send it back for review: `orch requeue %s --to YOU`, `orch claim --task %s`, `orch submit %s`.\n", orDash(t.Branch), t.ID, t.ID, t.ID)
	fmt.Fprintf(&b, "- Unlock an agent and give it guidance (edit the task: `orch edit %s`): `orch unlock %s AGENT`, then `orch requeue %s --to AGENT`.\n", t.ID, t.ID, t.ID)
	fmt.Fprintf(&b, "- Put it back in the queue for anyone: `orch requeue %s`.\n", t.ID)
	fmt.Fprintf(&b, "- Close it as won't-fix: `orch fail %s -m \"reason\"`.\n", t.ID)
	return gitstore.Change{Path: name, Data: []byte(b.String())}
}
