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
and blocked tasks whose refusal awaits orch decide.`,
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
