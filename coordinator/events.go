package coordinator

import (
	"fmt"
	"strings"
	"time"

	"github.com/orch-tool/orch/taskfile"
)

// EventKind is one kind of event orch run reports: its name (Event.Event),
// what it says, and the fields it always fills besides time and text.
// orch run --json's schema lists these names, and requires these fields
// of each (docs/schema/run-event.json).
type EventKind struct {
	Name  string
	Doc   string
	Needs []string // JSON keys, beside event, time and text
}

// EventKinds is every event the coordinator and orch run emit.
var EventKinds = []EventKind{
	{"slot", "a slot of run: and the command it runs", []string{"slot", "role"}},
	{"slot_checked", "a slot's harness answered --version", []string{"slot", "role"}},
	{"slot_stopped", "a slot runs no more: its setup is broken (cause says why)", []string{"slot", "role", "reason", "cause"}},
	{"claimed", "a slot claimed a task (an implementer's attempt, a reviewer's review)", []string{"slot", "role", "task", "attempt"}},
	{"started", "a slot's agent started on its task", []string{"slot", "role", "task", "attempt", "log"}},
	{"killing", "orch run ends an agent's process group (reason: timeout, stall, stopped, lost)", []string{"slot", "task", "attempt", "reason"}},
	{"exited", "an agent's process ended (cause: its last words when it failed)", []string{"slot", "role", "task", "attempt", "exit_code", "duration", "log"}},
	{"escaped", "an agent left processes outside its process group, which orch run ended", []string{"slot", "task"}},
	{"submitted", "the agent submitted its task for review", []string{"slot", "task", "queue"}},
	{"paused", "the task went to needs_continuation: paused by its agent, or by orch run after a run without a transition (reason)", []string{"slot", "task", "queue"}},
	{"refused", "the agent refused its task (blocked)", []string{"slot", "task", "queue"}},
	{"failed", "the agent gave its task up", []string{"slot", "task", "queue"}},
	{"done", "the task is done", []string{"task", "queue"}},
	{"moved", "the agent moved its task to another queue", []string{"slot", "task", "queue"}},
	{"escalated", "the task waits for a person: rule is the rule code, cause says why in words", []string{"task", "queue", "rule", "cause"}},
	{"reviewed", "a reviewer gave its verdict (approved, rejected, or the queue it left the task in)", []string{"slot", "task", "verdict", "queue"}},
	{"released", "a reviewer ended without a verdict: its review claim is released", []string{"slot", "task", "reason"}},
	{"archived", "the task left the state branch while its agent ran", []string{"task"}},
	{"checked", "review.check ran on a submission (reason: passed, rejected, escalated, skipped)", []string{"task", "reason"}},
	{"landed", "approved work landed on the base branch", []string{"task", "reason"}},
	{"rejected", "a landing failed (a conflict, a red check): the work goes back to its author", []string{"task", "reason", "cause"}},
	{"skipped", "a landing passed a task over (moved meanwhile)", []string{"task", "reason"}},
	{"waiting", "claiming or landing waits (reason: max_provisional, land)", []string{"reason"}},
	{"backoff", "a rate-limited slot waits until a time", []string{"slot", "reason", "until"}},
	{"policy_held", "a policy file was changed in the view during a run: not committed, not used", []string{"slot", "task", "reason"}},
	{"config_changed", "config.yaml's run: changed on the state branch (it takes effect at the next start)", nil},
	{"error", "something went wrong; orch run goes on", nil},
	{"notify_failed", "run.notify's command failed or timed out; orch run goes on", []string{"cause"}},
	{"draining", "the first Ctrl-C: no new claims", nil},
	{"stopping", "the second Ctrl-C: the running agents are stopped", nil},
	{"idle", "nothing is left to claim or review and no agent runs: --until-idle exits, else orch run waits for work (once until there is some)", nil},
	{"summary", "the last event: what the run did, how long it took, what it spent", []string{"duration", "summary"}},
}

// Summary is what one orch run did, for its last event.
type Summary struct {
	// Ended is how it ended: idle, drained (one Ctrl-C), stopped (two),
	// slots_stopped (no slot can run), error.
	Ended     string `json:"ended"`
	Runs      int    `json:"runs"`
	Submitted int    `json:"submitted"`
	Approved  int    `json:"approved"`
	Rejected  int    `json:"rejected"`
	Landed    int    `json:"landed"`
	// Done counts the tasks that reached done (approved without land.mode,
	// or landed).
	Done         int     `json:"done"`
	Escalated    int     `json:"escalated"`
	Paused       int     `json:"paused"`
	Refused      int     `json:"refused"`
	Failed       int     `json:"failed"`
	SlotsStopped int     `json:"slots_stopped"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	// Left counts the open tasks at the end, by queue (incoming,
	// provisional, escalated, ...): what waits for the next run, or for a
	// person.
	Left map[string]int `json:"left"`
}

// count adds an event to the summary.
func (s *Summary) count(ev Event) {
	switch ev.Event {
	case "submitted":
		s.Submitted++
	case "reviewed":
		switch ev.Verdict {
		case "approved":
			s.Approved++
		case "rejected":
			s.Rejected++
		}
	case "landed":
		s.Landed++
	case "paused":
		s.Paused++
	case "refused":
		s.Refused++
	case "failed":
		s.Failed++
	case "slot_stopped":
		s.SlotsStopped++
	case "exited":
		s.Runs++
	}
	if ev.Queue == "done" || ev.Event == "landed" {
		s.Done++
	}
	if ev.Event == "escalated" || ev.Queue == "escalated" || (ev.Event == "checked" && ev.Reason == "escalated") {
		s.Escalated++
	}
}

// Line is the summary in words, for the end of orch run's output.
func (s Summary) Line(d time.Duration) string {
	var parts []string
	for _, n := range []struct {
		n    int
		what string
	}{{s.Submitted, "submitted"}, {s.Approved, "approved"}, {s.Rejected, "rejected"}, {s.Landed, "landed"}, {s.Done, "done"},
		{s.Escalated, "escalated"}, {s.Paused, "paused"}, {s.Refused, "refused"}, {s.Failed, "failed"}, {s.SlotsStopped, "slot(s) stopped"}} {
		if n.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n.n, n.what))
		}
	}
	did := "nothing moved"
	if len(parts) > 0 {
		did = strings.Join(parts, ", ")
	}
	line := fmt.Sprintf("orch run %s after %s: %d run(s); %s", endedWords(s.Ended), d, s.Runs, did)
	if s.InputTokens+s.OutputTokens > 0 || s.CostUSD > 0 {
		line += fmt.Sprintf("; %d tokens in, %d out, $%.2f", s.InputTokens, s.OutputTokens, s.CostUSD)
	}
	if len(s.Left) > 0 {
		var left []string
		for _, q := range taskfile.Queues { // in the board's order
			if n := s.Left[string(q)]; n > 0 {
				left = append(left, fmt.Sprintf("%d %s", n, q))
			}
		}
		line += "; left: " + strings.Join(left, ", ")
	}
	return line
}

func endedWords(ended string) string {
	switch ended {
	case "idle":
		return "went idle"
	case "drained":
		return "drained (Ctrl-C)"
	case "stopped":
		return "was stopped (a second Ctrl-C)"
	case "slots_stopped":
		return "stopped (no slot can run)"
	}
	return "ended with an error"
}
