package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type rejectOptions struct {
	g     *globalOptions
	Msg   string
	File  string
	Amend bool
	step  remoteStep
}

func newRejectCmd(g *globalOptions) *cobra.Command {
	o := &rejectOptions{g: g}
	cmd := &cobra.Command{
		Use:   "reject ID (-m TEXT | -F FILE|-)",
		Short: "Send submitted work back with feedback",
		Long: `Reject submitted work. ` + workflow.TransitionHelp("reject") + `

The feedback is written at the top of the task's body as
"## Review Feedback (rejection #N)" with a "### From <you> via orch reject"
subsection; older rounds stay below it. rejection_count goes up, the branch
and pr_number are kept, and with review.lockout the author is locked out of
the task. The review.max_rejections-th rejection, or a roster in which every
capable agent is locked out, escalates the task to a human instead.
With review.reviewers set only they may reject, a scoped reviewer only the
tasks of its roles or labels; nobody rejects their own work.

--amend adds the text to the newest rejection round instead of rejecting
again, as "### From <you> via orch reject --amend": a lead's distilled note
on a round that orch pr import brought in from scattered PR comments. The
count, the lockout and the queue stay; the task must still be rejected,
claimed, needs_continuation or escalated (not submitted again). An agent
that already claimed the task sees the note in orch prompt.

` + stepSyncHelp,
		Example: `  orch reject T-4k9x2m -m "Fork start must snap like the other shapes."
  orch reject T-4k9x2m -F feedback.md --agent lead
  orch reject T-4k9x2m --amend -m "All three comments ask for one thing: snap the start."
  orch reject T-4k9x2m -m "Snap the start." --sync --agent lead`,
		Args: exactArgs(1, "reject ID (-m TEXT | -F FILE|-)"),
		RunE: func(cmd *cobra.Command, args []string) error { return runReject(o, args[0]) },
	}
	cmd.Flags().StringVarP(&o.Msg, "message", "m", "", "the feedback")
	cmd.Flags().StringVarP(&o.File, "file", "F", "", "read the feedback from `FILE` (- for stdin)")
	cmd.Flags().BoolVar(&o.Amend, "amend", false, "add the text to the newest rejection round instead of rejecting again")
	o.step.addFlags(cmd)
	return cmd
}

func runReject(o *rejectOptions, ref string) error {
	text, err := o.g.textArg(o.Msg, o.File, true, "reject ID (-m TEXT | -F FILE|-)")
	if err != nil {
		return err
	}
	return o.step.taskStep(o.g, ref, "reject", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		if o.Amend {
			return e.AmendRejection(id, text)
		}
		return e.Reject(id, text)
	})
}
