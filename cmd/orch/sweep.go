package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/workflow"
)

type sweepOptions struct {
	g         *globalOptions
	OlderThan string
}

func newSweepCmd(g *globalOptions) *cobra.Command {
	o := &sweepOptions{g: g}
	cmd := &cobra.Command{
		Use:   "sweep [--older-than DURATION]",
		Short: "Move stale claims to needs_continuation",
		Long: `Move every claim older than DURATION (default: claim_timeout of config.yaml)
to needs_continuation, with a note saying whose claim it was.
` + workflow.TransitionHelp("sweep"),
		Example: `  orch sweep
  orch sweep --older-than 30m --json`,
		Args: exactArgs(0, "sweep [--older-than DURATION]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runSweep(o) },
	}
	cmd.Flags().StringVar(&o.OlderThan, "older-than", "", "claims older than this (90m, 2h, 1d)")
	return cmd
}

// sweepAnswer is orch sweep's JSON answer: one transition per stale
// claim, each as the transition verbs answer it.
type sweepAnswer struct {
	Count       int              `json:"count"`
	Transitions []transitionJSON `json:"transitions"`
}

func runSweep(o *sweepOptions) error {
	var d time.Duration
	if o.OlderThan != "" {
		var err error
		if d, err = config.ParseDuration(o.OlderThan); err != nil || d <= 0 {
			return &workflow.UsageError{Msg: fmt.Sprintf("--older-than: %q is not a duration", o.OlderThan), Hint: "like 90m, 2h or 1d"}
		}
	}
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		res, err := e.Sweep(d)
		if err != nil {
			return nil, err
		}
		return func(out *output) error {
			if o.g.JSON {
				ts := make([]transitionJSON, len(res))
				for i, r := range res {
					ts[i] = o.g.transition(e, r)
				}
				return out.writeJSON(sweepAnswer{len(ts), ts})
			}
			for _, r := range res {
				fmt.Fprintf(out.Out, "%s: %s -> %s\n", r.Task.Task.ID, r.From, r.To)
			}
			if len(res) == 0 {
				fmt.Fprintln(out.Err, "no stale claims")
			}
			return nil
		}, nil
	})
}
