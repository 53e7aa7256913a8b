package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type archiveOptions struct {
	g   *globalOptions
	Due bool
	bulkOptions
}

func newArchiveCmd(g *globalOptions) *cobra.Command {
	o := &archiveOptions{g: g}
	cmd := &cobra.Command{
		Use:   "archive (ID... | --queue Q | --label L | --due) [--dry-run]",
		Short: "Move a finished task to the archive (show, log and reopen still find it)",
		Long: `Move a done, failed or superseded task to the archive on the state branch
(archive/), out of the view and out of what every command reads. orch show,
orch log, orch edit and orch list --all still read it, and orch reopen brings
it back. Finished tasks move there by themselves once archive_after (30d by
default) has passed, a batch after each command that changes a task; --due
moves every task that is due now, a batch per commit. Deleting a task file
by hand does not delete the task: orch restores it. Several IDs, or --queue
and --label, archive them all in one commit, or none when a rule refuses one
(--dry-run checks every rule and commits nothing).`,
		Example: `  orch archive T-4k9x2m
  orch archive --due`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.Due && len(args) == 0 && len(o.Queues)+len(o.Labels) == 0 && !o.DryRun:
				return runArchiveDue(o)
			case !o.Due:
				return runArchive(o, args)
			}
			return &workflow.UsageError{Msg: "give task IDs (or --queue, --label), or --due alone", Hint: "usage: orch archive (ID... | --queue Q | --label L | --due)"}
		},
	}
	addBulkFlags(cmd, &o.bulkOptions)
	cmd.Flags().BoolVar(&o.Due, "due", false, "move every task finished more than archive_after ago")
	return cmd
}

func runArchive(o *archiveOptions, refs []string) error {
	return o.g.bulkVerb("archive", refs, &o.bulkOptions, false, nil, func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Archive(id)
	})
}

func runArchiveDue(o *archiveOptions) error {
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		due, err := e.ArchiveAllDue()
		if err != nil {
			return nil, err
		}
		tip := e.Store.Snapshot().Tip
		return func(out *output) error {
			if o.g.JSON {
				// The answer of every archive: a list of results.
				a := bulkAnswer{Commit: tip.String(), Results: []transitionJSON{}}
				for _, id := range due {
					s, _ := e.ArchivedByID(id)
					if s == nil {
						continue
					}
					a.Results = append(a.Results, transitionJSON{Task: o.g.task(e, s), From: string(s.Task.Queue), Commit: tip.String()})
				}
				return out.writeJSON(a)
			}
			if len(due) == 0 {
				fmt.Fprintf(out.Out, "nothing is due: no finished task is older than archive_after (%s)\n", e.Config.ArchiveAfter)
				return nil
			}
			fmt.Fprintf(out.Out, "%d task(s) archived (%s)\n", len(due), short(tip))
			return nil
		}, nil
	})
}
