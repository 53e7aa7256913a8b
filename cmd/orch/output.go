package main

import (
	"fmt"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/answer"
	"github.com/orch-tool/orch/workflow"
)

// writeJSON prints v (a struct or map) as one JSON document with
// schema_version first.
func (g *globalOptions) writeJSON(v any) error {
	doc, err := answer.Marshal(v)
	if err != nil {
		return err
	}
	return g.emitJSON(doc)
}

// emitJSON writes one finished JSON document (ending in a newline).
func (g *globalOptions) emitJSON(doc []byte) error {
	_, err := g.io.Out.Write(doc)
	return err
}

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
		ready = e.Ready(&s.Task)
	}
	return answer.NewTask(s, ready, workflow.NoFields, g.fields)
}

// transitionJSON is the result of a verb that moved a task.
type transitionJSON struct {
	Task   answer.Task `json:"task"`
	From   string      `json:"from"`
	To     string      `json:"to"`
	Commit string      `json:"commit"`
}

func (g *globalOptions) transition(e *workflow.Engine, res *workflow.Result) transitionJSON {
	return transitionJSON{Task: g.task(e, res.Task), From: string(res.From), To: string(res.To), Commit: res.Commit.String()}
}

// printTransition reports a moved task: the JSON document, or one line.
func (g *globalOptions) printTransition(e *workflow.Engine, verb string, res *workflow.Result) error {
	if g.JSON {
		return g.writeJSON(g.transition(e, res))
	}
	if res.From != res.To {
		fmt.Fprintf(g.io.Out, "%s: %s -> %s\n", res.Task.Task.ID, res.From, res.To)
	} else {
		fmt.Fprintf(g.io.Out, "%s: %s (%s)\n", res.Task.Task.ID, verb, res.To)
	}
	return nil
}

// taskVerb resolves the task argument (or the current worktree's task) and
// runs a transition on it.
func (g *globalOptions) taskVerb(ref, verb string, fn func(e *workflow.Engine, id string) (*workflow.Result, error)) error {
	return g.withEngineOptimistic(func(e *workflow.Engine) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		res, err := fn(e, s.Task.ID)
		if err != nil {
			return err
		}
		return g.printTransition(e, verb, res)
	})
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
