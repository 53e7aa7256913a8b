package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type failOptions struct {
	g      *globalOptions
	Reason string
	bulkOptions
}

func newFailCmd(g *globalOptions) *cobra.Command {
	o := &failOptions{g: g}
	cmd := &cobra.Command{
		Use:   "fail (ID... | --queue Q | --label L) -m REASON [--dry-run]",
		Short: "Give a task up",
		Long: `Mark a task failed, with the reason at the top of its body. ` + workflow.TransitionHelp("fail") + `
Several IDs, or --queue and --label, fail them all in one commit, or none
when a rule refuses one (--dry-run checks and commits nothing).`,
		Example: `  orch fail T-4k9x2m -m "won't fix: superseded by the new importer"
  orch fail --label importer-v1 -m "superseded by the new importer"`,
		RunE: func(cmd *cobra.Command, args []string) error { return runFail(o, args) },
	}
	cmd.Flags().StringVarP(&o.Reason, "message", "m", "", "why")
	addBulkFlags(cmd, &o.bulkOptions)
	return cmd
}

func runFail(o *failOptions, refs []string) error {
	return o.g.bulkVerb("fail", refs, &o.bulkOptions, false, nil, func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Fail(id, o.Reason)
	})
}
