package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/workflow"
)

type promptOptions struct {
	g    *globalOptions
	Role string
}

func newPromptCmd(g *globalOptions) *cobra.Command {
	o := &promptOptions{g: g}
	cmd := &cobra.Command{
		Use:   "prompt [ID] [--role R]",
		Short: "Print the prompt for a task",
		Long: `Print the prompt an agent works from: the task, and for a retry the newest
review feedback first (blocking issues before suggestions), the branch to
continue, the PR not to duplicate, the exact commands to run next and how
close escalation is. The template is prompts/<role>.md on the state branch,
else the embedded one for implementer or reviewer. The role defaults to
reviewer for a submitted task and to the task's role otherwise.`,
		Example: `  orch prompt T-4k9x2m
  orch prompt --role reviewer T-4k9x2m
  orch prompt            # inside the task's worktree`,
		Args: maxArgs(1, "prompt [ID] [--role R]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runPrompt(o, argOr(args, 0)) },
	}
	cmd.Flags().StringVar(&o.Role, "role", "", "render the prompt of this role")
	return cmd
}

// promptAnswer is orch prompt's JSON answer.
type promptAnswer struct {
	Task   answer.Task `json:"task"`
	Role   string      `json:"role"`
	Prompt string      `json:"prompt"`
}

func runPrompt(o *promptOptions, ref string) error {
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		s, err := e.Lookup(ref)
		if err != nil {
			return nil, err
		}
		text, role, err := e.Prompt(s.Task.ID, o.Role)
		if err != nil {
			return nil, err
		}
		return func(out *output) error {
			if o.g.JSON {
				return out.writeJSON(promptAnswer{o.g.task(e, s), role, text})
			}
			_, err := fmt.Fprint(out.Out, text)
			return err
		}, nil
	})
}
