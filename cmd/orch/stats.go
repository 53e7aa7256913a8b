package main

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

type statsOptions struct {
	g     *globalOptions
	Since string
	Top   int
}

func newStatsCmd(g *globalOptions) *cobra.Command {
	o := &statsOptions{g: g}
	cmd := &cobra.Command{
		Use:   "stats [--since DATE]",
		Short: "Rejections, refusals, decisions and escalations, from the event log",
		Long: `Summarise the event log: rejections by author and task; refusals by
reason, agent and task; the commonest blocking factors; decisions and the
override rate (overrides / decisions: how often refusals were not justified);
the average number of review rounds to approval; escalations by reason.`,
		Example: `  orch stats
  orch stats --since 2026-02-01 --json`,
		Args: exactArgs(0, "stats [--since DATE]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runStats(o) },
	}
	cmd.Flags().StringVar(&o.Since, "since", "", "only events at or after DATE (2026-02-01 or RFC 3339)")
	cmd.Flags().IntVar(&o.Top, "top", 10, "how many agents, tasks and blockers to list")
	return cmd
}

func runStats(o *statsOptions) error {
	var since time.Time
	if o.Since != "" {
		var err error
		if since, err = taskfile.ParseTime(o.Since); err != nil {
			return &workflow.UsageError{Msg: fmt.Sprintf("--since %q is not a date", o.Since), Hint: "like 2026-02-01 or 2026-02-01T10:00:00Z"}
		}
	}
	return o.g.withEngine(func(e *workflow.Engine) error {
		st, err := e.Stats(since, o.Top)
		if err != nil {
			return err
		}
		if o.g.JSON {
			return writeJSON(o.g.io.Out, st)
		}
		w := o.g.io.Out
		fmt.Fprintf(w, "events: %d", st.Events)
		if st.Since != "" {
			fmt.Fprintf(w, " since %s", st.Since)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "\nrejections: %d\n", st.Rejections.Total)
		printCounts(w, "by author", st.Rejections.ByAgent)
		printCounts(w, "by task", st.Rejections.ByTask)
		fmt.Fprintf(w, "\nrefusals: %d valid, %d invalid\n", st.Refusals.Total, st.InvalidRefusals)
		printCounts(w, "by reason", st.Refusals.ByReason)
		printCounts(w, "by agent", st.Refusals.ByAgent)
		printCounts(w, "by task", st.Refusals.ByTask)
		printCounts(w, "common blockers", st.CommonBlockers)
		var ds []workflow.Count
		for k, v := range st.Decisions {
			ds = append(ds, workflow.Count{Key: k, Count: v})
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i].Key < ds[j].Key })
		fmt.Fprintf(w, "\ndecisions:\n")
		printCounts(w, "", ds)
		fmt.Fprintf(w, "  override rate: %.0f%%\n", st.OverrideRate*100)
		fmt.Fprintf(w, "\napprovals: %d, average review rounds to approval: %.2f\n", st.Approvals, st.AvgRoundsToApproval)
		fmt.Fprintf(w, "\nescalations: %d\n", st.Escalations.Total)
		printCounts(w, "by reason", st.Escalations.ByReason)
		return nil
	})
}

func printCounts(w io.Writer, title string, cs []workflow.Count) {
	if len(cs) == 0 {
		return
	}
	if title != "" {
		fmt.Fprintf(w, "  %s:\n", title)
	}
	for _, c := range cs {
		fmt.Fprintf(w, "    %4d  %s\n", c.Count, c.Key)
	}
}
