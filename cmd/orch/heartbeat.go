package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

type heartbeatOptions struct {
	g *globalOptions
}

func newHeartbeatCmd(g *globalOptions) *cobra.Command {
	o := &heartbeatOptions{g: g}
	return &cobra.Command{
		Use:   "heartbeat [ID]",
		Short: "Renew the lease on the task you have claimed",
		Long: `A claim is a lease of claim_timeout (config.yaml): when it runs out, the next
orch claim takes the task over (and says so in the task), so that a dead
agent's work comes back without anyone running orch sweep. Your answers
(orch respond) renew the lease; for long, quiet work renew it with orch
heartbeat (a harness hook can run it). Only the claimant may. Inside the
task's worktree ID may be omitted.`,
		Example: `  orch heartbeat
  orch heartbeat T-4k9x2m --json`,
		Args: maxArgs(1, "heartbeat [ID]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runHeartbeat(o, argOr(args, 0)) },
	}
}

func runHeartbeat(o *heartbeatOptions, ref string) error {
	return o.g.withEngine(func(e *workflow.Engine) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		res, err := e.Heartbeat(s.Task.ID)
		if err != nil {
			return err
		}
		if o.g.JSON {
			return writeJSON(o.g.io.Out, struct {
				Task       taskJSON `json:"task"`
				LeaseUntil string   `json:"lease_until"`
				Commit     string   `json:"commit"`
			}{toTaskJSON(e, res.Task), taskfile.FormatTime(res.LeaseUntil), res.Commit.String()})
		}
		fmt.Fprintf(o.g.io.Out, "%s: lease renewed until %s\n", res.Task.Task.ID, taskfile.FormatTime(res.LeaseUntil))
		return nil
	})
}
