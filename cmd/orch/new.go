package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/workflow"
)

type newOptions struct {
	g         *globalOptions
	Priority  string
	Role      string
	DependsOn []string
	Labels    []string
	Assign    string
	Body      string
	BodyFile  string
}

func newNewCmd(g *globalOptions) *cobra.Command {
	o := &newOptions{g: g}
	cmd := &cobra.Command{
		Use:   "new TITLE",
		Short: "Create a task in incoming",
		Long: `Create a task: tasks/<id>-<slug>.md on the state branch, queue incoming.
It prints the new task's ID. ` + workflow.TransitionHelp("new"),
		Example: `  orch new "Fix the login redirect" --priority high --label auth
  orch new "Add OAuth provider" --depends-on T-4k9x2m -F spec.md
  echo "details" | orch new "Write the migration" -F -`,
		Args: newArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runNew(o, args[0]) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.Priority, "priority", "p", "", "P0 (highest) to P3, or critical|high|medium|low (default P2)")
	f.StringVar(&o.Role, "role", "", "the role that may claim it (default: default_role of config.yaml)")
	f.StringArrayVar(&o.DependsOn, "depends-on", nil, "a task that must be done first (repeatable)")
	f.StringArrayVar(&o.Labels, "label", nil, "a label (repeatable)")
	f.StringVar(&o.Assign, "assign", "", "only this agent may claim it")
	f.StringVar(&o.Body, "body", "", "the task's description (markdown)")
	f.StringVarP(&o.BodyFile, "file", "F", "", "read the description from `FILE` (- for stdin)")
	return cmd
}

func runNew(o *newOptions, title string) error {
	body := o.Body
	if o.BodyFile != "" {
		if o.Body != "" {
			return &workflow.UsageError{Msg: "give the body with --body or -F, not both"}
		}
		b, err := o.g.readInput(o.BodyFile)
		if err != nil {
			return err
		}
		body = string(b)
	}
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		res, err := e.New(workflow.NewTask{Title: title, Priority: o.Priority, Role: o.Role, Assign: o.Assign, DependsOn: o.DependsOn, Labels: o.Labels, Body: body})
		if err != nil {
			return nil, err
		}
		return func(out *output) error {
			if o.g.JSON {
				return out.writeJSON(newAnswer{o.g.task(e, res.Task), res.Commit.String()})
			}
			fmt.Fprintln(out.Out, res.Task.Task.ID)
			fmt.Fprintf(out.Err, "created %s (%s, %s): %s\n", res.Task.Task.ID, res.Task.Task.Queue, res.Task.Task.Priority, res.Task.Task.Title)
			return nil
		}, nil
	})
}

// maxInput bounds what orch reads from a file or stdin argument.
const maxInput = 16 << 20

// readInput reads FILE, or stdin for "-".
// readInput is readInput from this command's stdin, which it keeps when it
// read it (stdinText), for a failure to save.
func (g *globalOptions) readInput(name string) ([]byte, error) {
	if g.optimistic {
		// The body may run twice (runner.go): stdin would be read empty
		// the second time.
		return nil, fmt.Errorf("internal error: orch %s reads %s inside a body that may run twice; read it before g.run", g.verb, name)
	}
	b, err := readInput(g.io.In, name)
	if name == "-" {
		g.stdinText = b
	}
	return b, err
}

func readInput(stdin io.Reader, name string) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, &workflow.UsageError{Msg: fmt.Sprintf("cannot read %s: %v", name, err)}
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInput {
		return nil, &workflow.UsageError{Msg: fmt.Sprintf("%s is larger than %d bytes", name, maxInput)}
	}
	return b, nil
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "-"
	}
	return h.String()[:7]
}

func hashOrEmpty(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// newAnswer is orch new's JSON answer.
type newAnswer struct {
	Task   answer.Task `json:"task"`
	Commit string      `json:"commit"`
}

// newForm is orch new's usage line.
const newForm = "new TITLE [--priority P] [--role R] [--depends-on ID]... [--label L]... [--assign AGENT] [--body TEXT | -F FILE|-]"

// newArgs wants the title as one argument. Words given apart are not
// joined: the shell has already read them (a quote, a #, a * in an unquoted
// title change it), so orch shows the title quoted, to run as meant.
func newArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return &workflow.UsageError{Msg: fmt.Sprintf("orch new takes the title as one argument, got %d words", len(args)),
			Hint: "quote the title: orch new " + shellQuote(strings.Join(args, " "))}
	}
	return exactArgs(1, newForm)(cmd, args)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
