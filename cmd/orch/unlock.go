package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type unlockOptions struct {
	g *globalOptions
}

func newUnlockCmd(g *globalOptions) *cobra.Command {
	o := &unlockOptions{g: g}
	return &cobra.Command{
		Use:   "unlock ID AGENT",
		Short: "Lift an agent's lockout from a task",
		Long: `Let an agent that was locked out after a rejection claim the task again.
Lockouts persist in the task file (locked_out) and every unlock is logged.
The task stays in its queue.`,
		Example: `  orch unlock T-4k9x2m agent-a`,
		Args:    exactArgs(2, "unlock ID AGENT"),
		RunE:    func(cmd *cobra.Command, args []string) error { return runUnlock(o, args[0], args[1]) },
	}
}

func runUnlock(o *unlockOptions, ref, agent string) error {
	return o.g.taskVerb(ref, "unlock", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Unlock(id, agent)
	})
}
