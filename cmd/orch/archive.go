package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/internal/answer"
	"github.com/orch-tool/orch/workflow"
)

type archiveOptions struct {
	g *globalOptions
}

func newArchiveCmd(g *globalOptions) *cobra.Command {
	o := &archiveOptions{g: g}
	return &cobra.Command{
		Use:   "archive ID",
		Short: "Remove a finished task's file (history keeps it)",
		Long: `Remove a done, failed or superseded task from the state branch and the view.
git log of the state branch keeps every version. Deleting a task file by hand
does not delete the task: orch restores it.`,
		Example: `  orch archive T-4k9x2m`,
		Args:    exactArgs(1, "archive ID"),
		RunE:    func(cmd *cobra.Command, args []string) error { return runArchive(o, args[0]) },
	}
}

// archiveAnswer is orch archive's JSON answer: the task as it was.
type archiveAnswer struct {
	Task     answer.Task `json:"task"`
	Archived bool        `json:"archived"`
	Commit   string      `json:"commit"`
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
				return out.writeJSON(archiveAnswer{before, true, res.Commit.String()})
			}
			fmt.Fprintf(out.Out, "%s archived (%s)\n", snapshot.Task.ID, short(res.Commit))
			return nil
		}, nil
	})
}
