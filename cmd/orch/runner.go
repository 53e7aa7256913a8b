package main

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/workflow"
)

// Every command declares how it runs (its kind, an annotation of the cobra
// command), and one runner picks the locking and retry strategy from it:
//
//   - read and transition: the body runs while the view is still being
//     scanned, on the branch as it is (gitstore.Store.Defer). When the
//     reconcile, settled at the body's first commit or after it, finds a
//     hand edit, the body's answer is dropped and the body runs again on the
//     reconciled state. That is safe only because the body's effects are the
//     engine's (its commit is retried by the store, its answer is a closure
//     printed once it stands): it reads no input (readInput refuses inside
//     it; a verb reads -F FILE|- before it runs), opens no editor and talks
//     to no remote. A read changes nothing, so the rule of a claimed task's
//     worktree does not bind it (docs/design.md §5.2).
//   - interactive: the view is reconciled first and the body runs once; it
//     may read input, open an editor, commit more than once, or act outside
//     the repository (a worktree, gh).
//   - remote: through a remote (fetch, merge, step, push): the workflow step
//     opens the engines it needs (workflow.Sync, StepSync, ClaimSync,
//     HeartbeatSync); the runner prints what it answers.
//   - long: lives long and opens the store again and again (serve, run,
//     board --watch, mcp): an in-memory cache, and garbage collected as a
//     long-running program.
//   - none: needs no repository (version, completion, help).
//
// A verb with --sync is a transition that becomes remote when the flag is
// set (runRemote).
type verbKind string

const (
	kindRead        verbKind = "read"
	kindTransition  verbKind = "transition"
	kindInteractive verbKind = "interactive"
	kindRemote      verbKind = "remote"
	kindLong        verbKind = "long"
	kindNone        verbKind = "none"
)

// kindKey is the cobra annotation that holds a command's kind.
const kindKey = "orch-kind"

// declare sets a command's kind.
func declare(k verbKind, cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[kindKey] = string(k)
	return cmd
}

// kindOf is a command's declared kind ("" when it has none: a command that
// only groups others, or cobra's own).
func kindOf(cmd *cobra.Command) verbKind { return verbKind(cmd.Annotations[kindKey]) }

// output is where a verb's answer goes: the process's standard output (or
// the JSON printer between the verb and it) and standard error. The runner
// hands it to the print closure a verb's body returns, once the answer
// stands.
type output struct {
	g   *globalOptions
	Out io.Writer
	Err io.Writer
}

// out is the output of this process.
func (g *globalOptions) out() *output { return &output{g: g, Out: g.io.Out, Err: g.io.Err} }

// writeJSON prints v (a struct or map) as one JSON document with
// schema_version first.
func (o *output) writeJSON(v any) error {
	doc, err := answer.Marshal(v)
	if err != nil {
		return err
	}
	return o.emitJSON(doc)
}

// emitJSON writes one finished JSON document (ending in a newline).
func (o *output) emitJSON(doc []byte) error {
	_, err := o.Out.Write(doc)
	return err
}

// printTransition reports a moved task: the JSON document, or one line.
func (o *output) printTransition(e *workflow.Engine, verb string, res *workflow.Result) error {
	if o.g.JSON {
		return o.writeJSON(o.g.transition(e, res))
	}
	if res.From != res.To {
		fmt.Fprintf(o.Out, "%s: %s -> %s\n", res.Task.Task.ID, res.From, res.To)
	} else {
		fmt.Fprintf(o.Out, "%s: %s (%s)\n", res.Task.Task.ID, verb, res.To)
	}
	if x := res.Escalation; x != nil && x.Rule != "manual" {
		// A rule escalated it, not the actor's own orch escalate: say which.
		fmt.Fprintf(o.Out, "%s\n", escalationLine(res.Task.Task.ID, x))
	}
	return nil
}

// escalationLine says why a transition escalated a task, on a line of its
// own: the reason in words, the rule's code, where the options are.
func escalationLine(id string, x *workflow.Escalation) string {
	why := strings.TrimSuffix(strings.TrimSpace(text.OneLine(x.Why)), ".")
	return fmt.Sprintf("%s escalated (%s): %s. A person decides: orch inbox shows the options.", id, x.Rule, why)
}

// printer prints a verb's answer.
type printer func(out *output) error

// body is a verb's work on an open engine: it returns the printer of its
// answer (nil: nothing to print).
type body func(e *workflow.Engine) (printer, error)

// run runs a verb's body as its kind says.
func (g *globalOptions) run(fn body) error {
	switch g.kind {
	case kindRead, kindTransition:
		return g.runOptimistic(fn)
	case kindInteractive, kindLong:
		return g.runOnce(fn)
	}
	return fmt.Errorf("internal error: orch %s (kind %q) runs no engine body", g.verb, g.kind)
}

// runPrinting runs a body that prints as it goes (and may act outside the
// repository as it goes: remove worktrees, run gh): it runs once, on the
// reconciled view. A transition may not: its body must be one that may run
// twice (run), so that it can start before the view is scanned.
func (g *globalOptions) runPrinting(fn func(e *workflow.Engine, out *output) error) error {
	if g.kind == kindTransition {
		return fmt.Errorf("internal error: orch %s is a transition, and prints inside its body (run, not runPrinting)", g.verb)
	}
	return g.runOnce(func(e *workflow.Engine) (printer, error) { return nil, fn(e, g.out()) })
}

// runOptimistic: see the kinds above.
func (g *globalOptions) runOptimistic(fn body) error {
	e, err := workflow.Open(g.engineOptions(true))
	if err != nil {
		return err
	}
	g.optimistic = true
	print, ferr := fn(e)
	ferr = e.ForActor(ferr)
	serr := e.Settle()
	if errors.Is(ferr, gitstore.ErrViewChanged) || errors.Is(serr, gitstore.ErrViewChanged) {
		e.ViewChanged()
		print, ferr = fn(e)
		ferr = e.ForActor(ferr)
	} else if ferr == nil {
		ferr = serr
	}
	g.optimistic = false
	if print != nil {
		if perr := print(g.out()); ferr == nil {
			ferr = perr
		}
	}
	if ferr == nil && g.kind == kindTransition && !g.dryRun {
		g.archiveDue(e)
	}
	return firstErr(ferr, g.close(e))
}

// archiveDue moves a batch of tasks finished more than archive_after ago to
// the archive, after a transition has answered: finished work leaves the
// hot path a bounded batch at a time, as part of the commands that change
// the state anyway. It is housekeeping: a failure changes nothing, the
// next command tries again, and the transition's answer stands.
func (g *globalOptions) archiveDue(e *workflow.Engine) {
	if _, err := e.ArchiveDue(workflow.ArchiveBatch); err != nil {
		g.printNoteList([]string{"moving finished tasks to the archive failed (the next command tries again): " + err.Error()})
	}
}

// runOnce: see the kinds above.
func (g *globalOptions) runOnce(fn body) error {
	if g.kind == kindLong {
		g.longRunning = true
		// It lives for hours: collect garbage as a long-running Go program
		// does (main turns collection off for one-shot commands).
		debug.SetGCPercent(100)
	}
	e, err := g.open()
	if err != nil {
		return err
	}
	print, ferr := fn(e)
	ferr = e.ForActor(ferr)
	if print != nil && ferr == nil {
		ferr = print(g.out())
	}
	return firstErr(ferr, g.close(e))
}

// runRemote runs a step through the remote (step opens the engines it
// needs and leaves the last one open), prints the notes it gives, then the
// answer.
func (g *globalOptions) runRemote(step func(opts workflow.Options) (*workflow.Engine, []string, error), print func(e *workflow.Engine) printer) error {
	e, notes, err := step(g.engineOptions(false))
	g.printNoteList(notes)
	if err != nil {
		return err
	}
	perr := print(e)(g.out())
	return firstErr(perr, g.close(e))
}

// firstErr is the verb's error, else closing's: the verb's is what to
// report (closing after a failure fails for the same reason).
func firstErr(err, closeErr error) error {
	if err != nil {
		return err
	}
	return closeErr
}

// taskVerb resolves the task argument (or the current worktree's task) and
// runs a transition on it; the answer is the transition.
func (g *globalOptions) taskVerb(ref, verb string, fn func(e *workflow.Engine, id string) (*workflow.Result, error)) error {
	return g.run(func(e *workflow.Engine) (printer, error) {
		s, err := e.Lookup(ref)
		if err != nil {
			return nil, err
		}
		res, err := fn(e, s.Task.ID)
		if err != nil {
			return nil, err
		}
		return func(out *output) error { return out.printTransition(e, verb, res) }, nil
	})
}
