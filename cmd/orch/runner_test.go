package main

import (
	"os"
	"testing"
)

// TestEveryCommandDeclaresItsKind: the runner picks each command's locking
// and retry strategy from its kind (runner.go), so every command that runs
// has one; only the commands that group others have none.
func TestEveryCommandDeclaresItsKind(t *testing.T) {
	g := &globalOptions{io: &streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}}
	root := newRootCmd(g)
	for _, c := range visibleCommands(root) {
		k := kindOf(c)
		if k == "" && c.Name() != "completion" && c.Parent().Name() != "completion" {
			t.Errorf("%s declares no kind (declare in root.go)", c.CommandPath())
		}
		switch k {
		case "", kindRead, kindTransition, kindInteractive, kindRemote, kindLong, kindNone:
		default:
			t.Errorf("%s: unknown kind %q", c.CommandPath(), k)
		}
	}
}

// TestRunPrintingRefusesTransitions: a transition's body may run twice
// (it starts before the view is scanned), so it may not print as it goes.
func TestRunPrintingRefusesTransitions(t *testing.T) {
	g := &globalOptions{kind: kindTransition, verb: "submit"}
	if err := g.runPrinting(nil); err == nil {
		t.Fatal("runPrinting ran a transition's body")
	}
}

// TestReadInputRefusedInOptimisticBody: a body that may run twice cannot
// read stdin (it would read it empty the second time).
func TestReadInputRefusedInOptimisticBody(t *testing.T) {
	g := &globalOptions{optimistic: true, verb: "reject"}
	if _, err := g.readInput("-"); err == nil {
		t.Fatal("readInput read stdin inside an optimistic body")
	}
}
