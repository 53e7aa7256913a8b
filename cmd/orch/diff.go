package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/workflow"
)

type diffOptions struct {
	g              *globalOptions
	SinceRejection bool
	Stat           bool
}

func newDiffCmd(g *globalOptions) *cobra.Command {
	o := &diffOptions{g: g}
	cmd := &cobra.Command{
		Use:   "diff [ID] [--since-rejection] [--stat]",
		Short: "Show what a task's branch changes",
		Long: `Print git diff of the task's branch against its base branch, since their
merge base (what a pull request shows). --since-rejection diffs from the
branch tip the last rejection recorded (rejected_at_commit): what the retry
changed, for a re-review. --stat prints the summary only. Inside a task's
worktree ID may be omitted.`,
		Example: `  orch diff T-4k9x2m
  orch diff T-4k9x2m --since-rejection --stat`,
		Args: maxArgs(1, "diff [ID] [--since-rejection] [--stat]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runDiff(o, argOr(args, 0)) },
	}
	cmd.Flags().BoolVar(&o.SinceRejection, "since-rejection", false, "diff from the commit the last rejection saw")
	cmd.Flags().BoolVar(&o.Stat, "stat", false, "print git diff --stat")
	return cmd
}

// diffAnswer is orch diff's JSON answer: base and head are the two
// revisions compared (from and to are queues in a transition's answer).
type diffAnswer struct {
	Task  answer.Task `json:"task"`
	Base  string      `json:"base"`  // the base branch, or the commit rejected last
	Head  string      `json:"head"`  // the task's branch
	Since string      `json:"since"` // base | rejection
	Diff  string      `json:"diff"`  // git diff's output (--stat: the summary)
}

func runDiff(o *diffOptions, ref string) error {
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		s, err := e.Lookup(ref)
		if err != nil {
			return nil, err
		}
		d, err := e.Diff(s.Task.ID, o.SinceRejection, o.Stat)
		if err != nil {
			return nil, err
		}
		return func(out *output) error {
			if o.g.JSON {
				return out.writeJSON(diffAnswer{o.g.task(e, s), d.From, d.To, d.Since, d.Diff})
			}
			_, err := fmt.Fprint(out.Out, d.Diff)
			return err
		}, nil
	})
}
