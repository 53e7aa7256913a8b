package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// schemaVersion is the version of every JSON answer (docs/agents.md lists
// what changed from one to the next).
const schemaVersion = 2

// schemaHead starts every JSON document.
const schemaHead = `{"schema_version":2`

// writeJSON prints v (a struct or map) as one JSON document with
// schema_version first.
func (g *globalOptions) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return g.emitJSON(withSchemaVersion(b))
}

// withSchemaVersion splices schema_version in front of a JSON object and
// ends it with a newline.
func withSchemaVersion(b []byte) []byte {
	out := make([]byte, 0, len(schemaHead)+len(b)+2)
	out = append(out, schemaHead...)
	if len(b) > 2 && b[0] == '{' {
		out = append(out, ',')
	}
	if len(b) >= 2 && b[0] == '{' {
		out = append(out, b[1:]...)
	} else {
		out = append(out, '}')
	}
	return append(out, '\n')
}

// emitJSON writes one finished JSON document (ending in a newline).
func (g *globalOptions) emitJSON(doc []byte) error {
	_, err := g.io.Out.Write(doc)
	return err
}

// jsonTime is a time in a JSON answer: RFC 3339 in UTC with exactly three
// fraction digits (2026-11-25T20:02:29.960Z), or null when unset.
type jsonTime time.Time

// jsonTimeLayout is the one format of times in JSON answers.
const jsonTimeLayout = "2006-01-02T15:04:05.000Z"

func (t jsonTime) MarshalJSON() ([]byte, error) {
	return appendJSONTime(nil, time.Time(t)), nil
}

func appendJSONTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, jsonTimeLayout)
	return append(b, '"')
}

// jsonTimeText turns a time written as text (event logs) into a jsonTime
// (unset when it does not parse).
func jsonTimeText(s string) jsonTime {
	t, err := taskfile.ParseTime(s)
	if err != nil {
		return jsonTime{}
	}
	return jsonTime(t)
}

// taskJSON is a task as every JSON answer shows it: every frontmatter field
// orch knows, always present (an unset time is null, an unset text "", an
// empty list []), the custom frontmatter keys in fields, the file, whether
// it can be claimed, and why its file is invalid (problem). jsonfast.go
// writes the same bytes without reflection.
type taskJSON struct {
	ID             string          `json:"id"`
	Title          string          `json:"title"`
	Queue          string          `json:"queue"`
	Priority       string          `json:"priority"`
	Role           string          `json:"role"`
	Branch         string          `json:"branch"`
	BaseBranch     string          `json:"base_branch"`
	PRNumber       int             `json:"pr_number"`
	RejectionCount int             `json:"rejection_count"`
	NoProgress     int             `json:"no_progress_count"`
	Attempts       int             `json:"attempts"`
	ClaimedBy      string          `json:"claimed_by"`
	ClaimedAt      jsonTime        `json:"claimed_at"`
	HeartbeatAt    jsonTime        `json:"heartbeat_at"`
	SubmittedBy    string          `json:"submitted_by"`
	SubmittedAt    jsonTime        `json:"submitted_at"`
	AssignedTo     string          `json:"assigned_to"`
	LockedOut      []string        `json:"locked_out"`
	WorkedBy       []string        `json:"worked_by"`
	GitHubReviews  []string        `json:"github_reviews"`
	DependsOn      []string        `json:"depends_on"`
	Labels         []string        `json:"labels"`
	Created        jsonTime        `json:"created"`
	RejectedAt     string          `json:"rejected_at_commit"`
	Fields         json.RawMessage `json:"fields"`
	Path           string          `json:"path"`
	Ready          bool            `json:"ready"`
	Problem        string          `json:"problem"`

	mask taskMask // the fields --json FIELDS asked for (0: all)
}

// MarshalJSON writes the task as jsonfast.go does, cut to the fields
// asked for.
func (j taskJSON) MarshalJSON() ([]byte, error) { return j.appendJSON(nil), nil }

// noStrings is the empty list of a task field: [] in JSON, never null.
var noStrings = []string{}

func listOrEmpty(l []string) []string {
	if l == nil {
		return noStrings
	}
	return l
}

// task returns the task object of a summary, with its custom keys read
// from its file when the answer shows them.
func (g *globalOptions) task(e *workflow.Engine, s *gitstore.Summary) taskJSON {
	j := g.taskBase(e, s)
	if j.mask.has(fieldFields) {
		j.Fields = e.TaskFields(s)
	}
	return j
}

// loadedTask is task for a task whose file is loaded already.
func (g *globalOptions) loadedTask(e *workflow.Engine, t *workflow.Task) taskJSON {
	j := g.taskBase(e, t.Summary)
	if j.mask.has(fieldFields) {
		j.Fields = workflow.FileFields(t)
	}
	return j
}

// tasks returns the task objects of many summaries (their custom keys
// through the engine's cache).
func (g *globalOptions) tasks(e *workflow.Engine, sums []*gitstore.Summary) []taskJSON {
	out := make([]taskJSON, len(sums))
	for i, s := range sums {
		out[i] = g.taskBase(e, s)
	}
	if len(out) > 0 && out[0].mask.has(fieldFields) {
		for i, f := range e.TaskFieldsOf(sums) {
			out[i].Fields = f
		}
	}
	return out
}

// taskOrNil is the task object of the task with this ID, or nil when it
// is not on the state branch (archived) or id is "".
func (g *globalOptions) taskOrNil(e *workflow.Engine, id string) *taskJSON {
	if id == "" {
		return nil
	}
	s := e.Store.SummaryByID(id)
	if s == nil {
		return nil
	}
	j := g.task(e, s)
	return &j
}

// taskRefs returns the task objects of the tasks with these IDs (nil for
// an ID not on the state branch), each task looked up and read once.
func (g *globalOptions) taskRefs(e *workflow.Engine, ids []string) map[string]*taskJSON {
	out := map[string]*taskJSON{}
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
		out[j.ID] = &j
	}
	return out
}

func (g *globalOptions) taskBase(e *workflow.Engine, s *gitstore.Summary) taskJSON {
	ready := false
	if s.Problem == "" {
		ready = e.Ready(&s.Task)
	}
	return newTaskJSON(s, ready, workflow.NoFields, g.fields)
}

// newTaskJSON is the task object of a summary, given what needs the
// engine: whether it is ready and its custom keys.
func newTaskJSON(s *gitstore.Summary, ready bool, fields json.RawMessage, mask taskMask) taskJSON {
	t := &s.Task
	return taskJSON{
		ID: t.ID, Title: t.Title, Queue: string(t.Queue), Priority: t.Priority, Role: t.Role, Branch: t.Branch,
		BaseBranch: t.BaseBranch, PRNumber: t.PRNumber, RejectionCount: t.RejectionCount, NoProgress: t.NoProgress, Attempts: t.Attempts,
		ClaimedBy: t.ClaimedBy, ClaimedAt: jsonTime(t.ClaimedAt), HeartbeatAt: jsonTime(t.HeartbeatAt), SubmittedBy: t.SubmittedBy, SubmittedAt: jsonTime(t.SubmittedAt),
		AssignedTo: t.AssignedTo, LockedOut: listOrEmpty(t.LockedOut), WorkedBy: listOrEmpty(t.WorkedBy),
		GitHubReviews: listOrEmpty(t.GitHubReviews), DependsOn: listOrEmpty(t.DependsOn), Labels: listOrEmpty(t.Labels),
		Created: jsonTime(t.Created), RejectedAt: t.RejectedAt, Fields: fields,
		Path:    gitstore.ViewDirName + "/" + s.Path, // branch paths are clean and slash-separated
		Ready:   ready,
		Problem: s.Problem,
		mask:    mask,
	}
}

// transitionJSON is the result of a verb that moved a task.
type transitionJSON struct {
	Task   taskJSON `json:"task"`
	From   string   `json:"from"`
	To     string   `json:"to"`
	Commit string   `json:"commit"`
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
