package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/internal/answer"
	"github.com/orch-tool/orch/workflow"
)

type archiveOptions struct {
	g   *globalOptions
	Due bool
}

func newArchiveCmd(g *globalOptions) *cobra.Command {
	o := &archiveOptions{g: g}
	cmd := &cobra.Command{
		Use:   "archive (ID | --due)",
		Short: "Move a finished task to the archive (show, log and reopen still find it)",
		Long: `Move a done, failed or superseded task to the archive on the state branch
(archive/), out of the view and out of what every command reads. orch show,
orch log, orch edit and orch list --all still read it, and orch reopen brings
it back. Finished tasks move there by themselves once archive_after (30d by
default) has passed, a batch after each command that changes a task; --due
moves every task that is due now, a batch per commit. Deleting a task file
by hand does not delete the task: orch restores it.`,
		Example: `  orch archive T-4k9x2m
  orch archive --due`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.Due && len(args) == 0:
				return runArchiveDue(o)
			case !o.Due && len(args) == 1:
				return runArchive(o, args[0])
			}
			return &workflow.UsageError{Msg: "give a task ID or --due", Hint: "usage: orch archive (ID | --due)"}
		},
	}
	cmd.Flags().BoolVar(&o.Due, "due", false, "move every task finished more than archive_after ago")
	return cmd
}

// archiveAnswer is orch archive's JSON answer: the task as it was (null
// with --due), whether anything moved, the last commit, and the IDs --due
// moved ([] for one task).
type archiveAnswer struct {
	Task     *answer.Task `json:"task"`
	Archived bool         `json:"archived"`
	Commit   string       `json:"commit"`
	Due      []string     `json:"due"`
}

func runArchive(o *archiveOptions, ref string) error {
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		s, err := e.Lookup(ref)
		if err != nil {
			return nil, err
		}
		snapshot := *s
		var before answer.Task
		if o.g.JSON {
			before = o.g.task(e, &snapshot)
		}
		res, err := e.Archive(s.Task.ID)
		if err != nil {
			return nil, err
		}
		return func(out *output) error {
			if o.g.JSON {
				return out.writeJSON(archiveAnswer{&before, true, res.Commit.String(), []string{}})
			}
			fmt.Fprintf(out.Out, "%s archived (%s)\n", snapshot.Task.ID, short(res.Commit))
			return nil
		}, nil
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
				return out.writeJSON(archiveAnswer{nil, len(due) > 0, tip.String(), due})
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
