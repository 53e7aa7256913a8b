package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/workflow"
)

// writeJSON prints one JSON document with schema_version 1 and the fields
// of v (a struct or map).
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// Splice schema_version in front so every document starts with it.
	if len(b) >= 2 && b[0] == '{' {
		head := []byte(`{"schema_version":1`)
		if len(b) > 2 {
			head = append(head, ',')
		}
		b = append(head, b[1:]...)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// taskJSON is a task as --json prints it in lists and results: the
// frontmatter fields orch knows, the file, and whether it can be claimed.
type taskJSON struct {
	ID             string    `json:"id"`
	Title          string    `json:"title"`
	Queue          string    `json:"queue"`
	Priority       string    `json:"priority"`
	Role           string    `json:"role,omitempty"`
	Branch         string    `json:"branch,omitempty"`
	BaseBranch     string    `json:"base_branch,omitempty"`
	PRNumber       int       `json:"pr_number,omitempty"`
	RejectionCount int       `json:"rejection_count"`
	NoProgress     int       `json:"no_progress_count,omitempty"`
	Attempts       int       `json:"attempts"`
	ClaimedBy      string    `json:"claimed_by,omitempty"`
	ClaimedAt      time.Time `json:"claimed_at,omitzero"`
	SubmittedBy    string    `json:"submitted_by,omitempty"`
	AssignedTo     string    `json:"assigned_to,omitempty"`
	LockedOut      []string  `json:"locked_out,omitempty"`
	WorkedBy       []string  `json:"worked_by,omitempty"`
	GitHubReviews  []string  `json:"github_reviews,omitempty"`
	DependsOn      []string  `json:"depends_on,omitempty"`
	Labels         []string  `json:"labels,omitempty"`
	Created        time.Time `json:"created,omitzero"`
	Path           string    `json:"path"`
	Ready          bool      `json:"ready"`
	Problem        string    `json:"problem,omitempty"`
}

func toTaskJSON(e *workflow.Engine, s *gitstore.Summary) taskJSON {
	t := s.Task
	j := taskJSON{
		ID: t.ID, Title: t.Title, Queue: string(t.Queue), Priority: t.Priority, Role: t.Role, Branch: t.Branch,
		BaseBranch: t.BaseBranch, PRNumber: t.PRNumber, RejectionCount: t.RejectionCount, NoProgress: t.NoProgress, Attempts: t.Attempts,
		ClaimedBy: t.ClaimedBy, ClaimedAt: t.ClaimedAt, SubmittedBy: t.SubmittedBy, AssignedTo: t.AssignedTo,
		LockedOut: t.LockedOut, WorkedBy: t.WorkedBy, GitHubReviews: t.GitHubReviews, DependsOn: t.DependsOn, Labels: t.Labels, Created: t.Created,
		Path:    gitstore.ViewDirName + "/" + s.Path, // branch paths are clean and slash-separated
		Problem: s.Problem,
	}
	if s.Problem == "" {
		j.Ready = e.Ready(&s.Task)
	}
	return j
}

// transitionJSON is the result of a verb that moved a task.
type transitionJSON struct {
	Task   taskJSON `json:"task"`
	From   string   `json:"from"`
	To     string   `json:"to"`
	Commit string   `json:"commit"`
}

// printTransition reports a moved task: the JSON document, or one line.
func (g *globalOptions) printTransition(e *workflow.Engine, verb string, res *workflow.Result) error {
	if g.JSON {
		return writeJSON(g.io.Out, transitionJSON{Task: toTaskJSON(e, res.Task), From: string(res.From), To: string(res.To), Commit: res.Commit.String()})
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
		b, err := readInput(g.io.In, file)
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
