package workflow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/refusal"
	"github.com/orch-tool/orch/taskfile"
)

// Decisions a human can take on a refusal.
var Decisions = []string{"override", "accept", "defer", "decompose", "reformulate"}

// DecideResult reports a decision.
type DecideResult struct {
	Result
	Decision string
	Created  []*gitstore.Summary
}

// refusalRecord is the latest valid refusal of a task, from the event log.
type refusalRecord struct {
	Agent  string
	Time   string
	Record *refusal.Record
}

// latestRefusal scans the event log for the task's latest valid refusal.
func (e *Engine) latestRefusal(id string) (*refusalRecord, error) {
	recs, err := e.latestRefusals(map[string]bool{id: true})
	return recs[id], err
}

// latestRefusals scans the event log once for the latest valid refusal of
// each of the tasks.
func (e *Engine) latestRefusals(ids map[string]bool) (map[string]*refusalRecord, error) {
	out := map[string]*refusalRecord{}
	err := e.scanEvents(func(ev *Event) {
		if ev.Action != ActionRefuse || !ids[ev.Task] {
			return
		}
		d, err := ev.Payload()
		data, ok := d.(*RefuseData)
		if err != nil || !ok || data.Refusal == nil {
			return
		}
		if best := out[ev.Task]; best == nil || !eventBefore(ev.Time, best.Time) {
			out[ev.Task] = &refusalRecord{Agent: ev.Actor, Time: ev.Time, Record: data.Refusal}
		}
	})
	return out, err
}

// PendingRefusal is a refusal that waits for orch decide, as inbox and show
// present it: the whole record, who refused and when, and the decision the
// protocol takes by default.
type PendingRefusal struct {
	By              string          `json:"by"`
	Time            string          `json:"time"`
	DefaultDecision string          `json:"default_decision"`
	Decide          string          `json:"decide"`
	Record          *refusal.Record `json:"record"`
}

func pendingRefusal(id string, rec *refusalRecord) *PendingRefusal {
	if rec == nil {
		return nil
	}
	return &PendingRefusal{By: rec.Agent, Time: rec.Time, DefaultDecision: refusal.DefaultDecision(rec.Record.ReasonType),
		Decide: "orch decide " + id + " <" + strings.Join(Decisions, "|") + ">", Record: rec.Record}
}

// RefusalAwaiting returns the refusal a blocked task waits on a decision
// for, or nil (not blocked, already decided, or no record in the log).
func (e *Engine) RefusalAwaiting(s *gitstore.Summary) (*PendingRefusal, error) {
	if s.Task.Queue != taskfile.Blocked || e.refusalDecided(s) {
		return nil, nil
	}
	rec, err := e.latestRefusal(s.Task.ID)
	return pendingRefusal(s.Task.ID, rec), err
}

// Decide answers a refusal (docs/design.md §6.4). override sends the task back to the
// agent with the message in its next prompt; accept keeps it blocked with
// the decision recorded; defer creates the blocker, dependency or
// clarification task and puts the original behind it; decompose creates the
// alternative tasks (chained by depends_on where a task requires the
// previous one) and supersedes the original; reformulate creates the
// reformulated task and supersedes the original. auto takes the protocol's
// default for the refusal's reason.
func (e *Engine) Decide(id, decision, text string, auto bool) (*DecideResult, error) {
	if err := checkTexts(namedText{"the message (-m)", &text}); err != nil {
		return nil, err
	}
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	if err := e.requireHuman("decide", id, "deciding on a refusal"); err != nil {
		return nil, err
	}
	if s := e.Store.SummaryByID(id); s != nil {
		if err := CheckTransition(ActionDecide, id, s.Task.Queue); err != nil {
			return nil, err
		}
	}
	rec, err := e.latestRefusal(id)
	if err != nil {
		return nil, err
	}
	if auto {
		if rec == nil {
			return nil, &RuleError{Rule: "no_refusal_record", Msg: fmt.Sprintf("no refusal of %s in the event log, so there is no default decision", id), Next: Next{Advice: AdviseDecideExplicit, Task: id}}
		}
		decision = refusal.DefaultDecision(rec.Record.ReasonType)
	}
	decision = strings.ToLower(strings.TrimSpace(decision))
	if !slices.Contains(Decisions, decision) {
		return nil, &UsageError{Msg: fmt.Sprintf("%q is not a decision: use one of %s, or --auto", printable(decision), strings.Join(Decisions, ", "))}
	}
	text = strings.TrimSpace(text)
	if decision == "override" && text == "" {
		return nil, &UsageError{Msg: "an override needs a message for the agent (-m TEXT): it is shown in the agent's next prompt", Next: Next{Advice: AdviseOverrideText, Task: id}}
	}
	if rec == nil && decision == "override" {
		return nil, &RuleError{Rule: "no_refusal_record", Msg: fmt.Sprintf("no refusal of %s in the event log, so there is no agent to send it back to", id), Next: Next{Advice: AdviseRequeueTo, Task: id}}
	}
	if rec == nil && decision != "override" && decision != "accept" {
		return nil, &RuleError{Rule: "no_refusal_record", Msg: fmt.Sprintf("no refusal of %s in the event log: %s needs the refusal's record", id, decision), Next: Next{Advice: AdviseOverrideAccept}}
	}
	out := &DecideResult{Decision: decision}
	var created []string
	res, err := e.transition(id, ActionDecide, func(t *Task) (*change, error) {
		created = []string{} // never null in the event
		now := taskfile.FormatTime(e.Now())
		data := &DecideData{Decision: decision, Text: text}
		c := &change{data: data, trailers: gitstore.Trailers{{Key: gitstore.TrailerDecision, Value: decision}}}
		if rec != nil {
			data.Reason, data.RefusedBy = rec.Record.ReasonType, rec.Agent
			c.trailers.Add(gitstore.TrailerReason, string(rec.Record.ReasonType))
		}
		f := t.File
		var err error
		switch decision {
		case "override":
			agent := ""
			if rec != nil {
				agent = rec.Agent
			}
			if f, err = f.AddSection(fmt.Sprintf("## Refusal Overridden (%s, %s)\n\n%s\n", e.Actor, now, demote(text))); err != nil {
				return nil, err
			}
			edits := []taskfile.Edit{taskfile.Set(taskfile.KeyClaimedAt, taskfile.Time(e.Now()))}
			if agent != "" {
				edits = append(edits, taskfile.Set(taskfile.KeyClaimedBy, taskfile.String(agent)))
			}
			if f, err = f.Apply(edits...); err != nil {
				return nil, err
			}
			c.to = taskfile.Claimed
			c.body = fmt.Sprintf("Refusal overridden by %s; back to %s: %s", e.Actor, orDash(agent), firstSentence(text))
		case "accept":
			msg := text
			if msg == "" {
				msg = "The refusal is accepted; the task stays blocked until a human changes it."
			}
			if f, err = f.AddSection(fmt.Sprintf("## Decision (%s, %s)\n\nAccepted the refusal. %s\n", e.Actor, now, demote(msg))); err != nil {
				return nil, err
			}
			c.to = taskfile.Blocked
			c.body = "Refusal accepted by " + e.Actor + "."
		case "defer":
			newTasks, dep, err := e.deferTasks(t, rec.Record)
			if err != nil {
				return nil, err
			}
			deps := append([]string{}, t.Task.DependsOn...)
			for _, nf := range newTasks {
				c.extra = append(c.extra, gitstore.Change{Path: nf.Path, Data: nf.Src})
				c.created = append(c.created, createdTask{nf.Task.ID, nf.Task.Title})
				created = append(created, nf.Task.ID)
			}
			if !slices.Contains(deps, dep) {
				deps = append(deps, dep)
			}
			if f, err = f.AddSection(fmt.Sprintf("## Decision (%s, %s)\n\n%s\n", e.Actor, now, strings.TrimSpace("Deferred behind "+dep+". "+demote(text)))); err != nil {
				return nil, err
			}
			if f, err = f.Apply(taskfile.Set(taskfile.KeyDependsOn, taskfile.ListOf(deps))); err != nil {
				return nil, err
			}
			c.to = taskfile.Incoming
			c.body = fmt.Sprintf("Deferred by %s behind %s.", e.Actor, dep)
			data.DependsOn = dep
		case "decompose", "reformulate":
			var newTasks []*taskfile.File
			if decision == "decompose" {
				newTasks, err = e.decomposeTasks(t, rec.Record)
			} else {
				newTasks, err = e.reformulateTask(t, rec.Record)
			}
			if err != nil {
				return nil, err
			}
			for _, nf := range newTasks {
				c.extra = append(c.extra, gitstore.Change{Path: nf.Path, Data: nf.Src})
				c.created = append(c.created, createdTask{nf.Task.ID, nf.Task.Title})
				created = append(created, nf.Task.ID)
			}
			verb := map[string]string{"decompose": "Decomposed into", "reformulate": "Reformulated as"}[decision]
			if f, err = f.AddSection(fmt.Sprintf("## Decision (%s, %s)\n\n%s\n", e.Actor, now, strings.TrimSpace(verb+" "+strings.Join(created, ", ")+". "+demote(text)))); err != nil {
				return nil, err
			}
			c.to = taskfile.Superseded
			c.body = fmt.Sprintf("%s %s (by %s).", verb, strings.Join(created, ", "), e.Actor)
		}
		if decision != "override" {
			if f, err = f.Apply(taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)); err != nil {
				return nil, err
			}
		}
		c.file = f
		data.Created = created
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	out.Result = *res
	for _, cid := range created {
		if s := e.Store.SummaryByID(cid); s != nil {
			out.Created = append(out.Created, s)
		}
	}
	return out, nil
}

// inherit is a new task that takes the original's priority, role and labels.
func inherit(t *Task, title, body string, deps []string) NewTask {
	return NewTask{Title: title, Priority: t.Task.Priority, Role: t.Task.Role, Labels: t.Task.Labels, DependsOn: deps, Body: body}
}

func clipTitle(s string) string { return text.Clip(text.OneLine(s), 117) }

// deferTasks returns the task(s) the original is deferred behind, and the id
// it will depend on. A MISSING_DEPENDENCY that names an existing task adds
// no task.
func (e *Engine) deferTasks(t *Task, r *refusal.Record) ([]*taskfile.File, string, error) {
	taken := map[string]bool{}
	var nt NewTask
	switch r.ReasonType {
	case refusal.MissingDependency:
		name := r.DependencyName()
		// A dependency named by its task ID ("depends on T-4k9x2m", "depends
		// on task:T-4k9x2m") is that task: no new task.
		if id := e.existingTaskIn(name, t.Task.ID); id != "" {
			return nil, id, nil
		}
		nt = inherit(t, clipTitle("Provide "+name+" (needed by "+t.Task.ID+")"),
			fmt.Sprintf("## Context\n\n%s depends on it: %s\n\n%s\n", t.Task.ID, text.OneLine(r.BlockingFactor), demote(strings.TrimSpace(r.ReasonDetail))), nil)
	case refusal.UnclearRequirements:
		nt = inherit(t, clipTitle("Clarify the requirements of "+t.Task.ID+": "+t.Task.Title),
			fmt.Sprintf("## Questions\n\n%s\n\n## Suggested\n\n%s\n", demote(strings.TrimSpace(r.ReasonDetail)), demote(strings.TrimSpace(r.SuggestedAlternative))), nil)
	default:
		nt = inherit(t, clipTitle("Resolve the blocker of "+t.Task.ID+": "+text.OneLine(r.BlockingFactor)),
			fmt.Sprintf("## Context\n\n%s is blocked: %s\n\n%s\n\n## Evidence\n\n%s\n## Suggested\n\n%s\n", t.Task.ID, text.OneLine(r.BlockingFactor), demote(strings.TrimSpace(r.ReasonDetail)), evidenceList(r), demote(strings.TrimSpace(r.SuggestedAlternative))), nil)
	}
	// The refusal protocol makes blocker, dependency and clarification
	// tasks high priority: the original waits on them. A P0 original keeps
	// its P0.
	if taskfile.PriorityRank(nt.Priority) > taskfile.PriorityRank("P1") {
		nt.Priority = "P1"
	}
	f, err := e.renderTask(nt, taken)
	if err != nil {
		return nil, "", err
	}
	return []*taskfile.File{f}, f.Task.ID, nil
}

// existingTaskIn returns the ID of an existing task (other than self) that
// text names by its full ID, bare or written task:<ID>; "" when none.
func (e *Engine) existingTaskIn(text, self string) string {
	for _, w := range strings.Fields(text) {
		w = strings.Trim(w, "()[]{},.;:!?`'\"")
		if len(w) > 5 && strings.EqualFold(w[:5], "task:") {
			w = w[5:]
		}
		if !taskfile.ValidID(w) {
			continue
		}
		if s := e.Store.SummaryByID(w); s != nil && s.Task.ID != self {
			return s.Task.ID
		}
	}
	return ""
}

func evidenceList(r *refusal.Record) string {
	var b strings.Builder
	for _, ev := range r.Evidence {
		fmt.Fprintf(&b, "- %s: %s\n", ev.Type, text.OneLine(ev.Data))
	}
	if b.Len() == 0 {
		return "(none given)\n"
	}
	return b.String()
}

// noDeps are the ways people write "no dependency".
var noDeps = map[string]bool{"": true, "none": true, "n/a": true, "na": true, "-": true, "no": true, "nothing": true}

// decomposeTasks creates the refusal's alternative tasks. A task whose
// dependencies field names anything depends on the task before it; the
// first inherits the original's dependencies.
func (e *Engine) decomposeTasks(t *Task, r *refusal.Record) ([]*taskfile.File, error) {
	if len(r.AlternativeTasks) == 0 {
		return nil, &RuleError{Rule: "no_alternative_tasks", Msg: "the refusal suggests no alternative tasks to decompose into", Next: Next{Advice: AdviseDeferReform}}
	}
	taken := map[string]bool{}
	var out []*taskfile.File
	for i, at := range r.AlternativeTasks {
		var deps []string
		if i == 0 {
			deps = append(deps, t.Task.DependsOn...)
		} else if !noDeps[strings.ToLower(strings.TrimSpace(at.Dependencies))] {
			deps = append(deps, out[i-1].Task.ID)
		}
		var body strings.Builder
		fmt.Fprintf(&body, "## Context\n\nPart %d of %d of %s (%s), decomposed after a SCOPE_CREEP refusal.\n", i+1, len(r.AlternativeTasks), t.Task.ID, text.OneLine(t.Task.Title))
		if at.Scope != "" {
			fmt.Fprintf(&body, "\n## Scope\n\n%s\n", demote(strings.TrimSpace(at.Scope)))
		}
		if at.Estimate != "" {
			fmt.Fprintf(&body, "\nEstimate: %s\n", text.OneLine(at.Estimate))
		}
		if at.Dependencies != "" {
			fmt.Fprintf(&body, "\nDepends on: %s\n", text.OneLine(at.Dependencies))
		}
		f, err := e.renderTask(inherit(t, clipTitle(at.Title), body.String(), deps), taken)
		if err != nil {
			return nil, err
		}
		taken[f.Task.ID] = true
		out = append(out, f)
	}
	return out, nil
}

// reformulateTask creates the feasible reformulation of an infeasible task.
func (e *Engine) reformulateTask(t *Task, r *refusal.Record) ([]*taskfile.File, error) {
	body := fmt.Sprintf("## Context\n\nReformulation of %s (%s), which was refused as %s: %s\n\n## Task\n\n%s\n",
		t.Task.ID, text.OneLine(t.Task.Title), r.ReasonType, text.OneLine(r.BlockingFactor), demote(strings.TrimSpace(r.SuggestedAlternative)))
	f, err := e.renderTask(inherit(t, clipTitle(t.Task.Title+" (reformulated)"), body, t.Task.DependsOn), nil)
	if err != nil {
		return nil, err
	}
	return []*taskfile.File{f}, nil
}
