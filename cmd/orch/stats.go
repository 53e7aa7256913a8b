package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

type statsOptions struct {
	g     *globalOptions
	Since string
	Top   int
}

func newStatsCmd(g *globalOptions) *cobra.Command {
	o := &statsOptions{g: g}
	cmd := &cobra.Command{
		Use:   "stats [--since DATE]",
		Short: "Rejections, refusals, reviews, answers, decisions and escalations, from the event log",
		Long: fmt.Sprintf(`Summarise the event log: rejections by author and task; refusals by
reason, agent and task; the commonest blocking factors; decisions and the
override rate (overrides / decisions: how often refusals were not justified);
the average number of review rounds to approval; escalations by reason.

The review loop: structured reviews by verdict, their issues by severity and
per review (the newest --top); suggestions adopted (answered FIXED) or skipped
at re-review, and the re-reviews that noted "All suggestions skipped"; each
reviewer's decisions (review, reject, approve) and the share that requested
changes. The developers' answers (orch respond), each answer to an issue in a
round counted once: fixed, deferred and rejected by developer, and the share of
blocking issues each rejected.

Warnings: a developer who rejected more than %.0f%% of the blocking issues it
answered (at least %d of them); a reviewer who requested changes in more than
%.0f%% of its reviews (at least %d of them).`, 100*workflow.DeveloperFlagShare, workflow.DeveloperFlagMin, 100*workflow.ReviewerFlagRate, workflow.ReviewerFlagMin),
		Example: `  orch stats
  orch stats --since 2026-02-01 --json`,
		Args: exactArgs(0, "stats [--since DATE]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runStats(o) },
	}
	cmd.Flags().StringVar(&o.Since, "since", "", "only events at or after DATE (2026-02-01 or RFC 3339)")
	cmd.Flags().IntVar(&o.Top, "top", 10, "how many agents, tasks and blockers to list")
	return cmd
}

func runStats(o *statsOptions) error {
	var since time.Time
	if o.Since != "" {
		var err error
		if since, err = taskfile.ParseTime(o.Since); err != nil {
			return &workflow.UsageError{Msg: fmt.Sprintf("--since %q is not a date", o.Since), Hint: "like 2026-02-01 or 2026-02-01T10:00:00Z"}
		}
	}
	return o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		st, err := e.Stats(since, o.Top)
		if err != nil {
			return err
		}
		if o.g.JSON {
			return o.g.out().writeJSON(o.g.statsJSON(e, st))
		}
		w := o.g.io.Out
		fmt.Fprintf(w, "events: %d", st.Events)
		if st.Since != "" {
			fmt.Fprintf(w, " since %s", st.Since)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "\nrejections: %d\n", st.Rejections.Total)
		printCounts(w, "by author", st.Rejections.ByAgent)
		printCounts(w, "by task", st.Rejections.ByTask)
		fmt.Fprintf(w, "\nrefusals: %d valid, %d invalid\n", st.Refusals.Total, st.InvalidRefusals)
		printCounts(w, "by reason", st.Refusals.ByReason)
		printCounts(w, "by agent", st.Refusals.ByAgent)
		printCounts(w, "by task", st.Refusals.ByTask)
		printCounts(w, "common blockers", st.CommonBlockers)
		var ds []workflow.Count
		for k, v := range st.Decisions {
			ds = append(ds, workflow.Count{Key: k, Count: v})
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i].Key < ds[j].Key })
		fmt.Fprintf(w, "\ndecisions:\n")
		printCounts(w, "", ds)
		fmt.Fprintf(w, "  override rate: %.0f%%\n", st.OverrideRate*100)
		fmt.Fprintf(w, "\napprovals: %d, average review rounds to approval: %.2f\n", st.Approvals, st.AvgRoundsToApproval)
		printReviews(w, &st.Reviews)
		printResponses(w, &st.Responses)
		fmt.Fprintf(w, "\nescalations: %d\n", st.Escalations.Total)
		printCounts(w, "by reason", st.Escalations.ByReason)
		printSpend(w, &st.Spend)
		if len(st.Warnings) > 0 {
			fmt.Fprintf(w, "\nwarnings:\n")
			for _, wn := range st.Warnings {
				fmt.Fprintf(w, "  %s\n", wn.Message)
			}
		}
		return nil
	})
}

func printCounts(w io.Writer, title string, cs []workflow.Count) {
	if len(cs) == 0 {
		return
	}
	if title != "" {
		fmt.Fprintf(w, "  %s:\n", title)
	}
	for _, c := range cs {
		fmt.Fprintf(w, "    %4d  %s\n", c.Count, c.Key)
	}
}

// printReviews writes the review loop's figures.
func printReviews(w io.Writer, r *workflow.ReviewStats) {
	fmt.Fprintf(w, "\nreviews: %d", r.Total)
	if r.Total > 0 {
		fmt.Fprintf(w, " (%s)", sortedCounts(r.ByVerdict))
	}
	fmt.Fprintln(w)
	if r.Total > 0 {
		fmt.Fprintf(w, "  issues: %d, %.2f per review", r.Issues, r.AvgIssuesPerReview)
		if r.Issues > 0 {
			var sev []string
			for _, s := range []string{"CRITICAL", "HIGH", "MEDIUM", "LOW"} {
				if n := r.BySeverity[s]; n > 0 {
					sev = append(sev, fmt.Sprintf("%s %d", s, n))
				}
			}
			fmt.Fprintf(w, " (%s)", strings.Join(sev, ", "))
		}
		fmt.Fprintln(w)
	}
	if n := r.SuggestionsAdopted + r.SuggestionsSkipped; n > 0 {
		fmt.Fprintf(w, "  suggestions at re-review: %d adopted, %d skipped (%.0f%% adopted); all skipped in %d re-review(s)\n",
			r.SuggestionsAdopted, r.SuggestionsSkipped, 100*r.SuggestionAdoptionRate, r.AllSuggestionsSkipped)
	}
	if len(r.Recent) > 0 {
		fmt.Fprintf(w, "  per review, newest first:\n")
		for _, c := range r.Recent {
			fmt.Fprintf(w, "    %s round %d by %s: %s, %d issue(s) (%d blocking, %d suggestion(s)), %d re-opened, %d resolved\n",
				c.Task, c.Round, c.Reviewer, c.Verdict, c.Issues, c.Blocking, c.Suggestions, c.Reopened, c.Resolved)
		}
	}
	if len(r.ByReviewer) > 0 {
		fmt.Fprintf(w, "  by reviewer:\n")
		for _, c := range r.ByReviewer {
			flag := ""
			if c.Flagged {
				flag = "  [unusually high]"
			}
			fmt.Fprintf(w, "    %s: %d review(s), %d requested changes (%.0f%%)%s\n", c.Reviewer, c.Reviews, c.ChangesRequested, 100*c.RejectionRate, flag)
		}
	}
}

// printResponses writes the developers' answers.
func printResponses(w io.Writer, r *workflow.ResponseStats) {
	fmt.Fprintf(w, "\nanswers to review issues: %d (%d fixed, %d deferred, %d rejected)\n", r.Total, r.Fixed, r.Deferred, r.Rejected)
	if r.BlockingAnswered > 0 {
		fmt.Fprintf(w, "  blocking issues rejected: %d of %d (%.0f%%)\n", r.BlockingRejected, r.BlockingAnswered, 100*r.BlockingRejectedShare)
	}
	if len(r.ByDeveloper) > 0 {
		fmt.Fprintf(w, "  by developer:\n")
		for _, d := range r.ByDeveloper {
			flag := ""
			if d.Flagged {
				flag = "  [rejects most blocking issues]"
			}
			fmt.Fprintf(w, "    %s: %d fixed, %d deferred, %d rejected; blocking rejected %d of %d%s\n",
				d.Developer, d.Fixed, d.Deferred, d.Rejected, d.BlockingRejected, d.BlockingAnswered, flag)
		}
	}
}

// sortedCounts is "KEY n, KEY n" in key order.
func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// statsAnswer is orch stats' JSON answer. Where it names a task (by_task,
// reviews.recent) it gives task_id and the task object (null when the task
// is no longer on the state branch).
type statsAnswer struct {
	Since               answer.Time            `json:"since"` // null without --since
	Events              int                    `json:"events"`
	Rejections          breakdownJSON          `json:"rejections"`
	Refusals            breakdownJSON          `json:"refusals"`
	InvalidRefusals     int                    `json:"invalid_refusals"`
	CommonBlockers      []workflow.Count       `json:"common_blockers"`
	Decisions           map[string]int         `json:"decisions"`
	OverrideRate        float64                `json:"override_rate"`
	Approvals           int                    `json:"approvals"`
	AvgRoundsToApproval float64                `json:"avg_review_rounds_to_approval"`
	Reviews             reviewStatsJSON        `json:"reviews"`
	Responses           workflow.ResponseStats `json:"responses"`
	Warnings            []workflow.Warning     `json:"warnings"`
	Escalations         breakdownJSON          `json:"escalations"`
	Spend               workflow.Spend         `json:"spend"`
}

type breakdownJSON struct {
	Total    int              `json:"total"`
	ByReason []workflow.Count `json:"by_reason"`
	ByAgent  []workflow.Count `json:"by_agent"`
	ByTask   []taskCountJSON  `json:"by_task"`
}

type taskCountJSON struct {
	TaskID string       `json:"task_id"`
	Task   *answer.Task `json:"task"`
	Count  int          `json:"count"`
}

// reviewStatsJSON is workflow.ReviewStats as it is, but for recent: each
// review with its task object.
type reviewStatsJSON struct {
	workflow.ReviewTotals
	Recent []reviewCountJSON `json:"recent"`
	workflow.SuggestionUptake
	ByReviewer []workflow.ReviewerStats `json:"by_reviewer"`
}

type reviewCountJSON struct {
	TaskID      string       `json:"task_id"`
	Task        *answer.Task `json:"task"`
	Round       int          `json:"round"`
	Reviewer    string       `json:"reviewer"`
	Time        answer.Time  `json:"time"`
	Verdict     string       `json:"verdict"`
	Issues      int          `json:"issues"`
	Blocking    int          `json:"blocking"`
	Suggestions int          `json:"suggestions"`
	Reopened    int          `json:"reopened"`
	Resolved    int          `json:"resolved"`
}

func (g *globalOptions) statsJSON(e *workflow.Engine, st *workflow.Stats) statsAnswer {
	var ids []string
	for _, b := range []*workflow.Breakdown{&st.Rejections, &st.Refusals, &st.Escalations} {
		for _, c := range b.ByTask {
			ids = append(ids, c.Key)
		}
	}
	for _, r := range st.Reviews.Recent {
		ids = append(ids, r.Task)
	}
	refs := g.taskRefs(e, ids)
	breakdown := func(b *workflow.Breakdown) breakdownJSON {
		out := breakdownJSON{Total: b.Total, ByReason: nonNilCounts(b.ByReason), ByAgent: nonNilCounts(b.ByAgent), ByTask: []taskCountJSON{}}
		for _, c := range b.ByTask {
			out.ByTask = append(out.ByTask, taskCountJSON{c.Key, refs[c.Key], c.Count})
		}
		return out
	}
	rv := &st.Reviews
	reviews := reviewStatsJSON{rv.ReviewTotals, []reviewCountJSON{}, rv.SuggestionUptake, rv.ByReviewer}
	reviews.ByVerdict, reviews.BySeverity = nonNilMap(rv.ByVerdict), nonNilMap(rv.BySeverity)
	if reviews.ByReviewer == nil {
		reviews.ByReviewer = []workflow.ReviewerStats{}
	}
	for _, c := range rv.Recent {
		reviews.Recent = append(reviews.Recent, reviewCountJSON{c.Task, refs[c.Task], c.Round, c.Reviewer, answer.TimeText(c.Time), c.Verdict,
			c.Issues, c.Blocking, c.Suggestions, c.Reopened, c.Resolved})
	}
	responses := st.Responses
	if responses.ByDeveloper == nil {
		responses.ByDeveloper = []workflow.DeveloperAnswers{}
	}
	for i := range responses.ByDeveloper {
		responses.ByDeveloper[i].Tasks = nonNil(responses.ByDeveloper[i].Tasks)
	}
	warnings := st.Warnings
	if warnings == nil {
		warnings = []workflow.Warning{}
	}
	since := answer.Time{}
	if st.Since != "" {
		since = answer.TimeText(st.Since)
	}
	return statsAnswer{since, st.Events, breakdown(&st.Rejections), breakdown(&st.Refusals), st.InvalidRefusals, nonNilCounts(st.CommonBlockers),
		nonNilMap(st.Decisions), st.OverrideRate, st.Approvals, st.AvgRoundsToApproval, reviews, responses, warnings, breakdown(&st.Escalations), st.Spend}
}

func nonNilCounts(c []workflow.Count) []workflow.Count {
	if c == nil {
		return []workflow.Count{}
	}
	return c
}

func nonNilMap(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

// printSpend prints what orch run's runs spent: in all, by agent, by day,
// and the costliest tasks.
func printSpend(w io.Writer, sp *workflow.Spend) {
	if sp.Runs == 0 {
		return
	}
	line := func(t workflow.SpendTotal) string {
		return fmt.Sprintf("%d run(s), %d tokens in, %d out, $%.2f", t.Runs, t.InputTokens, t.OutputTokens, t.CostUSD)
	}
	fmt.Fprintf(w, "\nspent by orch run: %s\n", line(sp.SpendTotal))
	for _, part := range []struct {
		what string
		list []workflow.SpendBy
	}{{"by agent", sp.ByAgent}, {"by day", sp.ByDay}, {"by task", sp.ByTask}} {
		if len(part.list) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s:\n", part.what)
		for _, b := range part.list {
			fmt.Fprintf(w, "    %-12s %s\n", b.Key, line(b.SpendTotal))
		}
	}
}
