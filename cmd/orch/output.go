package main

import (
	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/workflow"
)

// task returns the task object of a summary, with its custom keys read
// from its file when the answer shows them.
func (g *globalOptions) task(e *workflow.Engine, s *gitstore.Summary) answer.Task {
	j := g.taskBase(e, s)
	if g.fields.ShowsFields() {
		j.SetFields(e.TaskFields(s))
	}
	return j
}

// loadedTask is task for a task whose file is loaded already.
func (g *globalOptions) loadedTask(e *workflow.Engine, t *workflow.Task) answer.Task {
	j := g.taskBase(e, t.Summary)
	if g.fields.ShowsFields() {
		j.SetFields(workflow.FileFields(t))
	}
	return j
}

// tasks returns the task objects of many summaries (their custom keys
// through the engine's cache).
func (g *globalOptions) tasks(e *workflow.Engine, sums []*gitstore.Summary) []answer.Task {
	out := make([]answer.Task, len(sums))
	for i, s := range sums {
		out[i] = g.taskBase(e, s)
	}
	if len(out) > 0 && g.fields.ShowsFields() {
		for i, f := range e.TaskFieldsOf(sums) {
			out[i].SetFields(f)
		}
	}
	return out
}

// taskRefs returns the task objects of the tasks with these IDs (nil for
// an ID not on the state branch), each task looked up and read once.
func (g *globalOptions) taskRefs(e *workflow.Engine, ids []string) map[string]*answer.Task {
	out := map[string]*answer.Task{}
	var sums []*gitstore.Summary
	for _, id := range ids {
		if _, done := out[id]; done || id == "" {
			continue
		}
		out[id] = nil
		if s := e.Store.SummaryByID(id); s != nil {
			sums = append(sums, s)
		}
	}
	for _, j := range g.tasks(e, sums) {
		out[j.ID()] = &j
	}
	return out
}

func (g *globalOptions) taskBase(e *workflow.Engine, s *gitstore.Summary) answer.Task {
	ready := false
	if s.Problem == "" {
		ready = e.Ready(s)
	}
	return answer.NewTask(s, ready, workflow.NoFields, g.fields)
}

// transitionJSON is the result of a verb that moved a task.
type transitionJSON struct {
	Task   answer.Task `json:"task"`
	From   string      `json:"from"`
	To     string      `json:"to"`
	Commit string      `json:"commit"`
	// Escalation says why the transition escalated the task (null when it
	// did not).
	Escalation *escalationJSON `json:"escalation"`
}

// escalationJSON is why a task escalated: the rule's code and its reason
// in words (workflow.Escalation).
type escalationJSON struct {
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

func escalationOf(x *workflow.Escalation) *escalationJSON {
	if x == nil {
		return nil
	}
	return &escalationJSON{Rule: x.Rule, Why: x.Why}
}

func (g *globalOptions) transition(e *workflow.Engine, res *workflow.Result) transitionJSON {
	return transitionJSON{Task: g.task(e, res.Task), From: string(res.From), To: string(res.To), Commit: res.Commit.String(), Escalation: escalationOf(res.Escalation)}
}

// textArg returns the text of -m, or of -F FILE|- (one of them is needed
// when required is set).
func (g *globalOptions) textArg(msg, file string, required bool, form string) (string, error) {
	if msg != "" && file != "" {
		return "", &workflow.UsageError{Msg: "give the text with -m or -F, not both", Hint: "usage: orch " + form}
	}
	if file != "" {
		b, err := g.readInput(file)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	if msg == "" && required {
		return "", &workflow.UsageError{Msg: "text required (-m TEXT or -F FILE|-)", Hint: "usage: orch " + form}
	}
	return msg, nil
}
