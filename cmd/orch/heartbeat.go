package main

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/cobra"

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

--sync then shares the renewal through the remote, as orch sync does, and
moves the remote's claim ref of the task to it when the ref holds your claim:
other clones judge your lease by the remote's state branch once it holds your
claim, and before that by the lease in the claim ref. When the sync fails, the
renewal stays committed here (and is in the claim ref if that push went
through), and the exit code says what was not shared.`,
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
	Task       taskJSON `json:"task"`
	LeaseUntil jsonTime `json:"lease_until"` // when the lease runs out unless renewed
	Commit     string   `json:"commit"`
	Synced     bool     `json:"synced"` // --sync shared it through the remote
}

func runHeartbeat(o *heartbeatOptions, ref string) error {
	var answer heartbeatAnswer
	var text, id string
	var commit plumbing.Hash
	err := o.g.withEngine(func(e *workflow.Engine) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		res, err := e.Heartbeat(s.Task.ID)
		if err != nil {
			return err
		}
		answer = heartbeatAnswer{o.g.task(e, res.Task), jsonTime(res.LeaseUntil), res.Commit.String(), false}
		id, commit = res.Task.Task.ID, res.Commit
		text = fmt.Sprintf("%s: lease renewed until %s", res.Task.Task.ID, taskfile.FormatTime(res.LeaseUntil))
		return nil
	})
	if err != nil {
		return err
	}
	if o.Sync {
		// The renewal is committed here whatever the remote says; the
		// error (and exit code) says what was not shared.
		notes, err := workflow.ShareRenewal(o.g.engineOptions(false), syncOptionsOf(o.Remote), id, commit)
		o.g.printNoteList(notes)
		if err != nil {
			return err
		}
		answer.Synced = true
		text += ", shared through " + o.Remote
	}
	if o.g.JSON {
		return o.g.writeJSON(answer)
	}
	fmt.Fprintln(o.g.io.Out, text)
	return nil
}
