package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type unlockOptions struct {
	g *globalOptions
	bulkOptions
}

func newUnlockCmd(g *globalOptions) *cobra.Command {
	o := &unlockOptions{g: g}
	cmd := &cobra.Command{
		Use:   "unlock (ID... | --queue Q | --label L) AGENT [--dry-run]",
		Short: "Lift an agent's lockout from a task",
		Long: `Let an agent that was locked out after a rejection claim the task again.
Lockouts persist in the task file (locked_out) and every unlock is logged.
The task stays in its queue. The last argument is the agent; several IDs
before it, or --queue and --label (the tasks there that lock AGENT out),
unlock them all in one commit, or none when a rule refuses one.`,
		Example: `  orch unlock T-4k9x2m agent-a
  orch unlock --queue escalated agent-a`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &workflow.UsageError{Msg: "name the agent to unlock, after the tasks", Hint: "usage: orch unlock (ID... | --queue Q | --label L) AGENT"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUnlock(o, args[:len(args)-1], args[len(args)-1])
		},
	}
	addBulkFlags(cmd, &o.bulkOptions)
	return cmd
}

func runUnlock(o *unlockOptions, refs []string, agent string) error {
	return o.g.bulkVerb("unlock", refs, &o.bulkOptions, false, lockedOutOf(agent), func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Unlock(id, agent)
	})
}
