//go:build unix

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/orch-tool/orch/coordinator"
)

// On a terminal orch run prints what each run came to, not its steps
// (the live lines show those), unless -v; a failed exit is shown, since
// its line names what the agent said. Elsewhere every event is a line.
func TestRunPrinterSteps(t *testing.T) {
	one, zero := 1, 0
	events := []coordinator.Event{
		{Event: "claimed", Text: "impl-1 claimed T-1 (attempt 1)"},
		{Event: "started", Text: "impl-1 started on T-1"},
		{Event: "exited", ExitCode: &zero, Text: "impl-1 on T-1 exited 0"},
		{Event: "submitted", Text: "impl-1 on T-1: submitted (provisional)"},
		{Event: "exited", ExitCode: &one, Text: "impl-2 on T-2 exited 1: cluade: not found"},
		{Event: "paused", Text: "T-2 paused (crash)"},
	}
	for _, c := range []struct {
		tty, verbose bool
		want         []string
	}{
		{true, false, []string{"submitted", "cluade: not found", "paused"}},
		{true, true, []string{"claimed", "started", "exited 0", "submitted", "cluade", "paused"}},
		{false, false, []string{"claimed", "started", "exited 0", "submitted", "cluade", "paused"}},
	} {
		var out bytes.Buffer
		g := &globalOptions{io: &streams{Out: &out, Err: &out}}
		p := &runPrinter{g: g, tty: c.tty, steps: c.verbose || !c.tty}
		for _, ev := range events {
			p.event(ev)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != len(c.want) {
			t.Errorf("tty %v, -v %v: %d lines, want %d:\n%s", c.tty, c.verbose, len(lines), len(c.want), out.String())
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("tty %v, -v %v: line %d is %q, want %q in it", c.tty, c.verbose, i, lines[i], w)
			}
		}
	}
}
