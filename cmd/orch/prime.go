package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/workflow"
)

type primeOptions struct {
	g *globalOptions
}

func newPrimeCmd(g *globalOptions) *cobra.Command {
	o := &primeOptions{g: g}
	return &cobra.Command{
		Use:   "prime",
		Short: "Say what you are working on (for a harness's session hook)",
		Long: `Print, in a few lines, the task you have claimed (the one whose worktree orch
runs in, else your newest claim), its branch and worktree, and the blocking
issues of its newest review still to answer; or that nothing is claimed and
how to claim. orch setup claude runs it when a session starts. It exits 0
also when orch is not set up here, so that a hook never fails a session.`,
		Example: `  orch prime
  ORCH_AGENT=agent-a orch prime --json`,
		Args: exactArgs(0, "prime"),
		RunE: func(cmd *cobra.Command, args []string) error { return runPrime(o) },
	}
}

// primeAnswer is orch prime's JSON answer.
type primeAnswer struct {
	Agent       string       `json:"agent"`
	SetUp       bool         `json:"set_up"`       // orch is set up in this repository (prime exits 0 either way)
	Task        *answer.Task `json:"task"`         // the task worked on; null when none is claimed
	OtherClaims []string     `json:"other_claims"` // IDs of the other tasks the agent has claimed
	Worktree    string       `json:"worktree"`     // the task's worktree ("" when none)
	Round       int          `json:"round"`        // the newest review round (0: none)
	OpenIssues  []issueJSON  `json:"open_issues"`  // its blocking issues not yet answered
	Notes       []string     `json:"notes"`        // its notes, one line each
	Next        string       `json:"next"`         // what to run next
}

func runPrime(o *primeOptions) error {
	err := o.g.run(func(e *workflow.Engine) (printer, error) {
		p, err := e.Prime()
		if err != nil {
			return nil, err
		}
		return func(out *output) error { return printPrime(o, out, e, p) }, nil
	})
	var notInit *workflow.NotInitializedError
	if errors.As(err, &notInit) {
		// A session hook must not fail the session.
		if o.g.JSON {
			return o.g.out().writeJSON(primeAnswer{Agent: o.g.Agent, OtherClaims: []string{}, OpenIssues: []issueJSON{}, Notes: []string{},
				Next: "orch is not set up in this repository: orch init sets it up"})
		}
		fmt.Fprintln(o.g.io.Out, "orch: not set up in this repository (orch init sets it up)")
		return nil
	}
	return err
}

func primeNext(p *workflow.Prime) string {
	if p.Task == nil {
		return "Claim one: orch claim --worktree --prompt"
	}
	id := p.Task.Task.ID
	if len(p.Open) > 0 {
		return fmt.Sprintf("orch prompt %s has the whole feedback; answer each blocking issue (orch respond %s ISSUE fixed|rejected -m ...), then orch submit %s", id, id, id)
	}
	return fmt.Sprintf("orch prompt %s has the whole task; when done: orch submit %s -m \"what changed\"", id, id)
}

// printPrime prints what orch prime found.
func printPrime(o *primeOptions, out *output, e *workflow.Engine, p *workflow.Prime) error {
	if o.g.JSON {
		doc := primeAnswer{Agent: e.Actor, SetUp: true, OtherClaims: nonNil(p.Others), Worktree: p.Worktree, Round: p.Round,
			OpenIssues: issuesJSON(p.Open), Notes: nonNil(p.Notes), Next: primeNext(p)}
		if p.Task != nil {
			tj := o.g.task(e, p.Task)
			doc.Task = &tj
		}
		return out.writeJSON(doc)
	}
	w := out.Out
	if p.Task == nil {
		fmt.Fprintf(w, "orch: %s has no task claimed. %s\n", e.Actor, primeNext(p))
		return nil
	}
	t := p.Task.Task
	fmt.Fprintf(w, "orch: %s is working on %s: %s (attempt %d", e.Actor, t.ID, t.Title, max(t.Attempts, 1))
	if t.RejectionCount > 0 {
		fmt.Fprintf(w, ", rejected %d time(s)", t.RejectionCount)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "branch: %s\n", t.Branch)
	if p.Worktree != "" {
		fmt.Fprintf(w, "worktree: %s (cd %q: all the work happens there)\n", p.Worktree, p.Worktree)
	}
	if p.Round > 0 {
		fmt.Fprintf(w, "newest review (rejection #%d): %d blocking issue(s) to answer\n", p.Round, len(p.Open))
		for _, is := range p.Open {
			what := is.Title
			if what == "" {
				what = is.Problem
			}
			fmt.Fprintf(w, "  %s %s %s\n", is.ID, is.Location, text.OneLine(what))
		}
		for _, n := range p.Notes {
			fmt.Fprintf(w, "  %s\n", text.OneLine(n))
		}
	}
	if len(p.Others) > 0 {
		fmt.Fprintf(w, "also claimed by you: %s\n", strings.Join(p.Others, ", "))
	}
	fmt.Fprintln(w, "next: "+primeNext(p))
	return nil
}
