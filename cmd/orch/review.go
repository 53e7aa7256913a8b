package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type reviewOptions struct {
	g      *globalOptions
	File   string
	Issues []string
	Reopen []string
	Notes  string
	step   remoteStep
}

func newReviewCmd(g *globalOptions) *cobra.Command {
	o := &reviewOptions{g: g}
	cmd := &cobra.Command{
		Use:   "review ID (-F FILE|- | --issue SEV|TITLE[|LOCATION[|PROBLEM[|FIX[|WHY]]]]...) [--reopen ISSUE]... [-m NOTES]",
		Short: "Review submitted work with structured issues",
		Long: `Record a structured review. ` + workflow.TransitionHelp("review") + `

Issues come from -F (JSON: {"issues": [{"severity", "title", "location",
"problem", "fix", "why", "id", "blocking", "fix_patch"}], "reopen": ["R1.2"],
"notes": "..."}; only a title and a severity or blocking flag are required) or
from repeated --issue flags. CRITICAL and HIGH are blocking; MEDIUM and LOW are
suggestions. The review protocol's other names are recorded as:
` + workflow.SeverityAliases + `.
"blocking" must agree with the severity (a contradiction is refused); given
alone, true is HIGH and false is MEDIUM.

Issues get stable IDs R<round>.<n>. A reviewer's own "id" (like TL-001) is
kept beside it, and orch respond and --reopen accept it where it names one
issue; an id of the form R<round>.<n> must be the one orch gives. "fix_patch"
(a unified diff) is shown under the issue as a diff block.

Verdict: any blocking issue -> rejected (feedback, count, lockout, escalation,
as orch reject); only suggestions -> done as APPROVED_WITH_NOTES; nothing ->
done as APPROVED. On a re-review, earlier issues not listed in reopen are
resolved, and only new blocking issues may be raised. A round that resolves no
earlier blocking issue counts as no progress; review.max_no_progress such
rounds in a row escalate. When the developer fixed none of the open
suggestions, the re-review notes "All suggestions skipped" (for the audit; it
does not block). Who may review is as for orch reject.

` + stepSyncHelp,
		Example: `  orch review T-4k9x2m -F review.json --agent lead
  orch review T-4k9x2m --issue 'HIGH|SQL injection|src/api/users.py:56|input is interpolated|use a parameterised query'
  orch review T-4k9x2m --reopen R1.2 -m "R1.1 fixed; R1.2 still duplicated"
  orch review T-4k9x2m                 # nothing open: APPROVED
  orch review T-4k9x2m -F review.json --sync --agent lead`,
		Args: exactArgs(1, "review ID (-F FILE|- | --issue ...)"),
		RunE: func(cmd *cobra.Command, args []string) error { return runReview(o, args[0]) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "file", "F", "", "read the review JSON from `FILE` (- for stdin)")
	f.StringArrayVar(&o.Issues, "issue", nil, "an issue: 'SEVERITY|TITLE[|LOCATION[|PROBLEM[|FIX[|WHY]]]]' (repeatable)")
	f.StringArrayVar(&o.Reopen, "reopen", nil, "an earlier issue that is still not fixed (repeatable)")
	f.StringVarP(&o.Notes, "message", "m", "", "notes for the author")
	o.step.addFlags(cmd)
	return cmd
}

func runReview(o *reviewOptions, ref string) error {
	in := &workflow.ReviewInput{}
	if o.File != "" {
		if len(o.Issues) > 0 || len(o.Reopen) > 0 || o.Notes != "" {
			return &workflow.UsageError{Msg: "give the review with -F or with flags, not both"}
		}
		data, err := o.g.readInput(o.File)
		if err != nil {
			return err
		}
		if in, err = workflow.ParseReview(o.File, data); err != nil {
			return err
		}
	} else {
		for _, s := range o.Issues {
			is, err := workflow.ParseIssueFlag(s)
			if err != nil {
				return err
			}
			in.Issues = append(in.Issues, is)
		}
		in.Reopen, in.Notes = o.Reopen, o.Notes
	}
	var res *workflow.ReviewResult
	return o.step.run(o.g, "review", func(e *workflow.Engine) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		res, err = e.Review(s.Task.ID, in)
		return err
	}, func(e *workflow.Engine) printer {
		return func(out *output) error {
			if o.g.JSON {
				return out.writeJSON(reviewAnswer{o.g.transition(e, &res.Result), res.Verdict, res.Round, issuesJSON(res.NewIssues),
					nonNil(res.Resolved), nonNil(res.Reopened), res.Progress, res.NoProgressCount, res.Escalated,
					nonNil(res.SuggestionsAdopted), nonNil(res.SuggestionsSkipped), res.AllSuggestionsSkipped})
			}
			fmt.Fprintf(out.Out, "%s: %s (round %d): %s -> %s\n", res.Task.Task.ID, res.Verdict, res.Round, res.From, res.To)
			for _, is := range res.NewIssues {
				fmt.Fprintf(out.Out, "  %s %s %s\n", is.ID, is.Severity, is.Title)
			}
			if len(res.Resolved) > 0 {
				fmt.Fprintf(out.Out, "  resolved: %s\n", strings.Join(res.Resolved, ", "))
			}
			if len(res.Reopened) > 0 {
				fmt.Fprintf(out.Out, "  re-opened: %s\n", strings.Join(res.Reopened, ", "))
			}
			if res.AllSuggestionsSkipped {
				fmt.Fprintf(out.Out, "  %s: %s\n", strings.ToLower(workflow.AllSuggestionsSkipped), strings.Join(res.SuggestionsSkipped, ", "))
			}
			if x := res.Result.Escalation; x != nil {
				fmt.Fprintln(out.Out, escalationLine(res.Task.Task.ID, x))
			}
			return nil
		}
	})
}

// reviewAnswer is orch review's JSON answer: the transition, and what the
// review did.
type reviewAnswer struct {
	transitionJSON
	Verdict         string      `json:"verdict"`
	Round           int         `json:"round"`
	Issues          []issueJSON `json:"issues"` // the new issues
	Resolved        []string    `json:"resolved"`
	Reopened        []string    `json:"reopened"`
	Progress        bool        `json:"progress"`
	NoProgressCount int         `json:"no_progress_count"`
	Escalated       string      `json:"escalated"` // why the task was escalated ("" when it was not)
	Adopted         []string    `json:"suggestions_adopted"`
	Skipped         []string    `json:"suggestions_skipped"`
	AllSkipped      bool        `json:"all_suggestions_skipped"`
}
