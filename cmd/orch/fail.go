package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type failOptions struct {
	g      *globalOptions
	Reason string
}

func newFailCmd(g *globalOptions) *cobra.Command {
	o := &failOptions{g: g}
	cmd := &cobra.Command{
		Use:     "fail ID -m REASON",
		Short:   "Give a task up",
		Long:    `Mark a task failed, with the reason at the top of its body. ` + workflow.TransitionHelp("fail"),
		Example: `  orch fail T-4k9x2m -m "won't fix: superseded by the new importer"`,
		Args:    exactArgs(1, "fail ID -m REASON"),
		RunE:    func(cmd *cobra.Command, args []string) error { return runFail(o, args[0]) },
	}
	cmd.Flags().StringVarP(&o.Reason, "message", "m", "", "why")
	return cmd
}

func runFail(o *failOptions, ref string) error {
	return o.g.taskVerb(ref, "fail", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Fail(id, o.Reason)
	})
}
