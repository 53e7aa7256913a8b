package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type escalateOptions struct {
	g    *globalOptions
	Text string
	bulkOptions
}

func newEscalateCmd(g *globalOptions) *cobra.Command {
	o := &escalateOptions{g: g}
	cmd := &cobra.Command{
		Use:   "escalate (ID... | --queue Q | --label L) -m TEXT [--dry-run]",
		Short: "Ask a human to act",
		Long: `Escalate a task to a human. ` + workflow.TransitionHelp("escalate") + `
A message saying why and what the options are is written to messages/ and
listed by orch inbox. Several IDs, or --queue and --label, escalate them all
in one commit, or none when a rule refuses one (--dry-run commits nothing).`,
		Example: `  orch escalate T-4k9x2m -m "The spec contradicts the API; which wins?"`,
		RunE:    func(cmd *cobra.Command, args []string) error { return runEscalate(o, args) },
	}
	cmd.Flags().StringVarP(&o.Text, "message", "m", "", "what a human must decide")
	addBulkFlags(cmd, &o.bulkOptions)
	return cmd
}

func runEscalate(o *escalateOptions, refs []string) error {
	return o.g.bulkVerb("escalate", refs, &o.bulkOptions, false, nil, func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Escalate(id, o.Text)
	})
}
