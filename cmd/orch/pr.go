package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/ghreview"
	"github.com/orch-tool/orch/workflow"
)

type prOptions struct {
	g        *globalOptions
	Reviews  string
	Comments string
}

func newPRCmd(g *globalOptions) *cobra.Command {
	o := &prOptions{g: g}
	cmd := &cobra.Command{
		Use:   "pr",
		Short: "Import GitHub pull-request reviews (read-only)",
		Long: `Bring GitHub reviews into orch. orch only reads from GitHub, through the gh CLI
(ORCH_GH names the binary; github.repo in config.yaml, else gh repo view).
A pull request whose newest decisive review requests changes rejects its task
with the review as feedback: the review's body, then each line comment as
path:line, BLOCKING when it comes from the changes-requested review or starts
with "BLOCKING:", else a suggestion. A review is never imported twice;
approved and comment-only pull requests are left alone. With land.mode:
github, orch lands work through gh pr merge (orch land) and pr poll records
what GitHub did to approved tasks' pull requests. Without gh or network
nothing changes and the command exits 1.`,
		Example: `  orch pr poll
  orch pr import T-4k9x2m --reviews reviews.json --comments comments.json`,
		Args: exactArgs(0, "pr poll | pr import ID --reviews FILE --comments FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return &workflow.UsageError{Msg: "orch pr needs a subcommand: poll or import", Hint: "usage: orch pr poll | orch pr import ID --reviews FILE --comments FILE"}
		},
	}
	poll := &cobra.Command{
		Use:   "poll",
		Short: "Check submitted tasks' pull requests for requested changes, approved ones for a merge",
		Long: `For each provisional task with a pr_number, read the pull request's reviews and
review comments with gh api --paginate, and reject the task when the newest
decisive review requests changes that were not imported yet. Every pull request
is read before anything is written, and each is imported on its own: one that
gh cannot read, or whose review orch refuses (a body over 64 KiB, control
characters), is reported with its number and the others are imported. Then
the command prints what it imported, names each refused pull request, and
exits 1. With --json it answers every pull request looked at and exits 0:
{"ok": false, "pull_requests": [...]}, each refused one with "outcome":
"refused" and its "message". When gh fails for every pull request (no
network, not logged in), nothing changes.

With land.mode: github it also reads each approved task's pull request with
gh pr view: MERGED makes the task done with the merge commit as its
landed_commit; CLOSED unmerged escalates it; open and CONFLICTING sends it
back to rejected with a landing round (no lockout, counted toward
land.max_failures); any other open one is left approved ("not merged yet").`,
		Example: `  orch pr poll
  ORCH_GH=/usr/local/bin/gh orch pr poll --json`,
		Args: exactArgs(0, "pr poll"),
		RunE: func(cmd *cobra.Command, args []string) error { return runPRPoll(o) },
	}
	imp := &cobra.Command{
		Use:   "import ID --reviews FILE --comments FILE",
		Short: "Import saved GitHub review JSON for a task",
		Long: `The same as pr poll for one task, from saved JSON in GitHub's REST shapes:
the output of gh api repos/OWNER/REPO/pulls/N/reviews and .../comments
(one array, or the concatenated pages of --paginate).`,
		Example: `  gh api --paginate repos/acme/app/pulls/48/reviews > reviews.json
  gh api --paginate repos/acme/app/pulls/48/comments > comments.json
  orch pr import T-4k9x2m --reviews reviews.json --comments comments.json`,
		Args: exactArgs(1, "pr import ID --reviews FILE --comments FILE"),
		RunE: func(cmd *cobra.Command, args []string) error { return runPRImport(o, args[0]) },
	}
	imp.Flags().StringVar(&o.Reviews, "reviews", "", "the pull request's reviews (`FILE`, - for stdin)")
	imp.Flags().StringVar(&o.Comments, "comments", "", "the pull request's review comments (`FILE`)")
	cmd.AddCommand(declare(kindInteractive, poll), declare(kindInteractive, imp))
	return cmd
}

func runPRImport(o *prOptions, ref string) error {
	if o.Reviews == "" {
		return &workflow.UsageError{Msg: "--reviews FILE is required", Hint: "usage: orch pr import ID --reviews FILE --comments FILE"}
	}
	rdata, err := o.g.readInput(o.Reviews)
	if err != nil {
		return err
	}
	reviews, err := ghreview.ParseReviews(rdata)
	if err != nil {
		return &workflow.UsageError{Msg: o.Reviews + ": " + err.Error(), Hint: "save it with: gh api --paginate repos/OWNER/REPO/pulls/N/reviews > FILE"}
	}
	var comments []ghreview.Comment
	if o.Comments != "" {
		cdata, err := o.g.readInput(o.Comments)
		if err != nil {
			return err
		}
		if comments, err = ghreview.ParseComments(cdata); err != nil {
			return &workflow.UsageError{Msg: o.Comments + ": " + err.Error(), Hint: "save it with: gh api --paginate repos/OWNER/REPO/pulls/N/comments > FILE"}
		}
	}
	return o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		if err := workflow.CheckTransition("reject", s.Task.ID, s.Task.Queue); err != nil {
			return err
		}
		res, err := e.ImportPR(s.Task.ID, reviews, comments)
		if err != nil {
			return err
		}
		return printImports(o.g, e, []*workflow.PRImport{res})
	})
}

func printImports(g *globalOptions, e *workflow.Engine, res []*workflow.PRImport) error {
	return printPoll(g, e, res, nil)
}

// prRefusal is a pull request pr poll could not import.
type prRefusal struct {
	Task    string
	PR      int
	Message string
}

// prAnswer is the JSON answer of orch pr poll and pr import: every pull
// request looked at, imported or not; ok is false when one could not be
// imported.
type prAnswer struct {
	OK           bool     `json:"ok"`
	Count        int      `json:"count"`
	PullRequests []prJSON `json:"pull_requests"`
}

// prJSON is one pull request of a submitted task.
type prJSON struct {
	TaskID   string       `json:"task_id"`
	Task     *answer.Task `json:"task"`
	PRNumber int          `json:"pr_number"` // 0 for pr import of a task without a pr_number
	Imported bool         `json:"imported"`  // a review requesting changes was imported
	Outcome  string       `json:"outcome"`   // changes requested, approved, no reviews, only comments, already imported; refused; land.mode github: merged, closed unmerged, conflicting, not merged yet
	ReviewID int64        `json:"review_id"`
	Reviewer string       `json:"reviewer"`
	Blocking int          `json:"blocking"`
	Comments int          `json:"comments"`
	To       string       `json:"to"`      // the task's new queue when imported
	Commit   string       `json:"commit"`  // the import's commit
	Message  string       `json:"message"` // why it was refused
	// LandedCommit is a merged pull request's merge commit, the task's
	// landed_commit now ("" otherwise).
	LandedCommit string `json:"landed_commit"`
}

// prDetails are the lines of a poll's outcome, for an error's details
// when the poll stopped half-way.
func prDetails(res []*workflow.PRImport, refused []prRefusal) []string {
	var out []string
	for _, r := range res {
		out = append(out, fmt.Sprintf("%s: PR #%d: %s (imported; commit %s)", r.Task, r.PR, r.Outcome, shortText(r.Commit)))
	}
	for _, r := range refused {
		out = append(out, fmt.Sprintf("%s: PR #%d not imported: %s", r.Task, r.PR, r.Message))
	}
	return out
}

// printPoll prints what pr poll or pr import did, and names each refused
// pull request (then, without --json, the command exits 1).
func printPoll(g *globalOptions, e *workflow.Engine, res []*workflow.PRImport, refused []prRefusal) error {
	if g.JSON {
		var ids []string
		for _, r := range res {
			ids = append(ids, r.Task)
		}
		for _, r := range refused {
			ids = append(ids, r.Task)
		}
		refs := map[string]*answer.Task{}
		if e != nil {
			refs = g.taskRefs(e, ids)
		}
		prs := []prJSON{}
		for _, r := range res {
			prs = append(prs, prJSON{TaskID: r.Task, Task: refs[r.Task], PRNumber: r.PR, Imported: r.To != "", Outcome: string(r.Outcome),
				ReviewID: r.Review, Reviewer: r.Reviewer, Blocking: r.Blocking, Comments: r.Comments, To: r.To, Commit: r.Commit, LandedCommit: r.Landed})
		}
		for _, r := range refused {
			prs = append(prs, prJSON{TaskID: r.Task, Task: refs[r.Task], PRNumber: r.PR, Outcome: "refused", Message: r.Message})
		}
		// The answer says what was imported and what was not: ok is
		// false when a pull request was refused (exit 0, as every answer).
		return g.out().writeJSON(prAnswer{len(refused) == 0, len(prs), prs})
	}
	for _, r := range res {
		what := fmt.Sprintf("%s: PR #%d", r.Task, r.PR)
		if r.PR == 0 { // pr import for a task without a pr_number
			what = r.Task + ":"
		}
		if r.To != "" && r.Review == 0 { // an approved task's pull request (land.mode github)
			line := fmt.Sprintf("%s: PR #%d %s: approved -> %s", r.Task, r.PR, r.Outcome, r.To)
			if r.Landed != "" {
				line += " (landed_commit " + shortText(r.Landed) + ")"
			}
			fmt.Fprintln(g.io.Out, line)
		} else if r.To != "" {
			fmt.Fprintf(g.io.Out, "%s review %d by %s requested changes: provisional -> %s (%d blocking, %d comments)\n", what, r.Review, r.Reviewer, r.To, r.Blocking, r.Comments)
		} else {
			if r.PR > 0 {
				what += ":"
			}
			fmt.Fprintf(g.io.Out, "%s %s, nothing to import\n", what, r.Outcome)
		}
	}
	for _, r := range refused {
		fmt.Fprintf(g.io.Err, "orch: %s: PR #%d not imported: %s\n", r.Task, r.PR, r.Message)
	}
	if len(res)+len(refused) == 0 {
		fmt.Fprintln(g.io.Err, "no submitted task has a pr_number")
	}
	if len(refused) > 0 {
		fmt.Fprintln(g.io.Err, "hint: the other pull requests were imported; fix the refused ones on GitHub (or import a cleaned copy of their JSON with orch pr import ID --reviews FILE --comments FILE) and poll again")
		return &silentExit{code: exitFailure}
	}
	return nil
}

func runPRPoll(o *prOptions) error {
	poll, err := workflow.PollPRs(o.g.engineOptions(false), false)
	if err != nil {
		return err
	}
	refused := make([]prRefusal, len(poll.Refused))
	for i, r := range poll.Refused {
		refused[i] = prRefusal(r)
	}
	return o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		if poll.Stopped != nil {
			// The repository itself failed: what was imported before is
			// committed: say so.
			if o.g.JSON {
				return &detailed{err: poll.Stopped, details: prDetails(poll.Imports, refused)}
			}
			_ = printPoll(o.g, e, poll.Imports, refused)
			return poll.Stopped
		}
		return printPoll(o.g, e, poll.Imports, refused)
	})
}
