package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

type showOptions struct {
	g *globalOptions
}

func newShowCmd(g *globalOptions) *cobra.Command {
	o := &showOptions{g: g}
	cmd := &cobra.Command{
		Use:   "show [ID]",
		Short: "Print a task",
		Long: `Print a task file as committed on the state branch. ID may be any unique
prefix of the task's ID; inside a task's worktree it may be omitted.`,
		Example: `  orch show T-4k9x2m
  orch show 4k9x --json`,
		Args: maxArgs(1, "show [ID]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runShow(o, argOr(args, 0)) },
	}
	return cmd
}

func argOr(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

type sectionJSON struct {
	Level int    `json:"level"`
	Title string `json:"title"`
	Line  int    `json:"line"`
}

func runShow(o *showOptions, ref string) error {
	return o.g.withEngineOptimistic(func(e *workflow.Engine) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		t, err := e.Load(s)
		if err != nil {
			return err
		}
		if o.g.JSON {
			d := showJSON(e, t)
			if d.Refusal, err = e.RefusalAwaiting(t.Summary); err != nil {
				return err
			}
			return writeJSON(o.g.io.Out, d)
		}
		_, err = o.g.io.Out.Write(t.File.Src)
		return err
	})
}

type showDoc struct {
	Task     taskJSON `json:"task"`
	Blocking []string `json:"waiting_for,omitempty"`
	// Refusal is the refusal a blocked task waits on a decision for.
	Refusal  *workflow.PendingRefusal `json:"refusal,omitempty"`
	Rounds   []taskfile.Round         `json:"rounds"`
	Sections []sectionJSON            `json:"sections"`
	Body     string                   `json:"body"`
	Content  string                   `json:"content"`
}

func showJSON(e *workflow.Engine, t *workflow.Task) showDoc {
	d := showDoc{Task: toTaskJSON(e, t.Summary), Body: string(t.File.Body()), Content: string(t.File.Src)}
	if ok, pending := e.DepsDone(&t.Summary.Task); !ok {
		d.Blocking = pending
	}
	d.Rounds = t.File.FeedbackRounds()
	if d.Rounds == nil {
		d.Rounds = []taskfile.Round{}
	}
	d.Sections = []sectionJSON{}
	for _, sec := range t.File.Sections() {
		d.Sections = append(d.Sections, sectionJSON{Level: sec.Level, Title: sec.Title, Line: sec.StartLine})
	}
	return d
}
