package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type requeueOptions struct {
	g  *globalOptions
	To string
	bulkOptions
}

func newRequeueCmd(g *globalOptions) *cobra.Command {
	o := &requeueOptions{g: g}
	cmd := &cobra.Command{
		Use:   "requeue (ID... | --queue Q | --label L) [--to AGENT] [--dry-run]",
		Short: "Put a task back in incoming (claim cleared; branch, feedback, counts kept)",
		Long: `Requeue a task. ` + workflow.TransitionHelp("requeue") + `
With --to, only AGENT may claim it (assigned_to). A locked-out agent must be
unlocked first.

Several IDs, or --queue and --label (the tasks of those queues that carry
every label; without --queue, of every queue requeue takes tasks from),
requeue them all in one commit; if a rule refuses one, none is requeued and
the message names it. --dry-run checks every rule and commits nothing.`,
		Example: `  orch requeue T-4k9x2m
  orch requeue T-4k9x2m --to agent-b
  orch requeue T-3vfp8e T-4k9x2m T-6xbt0z
  orch requeue --queue escalated --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error { return runRequeue(o, args) },
	}
	cmd.Flags().StringVar(&o.To, "to", "", "assign the task to this agent")
	addBulkFlags(cmd, &o.bulkOptions)
	return cmd
}

func runRequeue(o *requeueOptions, refs []string) error {
	return o.g.bulkVerb("requeue", refs, &o.bulkOptions, false, nil, func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Requeue(id, o.To)
	})
}
