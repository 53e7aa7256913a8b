package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/coordinator"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/workflow"
)

type logsOptions struct {
	g       *globalOptions
	Attempt int
	Review  bool
	Follow  bool
	Raw     bool
}

func newLogsCmd(g *globalOptions) *cobra.Command {
	o := &logsOptions{g: g}
	cmd := &cobra.Command{
		Use:   "logs [ID] [--attempt N [--review]] [-f]",
		Short: "Print the output of a task's runs under orch run",
		Long: `orch run keeps one log per run in the private state of this clone
(<git common dir>/orch/logs/<task>/: N.log for the implementer's attempt N,
review-N.log for review claim N). orch logs prints the newest, or the one
--attempt (with --review, the review claim) names. -f follows it while orch
run still runs it. What an agent printed is shown with its control
characters made visible (an escape sequence cannot set the terminal's title
or clipboard); --raw copies the bytes as they are. With --json: the task's
logs, and the text of the one chosen. Inside a task's worktree ID may be
omitted.`,
		Example: `  orch logs T-4k9x2m
  orch logs T-4k9x2m --attempt 1
  orch logs T-4k9x2m -f
  orch logs T-4k9x2m --json`,
		Args: maxArgs(1, "logs [ID] [--attempt N [--review]] [-f]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runLogs(o, argOr(args, 0)) },
	}
	f := cmd.Flags()
	f.IntVar(&o.Attempt, "attempt", 0, "the run to print (default: the newest)")
	f.BoolVar(&o.Review, "review", false, "with --attempt: the review claim of that number")
	f.BoolVarP(&o.Follow, "follow", "f", false, "keep printing while orch run runs it")
	f.BoolVar(&o.Raw, "raw", false, "copy the log's bytes as they are, control characters included")
	return cmd
}

// logsAnswer is orch logs's JSON answer.
type logsAnswer struct {
	Task answer.Task `json:"task"`
	Logs []logJSON   `json:"logs"`
	Log  string      `json:"log"`  // the chosen log's path
	Text string      `json:"text"` // its text
}

// logJSON is one run's log (coordinator.LogFile).
type logJSON struct {
	Path     string      `json:"path"`
	Attempt  int         `json:"attempt"`
	Reviewer bool        `json:"reviewer"`
	Size     int64       `json:"size"`
	Modified answer.Time `json:"modified"`
}

func logsJSON(logs []coordinator.LogFile) []logJSON {
	out := []logJSON{}
	for _, l := range logs {
		out = append(out, logJSON{l.Path, l.Attempt, l.Reviewer, l.Size, answer.Time(l.Modified)})
	}
	return out
}

func runLogs(o *logsOptions, ref string) error {
	var task answer.Task
	var id string
	err := o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		id, task = s.Task.ID, o.g.task(e, s)
		return nil
	})
	if err != nil {
		return err
	}
	priv := o.g.privDir()
	logs := coordinator.Logs(priv, id)
	var chosen *coordinator.LogFile
	for i := range logs {
		l := &logs[i]
		if o.Attempt == 0 || (l.Attempt == o.Attempt && l.Reviewer == o.Review) {
			chosen = l // the newest, or the one named
		}
	}
	if chosen == nil {
		what := "log on this clone of task"
		if o.Attempt > 0 {
			what = fmt.Sprintf("log on this clone of attempt %d of task", o.Attempt)
		}
		return &workflow.NotFoundError{What: what, Ref: id, Hint: "orch run writes one per run; orch logs " + id + " --json lists them"}
	}
	if o.g.JSON {
		b, err := os.ReadFile(chosen.Path)
		if err != nil {
			return err
		}
		return o.g.out().writeJSON(logsAnswer{task, logsJSON(logs), chosen.Path, string(b)})
	}
	f, err := os.Open(chosen.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	var w io.Writer = o.g.io.Out
	lc := &lineCleaner{w: o.g.io.Out}
	if !o.Raw {
		w = lc
	}
	if _, err := io.Copy(w, f); err != nil {
		return err
	}
	for o.Follow && running(priv, chosen.Path) {
		time.Sleep(200 * time.Millisecond)
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
	}
	if _, err = io.Copy(w, f); err != nil {
		return err
	}
	return lc.flush()
}

// lineCleaner writes what an agent printed with its control characters
// made visible, a whole line at a time, so that a character or a CRLF cut
// between two reads of a log that grows is cleaned whole.
type lineCleaner struct {
	w       io.Writer
	partial []byte
}

func (c *lineCleaner) Write(p []byte) (int, error) {
	c.partial = append(c.partial, p...)
	if i := bytes.LastIndexByte(c.partial, '\n'); i >= 0 {
		if _, err := io.WriteString(c.w, text.Visible(string(c.partial[:i+1]))); err != nil {
			return 0, err
		}
		c.partial = append(c.partial[:0], c.partial[i+1:]...)
	}
	return len(p), nil
}

func (c *lineCleaner) flush() error {
	if len(c.partial) == 0 {
		return nil
	}
	_, err := io.WriteString(c.w, text.Visible(string(c.partial)))
	c.partial = nil
	return err
}

// running reports whether a live orch run on this clone writes the log.
func running(priv, log string) bool {
	for _, j := range coordinator.Running(priv) {
		if j.Log == log {
			return true
		}
	}
	return false
}
