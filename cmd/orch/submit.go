package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/ghreview"
	"github.com/orch-tool/orch/workflow"
)

type submitOptions struct {
	g        *globalOptions
	PR       int
	CreatePR bool
	Note     string
	step     remoteStep
}

func newSubmitCmd(g *globalOptions) *cobra.Command {
	o := &submitOptions{g: g}
	cmd := &cobra.Command{
		Use:   "submit [ID] [--pr N | --create-pr] [-m NOTE]",
		Short: "Hand in the work on the task's branch for review",
		Long: `Submit the task for review. ` + workflow.TransitionHelp("submit") + `

Refused (exit 4) while a blocking issue of the last review has no response
(orch respond), and when the task's branch has no new commit since the last
rejection: resubmitting unchanged work is the commonest failure of review loops.
Inside the task's worktree the ID may be omitted.

--create-pr runs gh pr create --draft for the task's branch (push the branch
first) and records the pull request's number; it is only tried once every
check of submit has passed, and when gh fails nothing changes.

` + holderSyncHelp + ` The task's branch is pushed to the remote first (never
forced), so that a reviewer on another clone has the work.`,
		Example: `  orch submit T-4k9x2m --pr 48 -m "snaps fork start; dedups the handler"
  orch submit --create-pr   # inside the task's worktree, after git push`,
		Args: maxArgs(1, "submit [ID] [--pr N | --create-pr] [-m NOTE]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runSubmit(o, argOr(args, 0)) },
	}
	cmd.Flags().IntVar(&o.PR, "pr", 0, "the pull request number to record")
	cmd.Flags().BoolVar(&o.CreatePR, "create-pr", false, "open a draft pull request with gh and record its number")
	cmd.Flags().StringVarP(&o.Note, "message", "m", "", "a note for the reviewer")
	o.step.addFlags(cmd)
	return cmd
}

func runSubmit(o *submitOptions, ref string) error {
	if o.PR < 0 {
		return &workflow.UsageError{Msg: "--pr must be a positive number"}
	}
	if o.CreatePR && o.PR > 0 {
		return &workflow.UsageError{Msg: "give --pr N or --create-pr, not both"}
	}
	pr := o.PR
	if o.CreatePR {
		var err error
		if pr, ref, err = createPR(o, ref); err != nil {
			return err
		}
	}
	return o.step.taskStep(o.g, ref, "submit", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		if o.step.Sync {
			// The work before the verb that names it.
			if err := e.PushBranchOf(id, o.step.Remote); err != nil {
				return nil, err
			}
		}
		return e.Submit(id, workflow.SubmitOptions{PR: pr, Note: o.Note})
	})
}

// createPR checks that the submission would pass, then opens the pull
// request without holding the store lock.
func createPR(o *submitOptions, ref string) (int, string, error) {
	var branch, base, title, id, repoCfg, dir string
	prNow := 0
	// The check reads only: it may run twice (runner.go).
	err := o.g.run(func(e *workflow.Engine) (printer, error) {
		s, err := e.Lookup(ref)
		if err != nil {
			return nil, err
		}
		t, err := e.SubmitCheck(s.Task.ID, workflow.SubmitOptions{Note: o.Note})
		if err != nil {
			return nil, err
		}
		id, branch, title, prNow = t.Task.ID, t.Task.Branch, t.Task.Title, t.Task.PRNumber
		base = t.Task.BaseBranch
		if base == "" {
			base = e.Config.BaseBranch
		}
		repoCfg = e.Config.GitHub.Repo
		dir = e.Store.Repo.WorkTree
		if dir == "" {
			dir = e.Store.Repo.GitDir
		}
		return nil, nil
	})
	if err != nil {
		return 0, "", err
	}
	if prNow > 0 {
		return 0, "", &workflow.RuleError{Rule: "pr_exists", Msg: fmt.Sprintf("%s already has PR #%d: push to its branch instead of opening another", id, prNow), Hint: "orch submit " + id}
	}
	gh := ghreview.New(dir)
	repo := ""
	if repoCfg != "" {
		if repo, err = gh.Repo(repoCfg); err != nil {
			return 0, "", workflow.GitHubFailure(err)
		}
	}
	body := fmt.Sprintf("orch task %s: %s\n\nReview it with `orch approve %s` or `orch reject %s -m ...`, or with a GitHub review: `orch pr poll` imports requested changes.", id, title, id, id)
	n, url, err := gh.CreatePR(repo, branch, base, id+": "+title, body)
	if err != nil {
		return 0, "", workflow.GitHubFailure(err)
	}
	fmt.Fprintf(o.g.io.Err, "opened draft PR #%d: %s\n", n, url)
	return n, id, nil
}
