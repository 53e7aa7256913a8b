package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type requeueOptions struct {
	g  *globalOptions
	To string
}

func newRequeueCmd(g *globalOptions) *cobra.Command {
	o := &requeueOptions{g: g}
	cmd := &cobra.Command{
		Use:   "requeue ID [--to AGENT]",
		Short: "Put a task back in incoming (claim cleared; branch, feedback, counts kept)",
		Long: `Requeue a task. ` + workflow.TransitionHelp("requeue") + `
With --to, only AGENT may claim it (assigned_to). A locked-out agent must be
unlocked first.`,
		Example: `  orch requeue T-4k9x2m
  orch requeue T-4k9x2m --to agent-b`,
		Args: exactArgs(1, "requeue ID [--to AGENT]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runRequeue(o, args[0]) },
	}
	cmd.Flags().StringVar(&o.To, "to", "", "assign the task to this agent")
	return cmd
}

func runRequeue(o *requeueOptions, ref string) error {
	return o.g.taskVerb(ref, "requeue", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Requeue(id, o.To)
	})
}
