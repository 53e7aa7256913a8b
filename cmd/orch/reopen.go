package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type reopenOptions struct {
	g    *globalOptions
	Msg  string
	File string
	bulkOptions
}

func newReopenCmd(g *globalOptions) *cobra.Command {
	o := &reopenOptions{g: g}
	cmd := &cobra.Command{
		Use:   "reopen (ID... | --queue Q | --label L) (-m TEXT | -F FILE|-) [--dry-run]",
		Short: "Send a finished task back to incoming, from the archive too (a human's verb)",
		Long: `Reopen a failed, done or superseded task. ` + workflow.TransitionHelp("reopen") + `
Finished is final for agents; a person reopens a task when what made it fail,
or what it did, has changed. A task in the archive (archive_after) comes back
among the tasks in the same commit. The branch, the review feedback and the
counts are kept; the reason is written at the top of the task as
"## Reopened (<you>, <time>)", so the next agent reads it first. Several IDs,
or --queue and --label, reopen them all in one commit, or none when a rule
refuses one (--dry-run checks every rule and commits nothing).`,
		Example: `  orch reopen T-4k9x2m -m "Staging is back; the API key is in the vault now."
  orch reopen --queue failed --label staging -m "Staging is back."`,
		RunE: func(cmd *cobra.Command, args []string) error { return runReopen(o, args) },
	}
	addBulkFlags(cmd, &o.bulkOptions)
	cmd.Flags().StringVarP(&o.Msg, "message", "m", "", "why the task is reopened")
	cmd.Flags().StringVarP(&o.File, "file", "F", "", "read the reason from `FILE` (- for stdin)")
	return cmd
}

func runReopen(o *reopenOptions, refs []string) error {
	text, err := o.g.textArg(o.Msg, o.File, true, "reopen ID... (-m TEXT | -F FILE|-)")
	if err != nil {
		return err
	}
	return o.g.bulkVerb("reopen", refs, &o.bulkOptions, true, nil, func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Reopen(id, text)
	})
}
