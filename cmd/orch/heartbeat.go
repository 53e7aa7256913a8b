package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

type heartbeatOptions struct {
	g      *globalOptions
	Sync   bool
	Remote string
}

func newHeartbeatCmd(g *globalOptions) *cobra.Command {
	o := &heartbeatOptions{g: g}
	cmd := &cobra.Command{
		Use:   "heartbeat [ID] [--sync]",
		Short: "Renew the lease on the task you have claimed",
		Long: `A claim is a lease of claim_timeout (config.yaml): when it runs out, the next
orch claim takes the task over (and says so in the task), so that a dead
agent's work comes back without anyone running orch sweep. Your answers
(orch respond) renew the lease; for long, quiet work renew it with orch
heartbeat (a harness hook can run it). Only the claimant may. Inside the
task's worktree ID may be omitted.

--sync renews through the remote: it fetches and merges the remote's state
branch first, renews, pushes with a lease, and moves the remote's claim ref of
the task to the renewal when the ref holds your claim (other clones judge your
lease by the remote's state branch once it holds your claim, and before that by
the lease in the claim ref). When the merge shows your claim has ended (once
your lease ran out another clone took the task over, in its state branch or its
claim ref, or the task moved on), nothing is renewed: it says who holds the task
now and exits 4; stop working on it. A push that loses a race is undone and
done again on the new state. When the remote cannot be reached, or every push
lost for two minutes, the renewal stays committed here (and is in the claim ref
if that push went through), and the exit code says what was not shared.`,
		Example: `  orch heartbeat
  orch heartbeat T-4k9x2m --json
  orch heartbeat T-4k9x2m --sync --json`,
		Args: maxArgs(1, "heartbeat [ID] [--sync]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runHeartbeat(o, argOr(args, 0)) },
	}
	cmd.Flags().BoolVar(&o.Sync, "sync", false, "share the renewal through the remote (orch sync)")
	cmd.Flags().StringVar(&o.Remote, "remote", "origin", "the remote --sync uses")
	return cmd
}

// heartbeatAnswer is orch heartbeat's JSON answer.
type heartbeatAnswer struct {
	Task       answer.Task `json:"task"`
	LeaseUntil answer.Time `json:"lease_until"` // when the lease runs out unless renewed
	Commit     string      `json:"commit"`
	Synced     bool        `json:"synced"` // --sync shared it through the remote
}

func runHeartbeat(o *heartbeatOptions, ref string) error {
	if o.Sync {
		var res *workflow.HeartbeatResult
		return o.g.runRemote(func(opts workflow.Options) (*workflow.Engine, []string, error) {
			e, r, notes, err := workflow.HeartbeatSync(opts, syncOptionsOf(o.Remote), ref)
			res = r
			return e, notes, err
		}, func(e *workflow.Engine) printer { return heartbeatPrinter(o, e, res) })
	}
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		s, err := e.Lookup(ref)
		if err != nil {
			return nil, err
		}
		res, err := e.Heartbeat(s.Task.ID)
		if err != nil {
			return nil, err
		}
		return heartbeatPrinter(o, e, res), nil
	})
}

func heartbeatPrinter(o *heartbeatOptions, e *workflow.Engine, res *workflow.HeartbeatResult) printer {
	return func(out *output) error {
		if o.g.JSON {
			return out.writeJSON(heartbeatAnswer{o.g.task(e, res.Task), answer.Time(res.LeaseUntil), res.Commit.String(), o.Sync})
		}
		text := fmt.Sprintf("%s: lease renewed until %s", res.Task.Task.ID, taskfile.FormatTime(res.LeaseUntil))
		if o.Sync {
			text += ", shared through " + o.Remote
		}
		fmt.Fprintln(out.Out, text)
		return nil
	}
}
