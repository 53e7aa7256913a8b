package main

import (
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	orch "github.com/orch-tool/orch"
	"github.com/orch-tool/orch/workflow"
)

type initOptions struct {
	g       *globalOptions
	Example bool
	Base    string
}

func newInitCmd(g *globalOptions) *cobra.Command {
	o := &initOptions{g: g}
	cmd := &cobra.Command{
		Use:   "init [--example] [--base BRANCH]",
		Short: "Set orch up in this repository (idempotent)",
		Long: `Create the state branch "orch" with a default config.yaml, add /.orchestrator/
to .git/info/exclude and write the view. Running it again changes nothing.
With --example, the example tasks (one in every queue) are added as well.

base_branch, where every task's branch starts, is the branch checked out
here (main, master, develop, ...) unless --base names another; it is only
written into a new config.yaml (orch edit config changes it later).`,
		Example: `  orch init
  orch init --example
  orch init --base develop`,
		Args: exactArgs(0, "init [--example] [--base BRANCH]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runInit(o) },
	}
	cmd.Flags().BoolVar(&o.Example, "example", false, "also add the example config, prompts and tasks")
	cmd.Flags().StringVar(&o.Base, "base", "", "the base_branch of a new config (default: the branch checked out here)")
	return cmd
}

// initAnswer is orch init's JSON answer.
type initAnswer struct {
	Initialized  bool     `json:"initialized"`   // this run created the state branch
	Added        []string `json:"added"`         // files added to the state branch, relative to the repository
	Commit       string   `json:"commit"`        // "" when nothing was committed
	View         string   `json:"view"`          // the view's directory ("" in a bare repository)
	ExcludeAdded bool     `json:"exclude_added"` // /.orchestrator/ was added to .git/info/exclude
	BaseBranch   string   `json:"base_branch"`   // written into a new config.yaml ("" when none was written)
}

func runInit(o *initOptions) error {
	return o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		var example fs.FS
		if o.Example {
			example = orch.Example()
		}
		res, err := e.Init(workflow.InitOptions{Example: example, BaseBranch: o.Base})
		if err != nil {
			return err
		}
		if o.g.JSON {
			added := make([]string, len(res.Added))
			for i, p := range res.Added {
				added[i] = viewPath(p)
			}
			return o.g.out().writeJSON(initAnswer{res.Created, added, hashOrEmpty(res.Commit), res.View, res.ExcludeAdded, res.BaseBranch})
		}
		switch {
		case res.Created:
			fmt.Fprintf(out.Out, "Created the state branch %s (%s, commit %s).\n", e.Store.Ref, countOf(len(res.Added), "file"), short(res.Commit))
		case len(res.Added) > 0:
			fmt.Fprintf(out.Out, "Added %s to %s (commit %s).\n", countOf(len(res.Added), "example file"), e.Store.Ref, short(res.Commit))
		default:
			fmt.Fprintln(out.Out, "orch is already set up here; nothing changed.")
		}
		if res.View != "" {
			fmt.Fprintf(out.Out, "View: %s\n", res.View)
		} else if e.Store.ViewOwner != "" {
			fmt.Fprintf(out.Out, "The view .orchestrator/ belongs to %s; this state branch has no view: use orch edit ID for hand edits.\n", e.Store.ViewOwner)
		} else {
			fmt.Fprintln(out.Out, "Bare repository: no view; use orch edit ID for hand edits.")
		}
		if res.ExcludeAdded {
			fmt.Fprintln(out.Out, "Added /.orchestrator/ to .git/info/exclude.")
		}
		if res.BaseBranch != "" {
			fmt.Fprintf(out.Out, "Task branches start from %s (base_branch in config.yaml).\n", res.BaseBranch)
		}
		if res.Created {
			// As README.md's Quick start goes: a task, then an agent claims it
			// (into a worktree of its own), or orch run starts the agents.
			fmt.Fprintln(out.Out, `Next: orch new "My first task"; an agent takes it with orch claim --worktree,`)
			fmt.Fprintln(out.Out, `or orch run starts the agents of config.yaml's run: (orch help config).`)
		}
		return nil
	})
}

// countOf is "1 file", "14 files".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
