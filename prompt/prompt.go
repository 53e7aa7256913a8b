// Package prompt renders the prompts agents read: embedded default
// templates for each role, overridable by prompts/<role>.md on the state
// branch. Task text is passed to templates as data and never parsed as
// template code.
package prompt

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/orch-tool/orch/taskfile"
)

//go:embed templates/*.md
var templates embed.FS

// Roles with an embedded default template.
var Roles = []string{"implementer", "reviewer"}

// Default returns the embedded template of a role ("" if there is none).
func Default(role string) string {
	b, err := templates.ReadFile("templates/" + role + ".md")
	if err != nil {
		return ""
	}
	return string(b)
}

// Data is what a template sees. Every field holding task or review text is
// plain data: text/template does not interpret it.
type Data struct {
	Agent          string
	Role           string
	Task           Task
	Attempt        int
	Round          int // the review round this review would be
	IsRetry        bool
	IsContinuation bool
	RejectionCount int
	MaxRejections  int
	RejectionsLeft int
	NextRejection  int
	// NoProgressCount is how many review rounds in a row resolved no
	// blocking issue; NoProgressLeft more such rounds escalate the task
	// (review.max_no_progress). Structured reviews only.
	NoProgressCount int
	MaxNoProgress   int
	NoProgressLeft  int
	LockoutOn       bool
	LatestRound     *Round
	OlderRounds     []Round
	// ContinuationNote holds every note left since the newest review round
	// (a pause, then a sweep of the next claim), newest first.
	ContinuationNote string
	OverrideMessage  string
	ReopenNote       string // why a person reopened the failed task
	// SubmitNote is the author's note with the newest submission (orch
	// submit -m), for the reviewer.
	SubmitNote string
	// LandingRetry: the work was approved at ApprovedCommit, then sent
	// back by the landing or the check; the reviewer reads what changed
	// since.
	LandingRetry   bool
	ApprovedCommit string
	Worktree       string
	Commands       Commands
}

// Task is the task as a prompt shows it.
type Task struct {
	ID          string
	Title       string
	Queue       string
	Priority    string
	Branch      string
	BaseBranch  string
	PRNumber    int
	SubmittedBy string
	Path        string
	Body        string // the description, without review and note sections
	DependsOn   []string
	Labels      []string
}

// Round is one review round, blocking issues first.
type Round struct {
	Number int
	// Kind is what sent the work back: "rejection" (a review) or
	// "landing" (a conflict or a red check).
	Kind        string
	Verdict     string
	Blocking    []taskfile.Issue
	Suggestions []taskfile.Issue
	Notes       []Note
}

// Note is free text from one source of a round.
type Note struct {
	From    string
	Text    string
	Summary string
}

// Commands are the exact commands the agent runs next.
type Commands struct {
	Respond []string
	Submit  string
	Pause   string
	Refuse  string
	Approve string
	Reject  string
	Review  string
	Diff    string
}

// NewRound converts a parsed feedback round for a template.
func NewRound(r taskfile.Round) Round {
	out := Round{Number: r.Number, Kind: "rejection", Verdict: r.Verdict}
	if r.Landing {
		out.Kind = "landing"
	}
	for _, s := range r.Sources {
		for _, is := range taskfile.SortIssues(s.Issues) {
			if is.Blocking {
				out.Blocking = append(out.Blocking, is)
			} else {
				out.Suggestions = append(out.Suggestions, is)
			}
		}
		if t := strings.TrimSpace(s.Text); t != "" {
			sum, _, _ := strings.Cut(t, "\n")
			if len(sum) > 100 {
				sum = sum[:97] + "..."
			}
			out.Notes = append(out.Notes, Note{From: s.From, Text: t, Summary: sum})
		}
	}
	return out
}

// funcs are the functions templates may call.
var funcs = template.FuncMap{
	// patch shows a review issue's suggested patch as an indented diff
	// block, fenced so that nothing in it ends the block.
	"patch": func(p string) string { return strings.TrimRight(taskfile.RenderPatch(p, "  "), "\n") },
}

// Render renders the prompt of a role. override is the content of
// prompts/<role>.md on the state branch, if any.
func Render(role string, override []byte, d Data) (string, error) {
	src := string(override)
	name := "prompts/" + role + ".md"
	if len(bytes.TrimSpace(override)) == 0 {
		src = Default(role)
		name = "(embedded " + role + " template)"
	}
	if src == "" {
		return "", fmt.Errorf("no prompt template for role %q: add prompts/%s.md to the state branch (orch edit prompts/%s.md)", role, role, role)
	}
	tmpl, err := template.New(name).Option("missingkey=error").Funcs(funcs).Parse(src)
	if err != nil {
		return "", &taskfile.ParseError{Path: name, Msg: "template: " + err.Error()}
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, d); err != nil {
		return "", &taskfile.ParseError{Path: name, Msg: "template: " + err.Error()}
	}
	return strings.TrimSpace(b.String()) + "\n", nil
}

// Check parses a prompt template and runs it on sample data, for validating
// hand edits of prompts/<role>.md.
func Check(path string, data []byte) error {
	tmpl, err := template.New(path).Option("missingkey=error").Funcs(funcs).Parse(string(data))
	if err != nil {
		return &taskfile.ParseError{Path: path, Msg: "template: " + err.Error()}
	}
	sample := Data{Agent: "agent", Role: "implementer", Task: Task{ID: "T-000000", Title: "t", Branch: "b", BaseBranch: "main"}, Attempt: 1, MaxRejections: 3, RejectionsLeft: 3, NextRejection: 1, MaxNoProgress: 2, NoProgressLeft: 2,
		LatestRound: &Round{Number: 1}}
	if err := tmpl.Execute(&strings.Builder{}, sample); err != nil {
		return &taskfile.ParseError{Path: path, Msg: "template: " + err.Error()}
	}
	return nil
}
