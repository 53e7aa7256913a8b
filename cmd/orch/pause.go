package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type pauseOptions struct {
	g    *globalOptions
	Note string
	step remoteStep
}

func newPauseCmd(g *globalOptions) *cobra.Command {
	o := &pauseOptions{g: g}
	cmd := &cobra.Command{
		Use:   "pause [ID] -m NOTE",
		Short: "Stop before finishing; the note goes into the next prompt",
		Long: `Pause a claimed task. ` + workflow.TransitionHelp("pause") + `
The note is written at the top of the task as "## Continuation Note" and shown
to whoever continues. The work stays on the task's branch.

` + holderSyncHelp,
		Example: `  orch pause T-4k9x2m -m "Parser done and tested; the CLI flags are next"`,
		Args:    maxArgs(1, "pause [ID] -m NOTE"),
		RunE:    func(cmd *cobra.Command, args []string) error { return runPause(o, argOr(args, 0)) },
	}
	cmd.Flags().StringVarP(&o.Note, "message", "m", "", "what is done and what is next")
	o.step.addFlags(cmd)
	return cmd
}

func runPause(o *pauseOptions, ref string) error {
	return o.step.taskStep(o.g, ref, "pause", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Pause(id, o.Note)
	})
}
