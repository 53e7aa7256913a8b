package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type inboxOptions struct {
	g *globalOptions
}

func newInboxCmd(g *globalOptions) *cobra.Command {
	o := &inboxOptions{g: g}
	return &cobra.Command{
		Use:   "inbox",
		Short: "List what waits for a human: escalations and refusals",
		Long: `List escalated tasks with the reason from their latest message in messages/,
blocked tasks whose refusal awaits orch decide (each with the whole refusal:
reason, detail, what was attempted, evidence, the suggested alternative and
alternative tasks, so that it can be decided from this screen), and refused
attempts at what was not the actor's to do (the last 7 days).`,
		Example: `  orch inbox
  orch inbox --json`,
		Args: exactArgs(0, "inbox"),
		RunE: func(cmd *cobra.Command, args []string) error { return runInbox(o) },
	}
}

func runInbox(o *inboxOptions) error {
	return o.g.withEngine(func(e *workflow.Engine) error {
		items, err := e.Inbox()
		if err != nil {
			return err
		}
		if o.g.JSON {
			if items == nil {
				items = []workflow.InboxItem{}
			}
			return writeJSON(o.g.io.Out, struct {
				Items []workflow.InboxItem `json:"items"`
			}{items})
		}
		if len(items) == 0 {
			fmt.Fprintln(o.g.io.Err, "inbox empty: nothing waits for a human")
			return nil
		}
		tw := tabwriter.NewWriter(o.g.io.Out, 0, 4, 2, ' ', 0)
		for _, it := range items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", orDashText(it.Task), it.Reason, clip(it.Title, 40), clip(oneLineText(it.Summary), 80))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		// A refusal is decided from here: its whole record follows the
		// table (orch show has it too).
		for _, it := range items {
			if r := it.Refusal; r != nil {
				fmt.Fprintf(o.g.io.Out, "\n%s refused by %s at %s: %s\n\n%s", it.Task, r.By, r.Time, oneLineText(it.Title), workflow.RefusalText(r.Record))
				fmt.Fprintf(o.g.io.Out, "Decide: %s (the protocol's default: %s)\n", r.Decide, r.DefaultDecision)
			}
		}
		for _, it := range items {
			if it.Message != "" {
				fmt.Fprintf(o.g.io.Err, "%s: %s\n", orDashText(it.Task), it.Message)
			}
		}
		return nil
	})
}

func orDashText(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
