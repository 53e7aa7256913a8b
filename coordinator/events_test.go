//go:build unix

package coordinator

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// An ending's cause, in words: orch run's reason first, then what the
// harness said, then a failed run's last line of output.
func TestEndCause(t *testing.T) {
	for _, c := range []struct {
		name string
		end  End
		want string
	}{
		{"a command not found", End{Reason: "crash", ExitCode: 127, Tail: []string{"starting", "sh: 1: cluade: not found", ""}}, "sh: 1: cluade: not found"},
		{"the harness's words", End{Reason: "crash", ExitCode: 1, Cause: "not logged in", Tail: []string{"x"}}, "not logged in"},
		{"a timeout, whatever it printed", End{Reason: "timeout", ExitCode: 143, Cause: "exit status 143", Tail: []string{"working"}}, "it ran past run.task_timeout"},
		{"a stop by the lead", End{Reason: "stopped", ExitCode: 143}, "the lead stopped orch run"},
		{"a clean exit says nothing", End{Reason: "crash", ExitCode: 0, Tail: []string{"all done"}}, ""},
		{"a failure with no output", End{Reason: "crash", ExitCode: 2}, ""},
		{"the exit status is said once", End{Reason: "crash", ExitCode: 127, Cause: "exit status 127: sh: 1: cluade: not found"}, "sh: 1: cluade: not found"},
		{"an exit status alone is no cause", End{Reason: "crash", ExitCode: 3, Cause: "exit status 3", Tail: []string{"no build tool"}}, "no build tool"},
		{"control characters made visible", End{Reason: "crash", ExitCode: 1, Tail: []string{"bad \x1b[31mred"}}, `bad \x1b[31mred`},
	} {
		if got := endCause(c.end); got != c.want {
			t.Errorf("%s: endCause = %q, want %q", c.name, got, c.want)
		}
	}
	if got := endWords(End{Reason: "crash", ExitCode: 127, Tail: []string{"sh: 1: cluade: not found"}}); got != "crash: sh: 1: cluade: not found" {
		t.Errorf("endWords = %q", got)
	}
}

// The summary counts what the events say, and says it in a line.
func TestSummary(t *testing.T) {
	var s Summary
	for _, ev := range []Event{
		{Event: "exited"}, {Event: "submitted", Queue: "provisional"},
		{Event: "exited"}, {Event: "reviewed", Verdict: "approved", Queue: "approved"},
		{Event: "landed", Reason: "land"},
		{Event: "exited"}, {Event: "reviewed", Verdict: "rejected", Queue: "escalated"},
		{Event: "exited"}, {Event: "paused", Queue: "needs_continuation"},
		{Event: "checked", Reason: "escalated", Queue: "escalated"},
		{Event: "slot_stopped"},
	} {
		s.count(ev)
	}
	s.Ended, s.InputTokens, s.OutputTokens, s.CostUSD = "drained", 1200, 300, 0.125
	want := Summary{Ended: "drained", Runs: 4, Submitted: 1, Approved: 1, Rejected: 1, Landed: 1, Done: 1, Escalated: 2, Paused: 1, SlotsStopped: 1,
		InputTokens: 1200, OutputTokens: 300, CostUSD: 0.125}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("summary = %+v, want %+v", s, want)
	}
	line := s.Line(90 * time.Second)
	if want := "orch run drained (Ctrl-C) after 1m30s: 4 run(s); 1 submitted, 1 approved, 1 rejected, 1 landed, 1 done, 2 escalated, 1 paused, 1 slot(s) stopped; 1200 tokens in, 300 out, $0.12"; line != want {
		t.Errorf("line = %q, want %q", line, want)
	}
	s.Left = map[string]int{"escalated": 1, "incoming": 3, "done": 0}
	if want := "; left: 3 incoming, 1 escalated"; !strings.HasSuffix(s.Line(0), want) {
		t.Errorf("line = %q, want it to end with %q", s.Line(0), want)
	}
	if line := (Summary{Ended: "idle"}).Line(0); line != "orch run went idle after 0s: 0 run(s); nothing moved" {
		t.Errorf("an empty run's line = %q", line)
	}
}

// run.notify hears what needs a person, and the end of the work.
func TestNotifies(t *testing.T) {
	for _, c := range []struct {
		ev   Event
		want bool
	}{
		{Event{Event: "escalated", Queue: "escalated"}, true},
		{Event{Event: "reviewed", Verdict: "rejected", Queue: "escalated"}, true},
		{Event{Event: "reviewed", Verdict: "rejected", Queue: "rejected"}, false},
		{Event{Event: "checked", Reason: "escalated"}, true},
		{Event{Event: "checked", Reason: "passed"}, false},
		{Event{Event: "slot_stopped"}, true},
		{Event{Event: "idle"}, true},
		{Event{Event: "exited"}, false},
		{Event{Event: "notify_failed"}, false},
		{Event{Event: "summary"}, false},
	} {
		if got := notifies(c.ev); got != c.want {
			t.Errorf("notifies(%s %s) = %v, want %v", c.ev.Event, c.ev.Queue, got, c.want)
		}
	}
}

// Every event name the coordinator knows is listed once.
func TestEventKindsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range EventKinds {
		if seen[k.Name] {
			t.Errorf("%s is listed twice", k.Name)
		}
		seen[k.Name] = true
	}
}

// Every event the code emits by name is a kind the schema knows: the
// scripts check only the events they see.
func TestEveryEmittedEventIsAKind(t *testing.T) {
	known := map[string]bool{}
	for _, k := range EventKinds {
		known[k.Name] = true
	}
	files, _ := filepath.Glob("*.go")
	files = append(files, filepath.Join("..", "cmd", "orch", "run.go"))
	re := regexp.MustCompile(`Event: "([a-z_]+)"`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			n++
			if !known[m[1]] {
				t.Errorf("%s emits %q, which EventKinds does not list", f, m[1])
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d events emitted by name: the pattern is out of date", n)
	}
}

// run.notify gets the event on stdin, its name and task in the
// environment; a failure says its last words; a hang is killed, its
// children too.
func TestRunNotify(t *testing.T) {
	dir := t.TempDir()
	ev := Event{Event: "escalated", Task: "T-1"}
	out := filepath.Join(dir, "got")
	if err := runNotify(`{ echo "$ORCH_EVENT $ORCH_TASK"; cat; } > `+out, dir, os.Environ(), ev, []byte(`{"event":"escalated"}`), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "escalated T-1\n{\"event\":\"escalated\"}\n" {
		t.Errorf("the command got %q", b)
	}
	err := runNotify("echo no mail here >&2; exit 3", dir, os.Environ(), ev, nil, 10*time.Second)
	if err == nil || err.Error() != "exit status 3: no mail here" {
		t.Errorf("a failure: %v", err)
	}
	err = runNotify("sleep 30 & sleep 30", dir, os.Environ(), ev, nil, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "ran past 200ms and was killed") {
		t.Errorf("a hang: %v", err)
	}
}
