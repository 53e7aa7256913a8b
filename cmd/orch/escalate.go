package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type escalateOptions struct {
	g    *globalOptions
	Text string
}

func newEscalateCmd(g *globalOptions) *cobra.Command {
	o := &escalateOptions{g: g}
	cmd := &cobra.Command{
		Use:   "escalate ID -m TEXT",
		Short: "Ask a human to act",
		Long: `Escalate a task to a human. ` + workflow.TransitionHelp("escalate") + `
A message saying why and what the options are is written to messages/ and
listed by orch inbox.`,
		Example: `  orch escalate T-4k9x2m -m "The spec contradicts the API; which wins?"`,
		Args:    exactArgs(1, "escalate ID -m TEXT"),
		RunE:    func(cmd *cobra.Command, args []string) error { return runEscalate(o, args[0]) },
	}
	cmd.Flags().StringVarP(&o.Text, "message", "m", "", "what a human must decide")
	return cmd
}

func runEscalate(o *escalateOptions, ref string) error {
	return o.g.taskVerb(ref, "escalate", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Escalate(id, o.Text)
	})
}
