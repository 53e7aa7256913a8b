package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type checkOptions struct {
	g *globalOptions
}

func newCheckCmd(g *globalOptions) *cobra.Command {
	o := &checkOptions{g: g}
	return &cobra.Command{
		Use:   "check",
		Short: "Validate every task file, the config and the view",
		Long: `Check every task on the state branch and every file in the view: frontmatter
that does not parse, unknown queues or priorities, hand edits that cannot be
committed, conflicts between the view and the branch, missing or circular
dependencies, and config.yaml. Each problem names the file and line.

Exits 0 when all is well and 1 when there are problems. With --json it
prints the report ({"ok": false, "count": N, "problems": [...]}) and exits 0
whenever the check ran: read "ok". A failure to check (not a repository, orch
not set up) exits non-zero with the error on stderr, as every verb does.`,
		Example: `  orch check
  orch check --json`,
		Args: exactArgs(0, "check"),
		RunE: func(cmd *cobra.Command, args []string) error { return runCheck(o) },
	}
}

// checkAnswer is orch check's JSON answer.
type checkAnswer struct {
	OK       bool               `json:"ok"`
	Count    int                `json:"count"`
	Problems []workflow.Problem `json:"problems"`
}

func runCheck(o *checkOptions) error {
	var problems []workflow.Problem
	err := o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		if err := e.RequireInit(); err != nil {
			return err
		}
		problems = e.Check()
		return nil
	})
	if err != nil {
		return err
	}
	if o.g.JSON {
		// The report is the answer: ok says whether all is well (exit
		// 0), like every answer on stdout (docs/agents.md).
		if problems == nil {
			problems = []workflow.Problem{}
		}
		return o.g.out().writeJSON(checkAnswer{len(problems) == 0, len(problems), problems})
	} else {
		for _, p := range problems {
			fmt.Fprintln(o.g.io.Out, p.String())
		}
		if len(problems) == 0 {
			fmt.Fprintln(o.g.io.Err, "ok: no problems")
		} else {
			fmt.Fprintf(o.g.io.Err, "%d problem(s)\n", len(problems))
		}
	}
	if len(problems) > 0 {
		return &silentExit{code: exitFailure}
	}
	return nil
}
