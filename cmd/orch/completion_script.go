package main

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

// setupCompletion adjusts cobra's default completion command: the scripts
// go to orch's stdout (cobra captures os.Stdout when the command is built),
// --json wraps the script in one document, and an unknown shell is a usage
// error instead of a help page that exits 0.
// completionExamples are the completion subcommands' examples.
var completionExamples = map[string]string{
	"bash":       "  source <(orch completion bash)\n  orch completion bash --no-descriptions",
	"zsh":        "  orch completion zsh > \"${fpath[1]}/_orch\"",
	"fish":       "  orch completion fish | source",
	"powershell": "  orch completion powershell | Out-String | Invoke-Expression",
}

func setupCompletion(g *globalOptions, c *cobra.Command) {
	c.Short = "Print a shell completion script (bash, zsh, fish, powershell)"
	c.Example = "  source <(orch completion bash)\n  orch completion fish --json"
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return &workflow.UsageError{Msg: fmt.Sprintf("%q is not a shell orch completes", args[0]), Hint: "usage: orch completion bash|zsh|fish|powershell"}
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if g.JSON { // there is no answer to give: the help is not one
			return &workflow.UsageError{Msg: "orch completion needs a shell", Hint: "usage: orch completion bash|zsh|fish|powershell"}
		}
		return cmd.Help()
	}
	for _, sub := range c.Commands() {
		shell := sub.Name()
		sub.Example = completionExamples[shell]
		sub.RunE = func(cmd *cobra.Command, args []string) error {
			noDesc, _ := cmd.Flags().GetBool("no-descriptions")
			var b bytes.Buffer
			var err error
			root := cmd.Root()
			switch shell {
			case "bash":
				err = root.GenBashCompletionV2(&b, !noDesc)
			case "zsh":
				if noDesc {
					err = root.GenZshCompletionNoDesc(&b)
				} else {
					err = root.GenZshCompletion(&b)
				}
			case "fish":
				err = root.GenFishCompletion(&b, !noDesc)
			case "powershell":
				if noDesc {
					err = root.GenPowerShellCompletion(&b)
				} else {
					err = root.GenPowerShellCompletionWithDesc(&b)
				}
			default:
				return &workflow.UsageError{Msg: fmt.Sprintf("%q is not a shell orch completes", shell)}
			}
			if err != nil {
				return err
			}
			if g.JSON {
				return g.out().writeJSON(completionAnswer{shell, b.String()})
			}
			_, err = g.io.Out.Write(b.Bytes())
			return err
		}
	}
}

// completionAnswer is orch completion's JSON answer.
type completionAnswer struct {
	Shell  string `json:"shell"`
	Script string `json:"script"`
}
