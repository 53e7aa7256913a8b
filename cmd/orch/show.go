package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/coordinator"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

type showOptions struct {
	g *globalOptions
}

func newShowCmd(g *globalOptions) *cobra.Command {
	o := &showOptions{g: g}
	cmd := &cobra.Command{
		Use:   "show [ID]",
		Short: "Print a task",
		Long: `Print a task file as committed on the state branch. ID may be any unique
prefix of the task's ID; inside a task's worktree it may be omitted.`,
		Example: `  orch show T-4k9x2m
  orch show 4k9x --json
  orch show T-4k9x2m --json=title,queue,rounds
  orch show T-4k9x2m --jq .task.branch`,
		Args: maxArgs(1, "show [ID]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runShow(o, argOr(args, 0)) },
	}
	return cmd
}

func argOr(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

type sectionJSON struct {
	Level int    `json:"level"`
	Title string `json:"title"`
	Line  int    `json:"line"`
}

// roundJSON is one round of review feedback (or the approving review),
// newest first, as the task's body holds it.
type roundJSON struct {
	Round    int          `json:"round"`
	Verdict  string       `json:"verdict"`
	Approval bool         `json:"approval"`
	Line     int          `json:"line"`
	Sources  []sourceJSON `json:"sources"`
}

// sourceJSON is one "### From ..." subsection of a round.
type sourceJSON struct {
	From   string      `json:"from"`
	Time   answer.Time `json:"time"`
	Text   string      `json:"text"` // free text, without the issues
	Issues []issueJSON `json:"issues"`
}

// issueJSON is one structured review issue.
type issueJSON struct {
	ID              string         `json:"id"`
	Severity        string         `json:"severity"`
	Blocking        bool           `json:"blocking"`
	Location        string         `json:"location"`
	Title           string         `json:"title"`
	Problem         string         `json:"problem"`
	Fix             string         `json:"fix"`
	Why             string         `json:"why"`
	ReviewerIssueID string         `json:"reviewer_issue_id"`
	FixPatch        string         `json:"fix_patch"`
	Resolved        bool           `json:"resolved"`
	Responses       []responseJSON `json:"responses"`
	Line            int            `json:"line"` // in the task file (0 for a new issue not yet read back)
}

type responseJSON struct {
	Status string `json:"status"` // FIXED | DEFERRED | REJECTED
	Commit string `json:"commit"`
	Text   string `json:"text"`
}

func issuesJSON(is []taskfile.Issue) []issueJSON {
	out := make([]issueJSON, len(is))
	for i, x := range is {
		rs := make([]responseJSON, len(x.Responses))
		for k, r := range x.Responses {
			rs[k] = responseJSON{r.Status, r.Commit, r.Text}
		}
		out[i] = issueJSON{x.ID, x.Severity, x.Blocking, x.Location, x.Title, x.Problem, x.Fix, x.Why, x.ReviewerIssueID, x.FixPatch, x.Resolved, rs, x.Line}
	}
	return out
}

func roundsJSON(rs []taskfile.Round) []roundJSON {
	out := make([]roundJSON, len(rs))
	for i, r := range rs {
		srcs := make([]sourceJSON, len(r.Sources))
		for k, src := range r.Sources {
			srcs[k] = sourceJSON{src.From, answer.Time(src.Time), src.Text, issuesJSON(src.Issues)}
		}
		out[i] = roundJSON{r.Number, r.Verdict, r.Approval, r.Line, srcs}
	}
	return out
}

func runShow(o *showOptions, ref string) error {
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		s, _, err := e.LookupArchived(ref)
		if err != nil {
			return nil, err
		}
		t, err := e.Load(s)
		if err != nil {
			return nil, err
		}
		if !o.g.JSON {
			// Shown, not copied: control characters a file holds are made
			// visible (the file's own bytes are --json's content).
			return func(out *output) error {
				_, err := io.WriteString(out.Out, text.Visible(string(t.File.Src)))
				return err
			}, nil
		}
		d := o.g.showJSON(e, t)
		r, err := e.RefusalAwaiting(t.Summary)
		if err != nil {
			return nil, err
		}
		d.Refusal = pendingRefusal(r)
		return func(out *output) error { return out.writeJSON(d) }, nil
	})
}

// showAnswer is orch show's JSON answer: the task, what it waits for, a
// refusal awaiting a decision, its feedback rounds and sections, and its
// file.
type showAnswer struct {
	Task       answer.Task         `json:"task"`
	WaitingFor []string            `json:"waiting_for"` // IDs of the dependencies not done yet
	Refusal    *pendingRefusalJSON `json:"refusal"`     // null unless a refusal awaits orch decide
	Rounds     []roundJSON         `json:"rounds"`
	Sections   []sectionJSON       `json:"sections"`
	Body       string              `json:"body"`    // the markdown after the frontmatter
	Content    string              `json:"content"` // the whole file
	Logs       []logJSON           `json:"logs"`    // orch run's logs of the task's runs on this clone (orch logs)
	Runs       []runJSON           `json:"runs"`    // orch run's runs of the task, on every clone, oldest first
	Spent      spentJSON           `json:"spent"`   // what they spent together
}

// runJSON is one run of orch run (workflow.TaskRun).
type runJSON struct {
	Time             answer.Time `json:"time"`
	Agent            string      `json:"agent"`
	Role             string      `json:"role"`
	Attempt          int         `json:"attempt"`
	Harness          string      `json:"harness"`
	DurationMS       int64       `json:"duration_ms"`
	Exit             int         `json:"exit"`
	Transition       bool        `json:"transition"` // the agent moved the task itself
	Cause            string      `json:"cause"`      // how the harness said it ended: "", rate_limit, auth, ...
	Words            string      `json:"words"`
	InputTokens      int64       `json:"input_tokens"`
	OutputTokens     int64       `json:"output_tokens"`
	CacheReadTokens  int64       `json:"cache_read_tokens"`
	CacheWriteTokens int64       `json:"cache_write_tokens"`
	CostUSD          float64     `json:"cost_usd"`
}

// spentJSON is what runs spent together.
type spentJSON struct {
	Runs         int     `json:"runs"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

func runsJSON(runs []workflow.TaskRun) ([]runJSON, spentJSON) {
	out := []runJSON{}
	var sp spentJSON
	for _, r := range runs {
		out = append(out, runJSON{answer.Time(r.Time), r.Agent, r.Role, r.Attempt, r.Harness, r.DurationMS, r.Exit, r.Transition, r.Cause, r.Words,
			r.Input, r.Output, r.CacheRead, r.CacheWrite, r.CostUSD})
		sp.Runs++
		sp.InputTokens += r.Input
		sp.OutputTokens += r.Output
		sp.CostUSD += r.CostUSD
	}
	return out, sp
}

func (g *globalOptions) showJSON(e *workflow.Engine, t *workflow.Task) showAnswer {
	d := showAnswer{Task: g.loadedTask(e, t), WaitingFor: []string{}, Body: string(t.File.Body()), Content: string(t.File.Src),
		Logs: logsJSON(coordinator.Logs(g.privDir(), t.Task.ID))}
	if ok, pending := e.DepsDone(&t.Summary.Task); !ok {
		d.WaitingFor = nonNil(pending)
	}
	d.Runs, d.Spent = runsJSON(e.TaskRuns(&t.Summary.Task))
	d.Rounds = roundsJSON(t.File.FeedbackRounds())
	d.Sections = []sectionJSON{}
	for _, sec := range t.File.Sections() {
		d.Sections = append(d.Sections, sectionJSON{Level: sec.Level, Title: sec.Title, Line: sec.StartLine})
	}
	return d
}
