package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/workflow"
)

type logOptions struct {
	g     *globalOptions
	Limit int
}

func newLogCmd(g *globalOptions) *cobra.Command {
	o := &logOptions{g: g}
	cmd := &cobra.Command{
		Use:   "log [ID]",
		Short: "Show the history of the queue, or of one task",
		Long: `Show the commits of the state branch, newest first, read from their
Orch-* trailers: when, which task, what action, from and to which queue, who.
A rejection that locked its author out says whom ("agent-a locked out"), and
an unlock whom it let back in ("agent-a unlocked"); --json has them as
locked_out and unlocked.`,
		Example: `  orch log
  orch log T-4k9x2m --json
  orch log --limit 20`,
		Args: maxArgs(1, "log [ID] [--limit N]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runLog(o, argOr(args, 0)) },
	}
	cmd.Flags().IntVarP(&o.Limit, "limit", "n", 0, "show at most `N` entries (0: all)")
	return cmd
}

// logAnswer is orch log's JSON answer.
type logAnswer struct {
	Count   int            `json:"count"`
	Entries []logEntryJSON `json:"entries"`
}

// logEntryJSON is one commit of the state branch, read from its trailers;
// task is the task as it is now (null when it is no longer on the state
// branch, or the commit concerns no task).
type logEntryJSON struct {
	Commit    string       `json:"commit"`
	Time      answer.Time  `json:"time"`
	TaskID    string       `json:"task_id"`
	Task      *answer.Task `json:"task"`
	Action    string       `json:"action"`
	From      string       `json:"from"`
	To        string       `json:"to"`
	Actor     string       `json:"actor"`
	Subject   string       `json:"subject"`
	LockedOut string       `json:"locked_out"` // the author a rejection locked out
	Unlocked  string       `json:"unlocked"`   // the agent an unlock let back in
}

func runLog(o *logOptions, ref string) error {
	return o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		if err := e.RequireInit(); err != nil {
			return err
		}
		id := ""
		if ref != "" {
			s, _, err := e.LookupArchived(ref)
			if err != nil {
				return err
			}
			id = s.Task.ID
		}
		entries, err := e.Log(id, o.Limit)
		if err != nil {
			return err
		}
		if o.g.JSON {
			ids := make([]string, len(entries))
			for i, en := range entries {
				ids[i] = en.Task
			}
			refs := o.g.taskRefs(e, ids)
			out := make([]logEntryJSON, len(entries))
			for i, en := range entries {
				out[i] = logEntryJSON{Commit: en.Commit, Time: answer.Time(en.Time), TaskID: en.Task, Task: refs[en.Task], Action: en.Action,
					From: en.From, To: en.To, Actor: en.Actor, Subject: en.Subject, LockedOut: en.LockedOut, Unlocked: en.Unlocked}
			}
			return o.g.out().writeJSON(logAnswer{len(out), out})
		}
		tw := tabwriter.NewWriter(o.g.io.Out, 0, 4, 2, ' ', 0)
		for _, en := range entries {
			change := en.Action
			if en.From != "" || en.To != "" {
				change = fmt.Sprintf("%s %s->%s", en.Action, en.From, en.To)
			}
			line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", en.Commit[:7], en.Time.Format("2006-01-02 15:04:05"), en.Task, change, en.Actor)
			// Who a lockout concerns is another column, only where there
			// is one, so other lines keep no trailing blanks.
			switch {
			case en.LockedOut != "":
				line += "\t" + en.LockedOut + " locked out"
			case en.Unlocked != "":
				line += "\t" + en.Unlocked + " unlocked"
			}
			fmt.Fprintln(tw, line)
		}
		return tw.Flush()
	})
}
