package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/refusal"
	"github.com/orch-tool/orch/termboard"
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

// inboxAnswer is orch inbox's JSON answer.
type inboxAnswer struct {
	Count int             `json:"count"`
	Items []inboxItemJSON `json:"items"`
}

// inboxItemJSON is one thing waiting for a human: an escalation, a
// refusal, or a refused attempt at what was not the actor's to do.
type inboxItemJSON struct {
	TaskID      string              `json:"task_id"` // "" when it concerns no task
	Task        *answer.Task        `json:"task"`    // null when the task is not on the state branch
	Reason      string              `json:"reason"`  // the escalation's reason, "refused" or "authority"
	Summary     string              `json:"summary"`
	MessagePath string              `json:"message_path"` // the message file, relative to the repository ("" when none)
	Time        answer.Time         `json:"time"`         // when it happened (null when unknown)
	Refusal     *pendingRefusalJSON `json:"refusal"`      // a refusal awaiting orch decide
}

// pendingRefusalJSON is a refusal awaiting orch decide: the whole record,
// who refused and when, and the protocol's default decision.
type pendingRefusalJSON struct {
	By              string          `json:"by"`
	Time            answer.Time     `json:"time"`
	DefaultDecision string          `json:"default_decision"`
	Decide          string          `json:"decide"`
	Record          *refusal.Record `json:"record"` // the refusal protocol's record, as the agent gave it
}

func pendingRefusal(r *workflow.PendingRefusal) *pendingRefusalJSON {
	if r == nil {
		return nil
	}
	return &pendingRefusalJSON{By: r.By, Time: answer.TimeText(r.Time), DefaultDecision: r.DefaultDecision, Decide: r.Decide, Record: r.Record}
}

func runInbox(o *inboxOptions) error {
	return o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		items, err := e.Inbox()
		if err != nil {
			return err
		}
		if o.g.JSON {
			ids := make([]string, len(items))
			for i, it := range items {
				ids[i] = it.Task
			}
			refs := o.g.taskRefs(e, ids)
			out := make([]inboxItemJSON, len(items))
			for i, it := range items {
				out[i] = inboxItemJSON{TaskID: it.Task, Task: refs[it.Task], Reason: it.Reason, Summary: it.Summary,
					MessagePath: it.Message, Time: answer.Time(it.Created), Refusal: pendingRefusal(it.Refusal)}
			}
			return o.g.out().writeJSON(inboxAnswer{len(out), out})
		}
		if len(items) == 0 {
			fmt.Fprintln(o.g.io.Err, "inbox empty: nothing waits for a human")
			return nil
		}
		tw := tabwriter.NewWriter(o.g.io.Out, 0, 4, 2, ' ', 0)
		for _, it := range items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", orDashText(it.Task), it.Reason, termboard.Clip(it.Title, 40), termboard.Clip(text.OneLine(it.Summary), 80))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		// A refusal is decided from here: its whole record follows the
		// table (orch show has it too).
		for _, it := range items {
			if r := it.Refusal; r != nil {
				fmt.Fprintf(o.g.io.Out, "\n%s refused by %s at %s: %s\n\n%s", it.Task, r.By, r.Time, text.OneLine(it.Title), workflow.RefusalText(r.Record))
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
