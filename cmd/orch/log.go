package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

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

func runLog(o *logOptions, ref string) error {
	return o.g.withEngine(func(e *workflow.Engine) error {
		if err := e.RequireInit(); err != nil {
			return err
		}
		id := ""
		if ref != "" {
			s, err := e.Find(ref)
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
			if entries == nil {
				entries = []workflow.LogEntry{}
			}
			return writeJSON(o.g.io.Out, struct {
				Entries []workflow.LogEntry `json:"entries"`
			}{entries})
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
