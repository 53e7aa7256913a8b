package workflow

import (
	"fmt"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/refusal"
	"github.com/orch-tool/orch/taskfile"
)

// InvalidRefusalError is a refusal that fails the protocol's validator
// (exit 4). Every failed rule is listed.
type InvalidRefusalError struct {
	Task   string
	Issues []string
}

func (e *InvalidRefusalError) Error() string {
	return fmt.Sprintf("refusal of %s is not valid; the task stays claimed:\n- %s", e.Task, strings.Join(e.Issues, "\n- "))
}

// Refuse records an agent's refusal. An invalid refusal is logged as
// refuse.invalid (the task file does not change and the task stays claimed)
// and returned as an *InvalidRefusalError; a valid one moves the task to
// blocked with a "## Refusal" section and the full record in the event log.
func (e *Engine) Refuse(id string, r *refusal.Record) (*Result, error) {
	if r != nil {
		if err := checkRefusalTexts(r); err != nil {
			return nil, err
		}
	}
	if err := e.CheckRefusalIdentity(id, r); err != nil {
		return nil, err
	}
	issues := refusal.Validate(r)
	check := func(t *Task) error {
		if t.Task.Queue != taskfile.Claimed {
			return &IllegalTransitionError{Task: id, Queue: t.Task.Queue, Verb: string(ActionRefuse), Legal: LegalVerbs(t.Task.Queue)}
		}
		return e.requireClaimant(&t.Task, "refuse")
	}
	if len(issues) > 0 {
		_, err := e.transitionAny(id, ActionRefuseInvalid, func(t *Task) (*change, error) {
			if err := check(t); err != nil {
				return nil, err
			}
			return &change{body: fmt.Sprintf("Invalid refusal by %s (%d issue(s)); the task stays claimed.", e.Actor, len(issues)),
				data: &InvalidRefusalData{Refusal: r, Issues: issues, Reason: r.ReasonType}}, nil
		})
		if err != nil {
			return nil, err
		}
		return nil, &InvalidRefusalError{Task: id, Issues: issues}
	}
	return e.transition(id, ActionRefuse, func(t *Task) (*change, error) {
		if err := check(t); err != nil {
			return nil, err
		}
		f, err := t.File.AddSection(renderRefusal(e.Actor, taskfile.FormatTime(e.Now()), id, r))
		if err != nil {
			return nil, err
		}
		if f, err = f.Apply(taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)); err != nil {
			return nil, err
		}
		return &change{file: f, to: taskfile.Blocked, body: fmt.Sprintf("Refused by %s: %s: %s", e.Actor, r.ReasonType, text.OneLine(r.ReasonSummary)),
			data:     &RefuseData{Refusal: r, Reason: r.ReasonType, BlockingFactor: r.BlockingFactor, DefaultDecision: refusal.DefaultDecision(r.ReasonType)},
			trailers: gitstore.Trailers{{Key: gitstore.TrailerReason, Value: string(r.ReasonType)}}}, nil
	})
}

func renderRefusal(agent, when, id string, r *refusal.Record) string {
	return fmt.Sprintf("## Refusal (%s, %s)\n\n%sA human decides with `orch decide %s <%s>` (the protocol's default for %s: %s).\n",
		agent, when, RefusalText(r), id, strings.Join(Decisions, "|"), r.ReasonType, refusal.DefaultDecision(r.ReasonType))
}

// RefusalText is the whole refusal as markdown, everything a human needs to
// decide on it: the reason, the detail, what was attempted, the evidence,
// the suggested way forward and the alternative tasks. The task file's
// "## Refusal" section, orch inbox and orch show carry it. Every text is the
// agent's: it is made safe so that it cannot end the section or open one.
func RefusalText(r *refusal.Record) string {
	var b strings.Builder
	para := func(label, text string) {
		if text = strings.TrimSpace(text); text == "" {
			return
		}
		if strings.Contains(text, "\n") {
			fmt.Fprintf(&b, "%s:\n\n%s\n\n", label, demote(text))
		} else {
			fmt.Fprintf(&b, "%s: %s\n\n", label, demote(text))
		}
	}
	fmt.Fprintf(&b, "%s: %s\n\n", r.ReasonType, demote(text.OneLine(r.ReasonSummary)))
	para("Blocking factor", r.BlockingFactor)
	para("Detail", r.ReasonDetail)
	if len(r.WhatAttempted) > 0 {
		fmt.Fprintf(&b, "What was attempted (%d):\n\n", len(r.WhatAttempted))
		for i, a := range r.WhatAttempted {
			fmt.Fprintf(&b, "%d. %s\n", i+1, demote(text.OneLine(a)))
		}
		b.WriteString("\n")
	}
	if len(r.Evidence) > 0 {
		fmt.Fprintf(&b, "Evidence (%d):\n\n", len(r.Evidence))
		for _, ev := range r.Evidence {
			fmt.Fprintf(&b, "- %s", demote(text.OneLine(ev.Type)))
			if ev.Source != "" {
				fmt.Fprintf(&b, " (%s)", demote(text.OneLine(ev.Source)))
			}
			data := strings.TrimSpace(ev.Data)
			if !strings.Contains(data, "\n") {
				fmt.Fprintf(&b, ": %s\n", demote(data))
				continue
			}
			// Multi-line evidence (a log, a trace) stays multi-line,
			// indented under its item.
			b.WriteString(":\n\n")
			for _, l := range strings.Split(demote(data), "\n") {
				if l == "" {
					b.WriteString("\n")
				} else {
					b.WriteString("  " + l + "\n")
				}
			}
		}
		b.WriteString("\n")
	}
	if r.TaskOriginalScope != "" || r.ScopeGrowthFactor > 0 {
		para("Original scope", r.TaskOriginalScope)
		if r.ScopeGrowthFactor > 0 {
			fmt.Fprintf(&b, "Scope growth: %gx\n\n", r.ScopeGrowthFactor)
		}
	}
	para("Suggested alternative", r.SuggestedAlternative)
	if len(r.AlternativeTasks) > 0 {
		b.WriteString("Alternative tasks:\n\n")
		for i, t := range r.AlternativeTasks {
			fmt.Fprintf(&b, "%d. %s", i+1, demote(text.OneLine(t.Title)))
			var extra []string
			if t.Scope != "" {
				extra = append(extra, text.OneLine(t.Scope))
			}
			if t.Dependencies != "" {
				extra = append(extra, "depends on: "+text.OneLine(t.Dependencies))
			}
			if t.Estimate != "" {
				extra = append(extra, text.OneLine(t.Estimate))
			}
			if len(extra) > 0 {
				b.WriteString(" (" + demote(strings.Join(extra, "; ")) + ")")
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// CheckRefusalIdentity refuses a record whose identity fields contradict the
// command that files it: a task_id other than the task refused (a usage
// error: the record is about another task), an agent_id other than the
// actor (refused by rule, and an agent's attempt is recorded for the lead:
// a record cannot speak for someone else). Absent fields agree with
// anything.
func (e *Engine) CheckRefusalIdentity(id string, r *refusal.Record) error {
	if r == nil {
		return nil
	}
	if r.TaskID != "" && !strings.EqualFold(refusal.TaskRef(r.TaskID), id) {
		return &UsageError{Msg: fmt.Sprintf("the refusal record's task_id is %q, but this refuses %s: the record is about another task", clipArg(r.TaskID), id),
			Next: Next{Advice: AdviseSetRecordTask, Task: id}}
	}
	if agent := strings.TrimSpace(r.AgentID); agent != "" && agent != e.Actor {
		return e.refuseAuthority("refuse", id, "record_identity",
			fmt.Sprintf("the refusal record's agent_id is %q, but %s is refusing %s: a record cannot speak for someone else", clipArg(r.AgentID), e.Actor, id),
			Next{Advice: AdviseSetRecordAgent, Agent: e.Actor})
	}
	return nil
}
