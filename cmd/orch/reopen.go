package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type reopenOptions struct {
	g    *globalOptions
	Msg  string
	File string
}

func newReopenCmd(g *globalOptions) *cobra.Command {
	o := &reopenOptions{g: g}
	cmd := &cobra.Command{
		Use:   "reopen ID (-m TEXT | -F FILE|-)",
		Short: "Send a finished task back to incoming, from the archive too (a human's verb)",
		Long: `Reopen a failed, done or superseded task. ` + workflow.TransitionHelp("reopen") + `
Finished is final for agents; a person reopens a task when what made it fail,
or what it did, has changed. A task in the archive (archive_after) comes back
among the tasks in the same commit. The branch, the review feedback and the
counts are kept; the reason is written at the top of the task as
"## Reopened (<you>, <time>)", so the next agent reads it first.`,
		Example: `  orch reopen T-4k9x2m -m "Staging is back; the API key is in the vault now."`,
		Args:    exactArgs(1, "reopen ID (-m TEXT | -F FILE|-)"),
		RunE:    func(cmd *cobra.Command, args []string) error { return runReopen(o, args[0]) },
	}
	cmd.Flags().StringVarP(&o.Msg, "message", "m", "", "why the task is reopened")
	cmd.Flags().StringVarP(&o.File, "file", "F", "", "read the reason from `FILE` (- for stdin)")
	return cmd
}

func runReopen(o *reopenOptions, ref string) error {
	text, err := o.g.textArg(o.Msg, o.File, true, "reopen ID (-m TEXT | -F FILE|-)")
	if err != nil {
		return err
	}
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		s, _, err := e.LookupArchived(ref)
		if err != nil {
			return nil, err
		}
		res, err := e.Reopen(s.Task.ID, text)
		if err != nil {
			return nil, err
		}
		return func(out *output) error { return out.printTransition(e, "reopen", res) }, nil
	})
}
