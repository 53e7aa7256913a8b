package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type respondOptions struct {
	g      *globalOptions
	Text   string
	Commit string
	step   remoteStep
}

func newRespondCmd(g *globalOptions) *cobra.Command {
	o := &respondOptions{g: g}
	cmd := &cobra.Command{
		Use:   "respond [ID] ISSUE fixed|deferred|rejected -m TEXT [--commit SHA]",
		Short: "Answer a review issue (written under the issue in the task)",
		Long: fmt.Sprintf(`Answer one review issue while the task is claimed by you. The response is
written under the issue as "- Response: FIXED (sha) — text". ISSUE is orch's
ID (R1.2), or the reviewer's own ID kept with the issue (like TL-002) when it
names one issue.

Blocking issues (CRITICAL, HIGH, BLOCKING) may not be deferred. Rejecting an
issue needs a justification that says why it does not apply, in at least %d
words: a sentence, not "no" or "I disagree" (an issue that is right but hard
to fix is fixed, or escalated, not rejected). orch submit is refused while a
blocking issue of the newest review has no response.

--commit takes any commit-ish of the repository the command runs in: HEAD (the
current worktree's), a full or short hash, a branch or tag, with ~N or ^N. It
must be on the task's branch (its tip or an ancestor), and its full hash is
recorded. Inside the task's worktree the ID may be omitted.

%s`, workflow.MinJustificationWords, holderSyncHelp),
		Example: `  orch respond T-4k9x2m R1.1 fixed -m "fork start uses snapResult" --commit 3f2a9c1
  orch respond R1.1 fixed -m "parameterised the query" --commit HEAD
  orch respond R1.2 deferred -m "tracked as T-7hd3kq"
  orch respond T-4k9x2m R2.1 rejected -m "the input is a constant, never user data"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || len(args) > 3 {
				return exactArgs(3, "respond [ID] ISSUE fixed|deferred|rejected -m TEXT [--commit SHA]")(cmd, args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				return runRespond(o, "", args[0], args[1])
			}
			return runRespond(o, args[0], args[1], args[2])
		},
	}
	cmd.Flags().StringVarP(&o.Text, "message", "m", "", "what you did, or why not")
	cmd.Flags().StringVar(&o.Commit, "commit", "", "the commit that fixes it: HEAD, a hash, BRANCH~N (on the task's branch)")
	o.step.addFlags(cmd)
	return cmd
}

func runRespond(o *respondOptions, ref, issue, status string) error {
	return o.step.taskStep(o.g, ref, "respond", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Respond(id, issue, status, o.Text, o.Commit)
	})
}
