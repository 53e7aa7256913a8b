package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type approveOptions struct {
	g     *globalOptions
	Notes string
	step  remoteStep
}

func newApproveCmd(g *globalOptions) *cobra.Command {
	o := &approveOptions{g: g}
	cmd := &cobra.Command{
		Use:   "approve ID [-m NOTES]",
		Short: "Accept submitted work",
		Long: `Approve submitted work. ` + workflow.TransitionHelp("approve") + `
Lockouts on the task are lifted. With review.reviewers set only they may
approve, a scoped reviewer only the tasks of its roles or labels; nobody
approves their own work. Refused while a blocking review issue is
unresolved.

` + stepSyncHelp,
		Example: `  orch approve T-4k9x2m -m "Nice; merge when CI is green" --agent lead
  orch approve T-4k9x2m --sync --agent lead`,
		Args: exactArgs(1, "approve ID [-m NOTES]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runApprove(o, args[0]) },
	}
	cmd.Flags().StringVarP(&o.Notes, "message", "m", "", "notes for the record")
	o.step.addFlags(cmd)
	return cmd
}

func runApprove(o *approveOptions, ref string) error {
	return o.step.taskStep(o.g, ref, "approve", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		if o.step.Sync && e.Config.Land.On() {
			// The work reviewed on another clone, so that it can land.
			if err := e.FetchBranchOf(id, o.step.Remote); err != nil {
				return nil, err
			}
		}
		return e.Approve(id, o.Notes)
	})
}
