package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type submitOptions struct {
	g    *globalOptions
	PR   int
	Note string
}

func newSubmitCmd(g *globalOptions) *cobra.Command {
	o := &submitOptions{g: g}
	cmd := &cobra.Command{
		Use:   "submit [ID] [--pr N] [-m NOTE]",
		Short: "Hand in the work on the task's branch for review",
		Long: `Submit the task for review. ` + workflow.TransitionHelp("submit") + `

Refused (exit 4) while a blocking issue of the last review has no response
(orch respond), and when the task's branch has no new commit since the last
rejection: resubmitting unchanged work is the commonest failure of review loops.
Inside the task's worktree the ID may be omitted.`,
		Example: `  orch submit T-4k9x2m --pr 48 -m "snaps fork start; dedups the handler"
  orch submit            # inside the task's worktree`,
		Args: maxArgs(1, "submit [ID] [--pr N] [-m NOTE]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runSubmit(o, argOr(args, 0)) },
	}
	cmd.Flags().IntVar(&o.PR, "pr", 0, "the pull request number to record")
	cmd.Flags().StringVarP(&o.Note, "message", "m", "", "a note for the reviewer")
	return cmd
}

func runSubmit(o *submitOptions, ref string) error {
	if o.PR < 0 {
		return &workflow.UsageError{Msg: "--pr must be a positive number"}
	}
	return o.g.taskVerb(ref, "submit", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Submit(id, workflow.SubmitOptions{PR: o.PR, Note: o.Note})
	})
}
