package main

import (
	"fmt"

	"github.com/spf13/cobra"

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
approved and comment-only pull requests are left alone. Without gh, without
network, or when gh fails, nothing changes and the command exits 1.`,
		Example: `  orch pr poll
  orch pr import T-4k9x2m --reviews reviews.json --comments comments.json`,
		Args: exactArgs(0, "pr poll | pr import ID --reviews FILE --comments FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return &workflow.UsageError{Msg: "orch pr needs a subcommand: poll or import", Hint: "usage: orch pr poll | orch pr import ID --reviews FILE --comments FILE"}
		},
	}
	poll := &cobra.Command{
		Use:   "poll",
		Short: "Check every submitted task's pull request for requested changes",
		Long: `For each provisional task with a pr_number, read the pull request's reviews and
review comments with gh api --paginate, and reject the task when the newest
decisive review requests changes that were not imported yet. Every pull request
is read before anything is written: if gh fails for one, nothing changes.`,
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
	cmd.AddCommand(poll, imp)
	return cmd
}

func runPRImport(o *prOptions, ref string) error {
	if o.Reviews == "" {
		return &workflow.UsageError{Msg: "--reviews FILE is required", Hint: "usage: orch pr import ID --reviews FILE --comments FILE"}
	}
	rdata, err := readInput(o.g.io.In, o.Reviews)
	if err != nil {
		return err
	}
	reviews, err := ghreview.ParseReviews(rdata)
	if err != nil {
		return &workflow.UsageError{Msg: o.Reviews + ": " + err.Error(), Hint: "save it with: gh api --paginate repos/OWNER/REPO/pulls/N/reviews > FILE"}
	}
	var comments []ghreview.Comment
	if o.Comments != "" {
		cdata, err := readInput(o.g.io.In, o.Comments)
		if err != nil {
			return err
		}
		if comments, err = ghreview.ParseComments(cdata); err != nil {
			return &workflow.UsageError{Msg: o.Comments + ": " + err.Error(), Hint: "save it with: gh api --paginate repos/OWNER/REPO/pulls/N/comments > FILE"}
		}
	}
	return o.g.withEngine(func(e *workflow.Engine) error {
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
		return printImports(o.g, []*workflow.PRImport{res})
	})
}

func printImports(g *globalOptions, res []*workflow.PRImport) error {
	if g.JSON {
		if res == nil {
			res = []*workflow.PRImport{}
		}
		return writeJSON(g.io.Out, struct {
			Imports []*workflow.PRImport `json:"imports"`
		}{res})
	}
	for _, r := range res {
		what := fmt.Sprintf("%s: PR #%d", r.Task, r.PR)
		if r.PR == 0 { // pr import for a task without a pr_number
			what = r.Task + ":"
		}
		if r.To != "" {
			fmt.Fprintf(g.io.Out, "%s review %d by %s requested changes: provisional -> %s (%d blocking, %d comments)\n", what, r.Review, r.Reviewer, r.To, r.Blocking, r.Comments)
		} else {
			if r.PR > 0 {
				what += ":"
			}
			fmt.Fprintf(g.io.Out, "%s %s, nothing to import\n", what, r.Outcome)
		}
	}
	if len(res) == 0 {
		fmt.Fprintln(g.io.Err, "no submitted task has a pr_number")
	}
	return nil
}

type prData struct {
	target   workflow.PRTarget
	reviews  []ghreview.Review
	comments []ghreview.Comment
}

func runPRPoll(o *prOptions) error {
	var targets []workflow.PRTarget
	var repoCfg, dir string
	err := o.g.withEngine(func(e *workflow.Engine) error {
		if err := e.RequireInit(); err != nil {
			return err
		}
		targets, repoCfg = e.PRTargets(), e.Config.GitHub.Repo
		dir = e.Store.Repo.WorkTree
		if dir == "" {
			dir = e.Store.Repo.GitDir
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return printImports(o.g, nil)
	}
	// Read every pull request first, without holding the store lock: gh
	// may take seconds, and a failure must change nothing.
	gh := ghreview.New(dir)
	repo, err := gh.Repo(repoCfg)
	if err != nil {
		return ghFailure(err)
	}
	var data []prData
	for _, t := range targets {
		rs, err := gh.Reviews(repo, t.PR)
		if err != nil {
			return ghFailure(err)
		}
		cs, err := gh.Comments(repo, t.PR)
		if err != nil {
			return ghFailure(err)
		}
		data = append(data, prData{t, rs, cs})
	}
	return o.g.withEngine(func(e *workflow.Engine) error {
		var out []*workflow.PRImport
		for _, d := range data {
			s := e.Store.SummaryByID(d.target.ID)
			if s == nil || s.Task.Queue != "provisional" || s.Task.PRNumber != d.target.PR {
				continue // moved on while we read GitHub
			}
			res, err := e.ImportPR(d.target.ID, d.reviews, d.comments)
			if err != nil {
				return err
			}
			out = append(out, res)
		}
		return printImports(o.g, out)
	})
}

// ghFailure explains a gh problem; nothing was changed.
func ghFailure(err error) error {
	return &workflow.ExternalError{Msg: err.Error() + "; nothing was changed", Hint: "check that gh is installed and logged in (gh auth status), or set ORCH_GH; orch pr import works from saved JSON offline"}
}
