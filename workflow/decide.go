package workflow

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/orch-tool/orch/gitstore"
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
func (e *Engine) Refuse(id string, r *Refusal) (*Result, error) {
	if r != nil {
		if err := checkRefusalTexts(r); err != nil {
			return nil, err
		}
	}
	if err := e.CheckRefusalIdentity(id, r); err != nil {
		return nil, err
	}
	issues := ValidateRefusal(r)
	check := func(t *Task) error {
		if t.Task.Queue != taskfile.Claimed {
			return &IllegalTransitionError{Task: id, Queue: t.Task.Queue, Verb: "refuse", Legal: LegalVerbs(t.Task.Queue)}
		}
		return e.requireClaimant(&t.Task, "refuse")
	}
	if len(issues) > 0 {
		_, err := e.transitionAny(id, "refuse.invalid", func(t *Task) (*change, error) {
			if err := check(t); err != nil {
				return nil, err
			}
			return &change{body: fmt.Sprintf("Invalid refusal by %s (%d issue(s)); the task stays claimed.", e.Actor, len(issues)),
				data: map[string]any{"refusal": r, "issues": issues, "reason": string(r.ReasonType)}}, nil
		})
		if err != nil {
			return nil, err
		}
		return nil, &InvalidRefusalError{Task: id, Issues: issues}
	}
	return e.transition(id, "refuse", func(t *Task) (*change, error) {
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
		return &change{file: f, to: taskfile.Blocked, body: fmt.Sprintf("Refused by %s: %s: %s", e.Actor, r.ReasonType, oneLine(r.ReasonSummary)),
			data:     map[string]any{"refusal": r, "reason": string(r.ReasonType), "blocking_factor": r.BlockingFactor, "default_decision": DefaultDecision(r.ReasonType)},
			trailers: []string{"Orch-Reason", string(r.ReasonType)}}, nil
	})
}

func renderRefusal(agent, when, id string, r *Refusal) string {
	return fmt.Sprintf("## Refusal (%s, %s)\n\n%sA human decides with `orch decide %s <%s>` (the protocol's default for %s: %s).\n",
		agent, when, RefusalText(r), id, strings.Join(Decisions, "|"), r.ReasonType, DefaultDecision(r.ReasonType))
}

// RefusalText is the whole refusal as markdown, everything a human needs to
// decide on it: the reason, the detail, what was attempted, the evidence,
// the suggested way forward and the alternative tasks. The task file's
// "## Refusal" section, orch inbox and orch show carry it. Every text is the
// agent's: it is made safe so that it cannot end the section or open one.
func RefusalText(r *Refusal) string {
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
	fmt.Fprintf(&b, "%s: %s\n\n", r.ReasonType, demote(oneLine(r.ReasonSummary)))
	para("Blocking factor", r.BlockingFactor)
	para("Detail", r.ReasonDetail)
	if len(r.WhatAttempted) > 0 {
		fmt.Fprintf(&b, "What was attempted (%d):\n\n", len(r.WhatAttempted))
		for i, a := range r.WhatAttempted {
			fmt.Fprintf(&b, "%d. %s\n", i+1, demote(oneLine(a)))
		}
		b.WriteString("\n")
	}
	if len(r.Evidence) > 0 {
		fmt.Fprintf(&b, "Evidence (%d):\n\n", len(r.Evidence))
		for _, ev := range r.Evidence {
			fmt.Fprintf(&b, "- %s", demote(oneLine(ev.Type)))
			if ev.Source != "" {
				fmt.Fprintf(&b, " (%s)", demote(oneLine(ev.Source)))
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
			fmt.Fprintf(&b, "%d. %s", i+1, demote(oneLine(t.Title)))
			var extra []string
			if t.Scope != "" {
				extra = append(extra, oneLine(t.Scope))
			}
			if t.Dependencies != "" {
				extra = append(extra, "depends on: "+oneLine(t.Dependencies))
			}
			if t.Estimate != "" {
				extra = append(extra, oneLine(t.Estimate))
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
	Record *Refusal
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
	err := e.scanEvents(func(ev *rawEvent) {
		if ev.Action != "refuse" || !ids[ev.Task] {
			return
		}
		var data struct {
			Refusal *Refusal `json:"refusal"`
		}
		if json.Unmarshal(ev.Data, &data) != nil || data.Refusal == nil {
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
	By              string   `json:"by"`
	Time            string   `json:"time"`
	DefaultDecision string   `json:"default_decision"`
	Decide          string   `json:"decide"`
	Record          *Refusal `json:"record"`
}

func pendingRefusal(id string, rec *refusalRecord) *PendingRefusal {
	if rec == nil {
		return nil
	}
	return &PendingRefusal{By: rec.Agent, Time: rec.Time, DefaultDecision: DefaultDecision(rec.Record.ReasonType),
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

// eventBefore compares event times as times: as text, "10:00:42Z" would sort
// after "10:00:42.5Z" (FormatTime drops zero milliseconds).
func eventBefore(a, b string) bool {
	ta, errA := taskfile.ParseTime(a)
	tb, errB := taskfile.ParseTime(b)
	if errA != nil || errB != nil {
		return a < b
	}
	return ta.Before(tb)
}

// rawEvent is an event line with its data left undecoded.
type rawEvent struct {
	Time   string          `json:"ts"`
	Task   string          `json:"task"`
	Action string          `json:"action"`
	From   string          `json:"from"`
	To     string          `json:"to"`
	Actor  string          `json:"actor"`
	Data   json.RawMessage `json:"data"`
}

// scanEvents calls fn for every event line on the state branch. Lines that
// do not parse are skipped (orch check reports them).
func (e *Engine) scanEvents(fn func(*rawEvent)) error {
	snap := e.Store.Snapshot()
	files := snap.Files(gitstore.EventsDir)
	defer e.progress("reading the event log", len(files), len(files))
	for i, fe := range files {
		e.progress("reading the event log", i, len(files))
		if !strings.HasSuffix(fe.Path, ".jsonl") {
			continue
		}
		data, err := snap.ReadBlob(fe.Blob)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var ev rawEvent
			if json.Unmarshal(line, &ev) == nil {
				fn(&ev)
			}
		}
	}
	return nil
}

// Decide answers a refusal (DESIGN §5). override sends the task back to the
// agent with the message in its next prompt; accept keeps it blocked with
// the decision recorded; defer creates the blocker, dependency or
// clarification task and puts the original behind it; decompose creates the
// alternative tasks (chained by depends_on where a task requires the
// previous one) and supersedes the original; reformulate creates the
// reformulated task and supersedes the original. auto takes the protocol's
// default for the refusal's reason.
func (e *Engine) Decide(id, decision, text string, auto bool) (*DecideResult, error) {
	if err := checkTexts(namedText{"the message (-m)", text}); err != nil {
		return nil, err
	}
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	if err := e.requireHuman("decide", id, "deciding on a refusal"); err != nil {
		return nil, err
	}
	if s := e.Store.SummaryByID(id); s != nil {
		if err := CheckTransition("decide", id, s.Task.Queue); err != nil {
			return nil, err
		}
	}
	rec, err := e.latestRefusal(id)
	if err != nil {
		return nil, err
	}
	if auto {
		if rec == nil {
			return nil, &RuleError{Rule: "no_refusal_record", Msg: fmt.Sprintf("no refusal of %s in the event log, so there is no default decision", id), Hint: "decide explicitly: orch decide " + id + " override|accept -m TEXT"}
		}
		decision = DefaultDecision(rec.Record.ReasonType)
	}
	decision = strings.ToLower(strings.TrimSpace(decision))
	if !contains(Decisions, decision) {
		return nil, &UsageError{Msg: fmt.Sprintf("%q is not a decision: use one of %s, or --auto", printable(decision), strings.Join(Decisions, ", "))}
	}
	text = strings.TrimSpace(text)
	if decision == "override" && text == "" {
		return nil, &UsageError{Msg: "an override needs a message for the agent (-m TEXT): it is shown in the agent's next prompt", Hint: `orch decide ` + id + ` override -m "The API key is in the vault; try again"`}
	}
	if rec == nil && decision == "override" {
		return nil, &RuleError{Rule: "no_refusal_record", Msg: fmt.Sprintf("no refusal of %s in the event log, so there is no agent to send it back to", id), Hint: "orch requeue " + id + " --to AGENT gives it to someone"}
	}
	if rec == nil && decision != "override" && decision != "accept" {
		return nil, &RuleError{Rule: "no_refusal_record", Msg: fmt.Sprintf("no refusal of %s in the event log: %s needs the refusal's record", id, decision), Hint: "use override or accept, or create the tasks by hand"}
	}
	out := &DecideResult{Decision: decision}
	var created []string
	res, err := e.transition(id, "decide", func(t *Task) (*change, error) {
		created = []string{} // never null in the event
		now := taskfile.FormatTime(e.Now())
		c := &change{data: map[string]any{"decision": decision, "text": text}, trailers: []string{"Orch-Decision", decision}}
		if rec != nil {
			c.data["reason"] = string(rec.Record.ReasonType)
			c.data["refused_by"] = rec.Agent
			c.trailers = append(c.trailers, "Orch-Reason", string(rec.Record.ReasonType))
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
			if !contains(deps, dep) {
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
			c.data["depends_on"] = dep
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
		c.data["created"] = created
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

func clipTitle(s string) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > 120 {
		s = string(r[:117]) + "..."
	}
	return s
}

// deferTasks returns the task(s) the original is deferred behind, and the id
// it will depend on. A MISSING_DEPENDENCY that names an existing task adds
// no task.
func (e *Engine) deferTasks(t *Task, r *Refusal) ([]*taskfile.File, string, error) {
	taken := map[string]bool{}
	var nt NewTask
	switch r.ReasonType {
	case RefusalMissingDependency:
		name := r.DependencyName()
		// A dependency named by its task ID ("depends on T-4k9x2m", "depends
		// on task:T-4k9x2m") is that task: no new task.
		if id := e.existingTaskIn(name, t.Task.ID); id != "" {
			return nil, id, nil
		}
		nt = inherit(t, clipTitle("Provide "+name+" (needed by "+t.Task.ID+")"),
			fmt.Sprintf("## Context\n\n%s depends on it: %s\n\n%s\n", t.Task.ID, oneLine(r.BlockingFactor), demote(strings.TrimSpace(r.ReasonDetail))), nil)
	case RefusalUnclearRequirements:
		nt = inherit(t, clipTitle("Clarify the requirements of "+t.Task.ID+": "+t.Task.Title),
			fmt.Sprintf("## Questions\n\n%s\n\n## Suggested\n\n%s\n", demote(strings.TrimSpace(r.ReasonDetail)), demote(strings.TrimSpace(r.SuggestedAlternative))), nil)
	default:
		nt = inherit(t, clipTitle("Resolve the blocker of "+t.Task.ID+": "+oneLine(r.BlockingFactor)),
			fmt.Sprintf("## Context\n\n%s is blocked: %s\n\n%s\n\n## Evidence\n\n%s\n## Suggested\n\n%s\n", t.Task.ID, oneLine(r.BlockingFactor), demote(strings.TrimSpace(r.ReasonDetail)), evidenceList(r), demote(strings.TrimSpace(r.SuggestedAlternative))), nil)
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

func evidenceList(r *Refusal) string {
	var b strings.Builder
	for _, ev := range r.Evidence {
		fmt.Fprintf(&b, "- %s: %s\n", ev.Type, oneLine(ev.Data))
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
func (e *Engine) decomposeTasks(t *Task, r *Refusal) ([]*taskfile.File, error) {
	if len(r.AlternativeTasks) == 0 {
		return nil, &RuleError{Rule: "no_alternative_tasks", Msg: "the refusal suggests no alternative tasks to decompose into", Hint: "decide defer or reformulate, or create the tasks with orch new"}
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
		fmt.Fprintf(&body, "## Context\n\nPart %d of %d of %s (%s), decomposed after a SCOPE_CREEP refusal.\n", i+1, len(r.AlternativeTasks), t.Task.ID, oneLine(t.Task.Title))
		if at.Scope != "" {
			fmt.Fprintf(&body, "\n## Scope\n\n%s\n", demote(strings.TrimSpace(at.Scope)))
		}
		if at.Estimate != "" {
			fmt.Fprintf(&body, "\nEstimate: %s\n", oneLine(at.Estimate))
		}
		if at.Dependencies != "" {
			fmt.Fprintf(&body, "\nDepends on: %s\n", oneLine(at.Dependencies))
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
func (e *Engine) reformulateTask(t *Task, r *Refusal) ([]*taskfile.File, error) {
	body := fmt.Sprintf("## Context\n\nReformulation of %s (%s), which was refused as %s: %s\n\n## Task\n\n%s\n",
		t.Task.ID, oneLine(t.Task.Title), r.ReasonType, oneLine(r.BlockingFactor), demote(strings.TrimSpace(r.SuggestedAlternative)))
	f, err := e.renderTask(inherit(t, clipTitle(t.Task.Title+" (reformulated)"), body, t.Task.DependsOn), nil)
	if err != nil {
		return nil, err
	}
	return []*taskfile.File{f}, nil
}
