package coordinator

import (
	"regexp"
	"time"
)

// Run is config.yaml's run: section, resolved: every slot's command and
// rate-limit pattern filled in (from its harness preset when it names
// one), every duration set.
type Run struct {
	Agents    []*Slot
	Reviewers []*Slot
	// TaskTimeout (wall clock) and StallTimeout (no output) end an agent's
	// process group: SIGTERM, then SIGKILL after KillGrace.
	TaskTimeout  time.Duration
	StallTimeout time.Duration
	KillGrace    time.Duration
	// MaxProvisional > 0 stops claiming while that many submissions wait
	// for review; MaxCrashes exits without a transition in a row escalate
	// a task.
	MaxProvisional int
	MaxCrashes     int
	// Backoff is a rate-limited slot's first wait when its agent's output
	// gives no reset time; it doubles each time. MaxWait caps every wait,
	// a reset time the output names included.
	Backoff time.Duration
	MaxWait time.Duration
	// MaxLog caps each run's log, in bytes (0: no cap).
	MaxLog int64
	// RenewEvery is how often a running agent's lease is renewed.
	RenewEvery time.Duration
	// PollPRs > 0 runs orch pr poll that often (github.repo set).
	PollPRs time.Duration
	// Notify is run.notify: a command run with an event's JSON on stdin
	// when a person is needed or the run goes idle (notify.go).
	Notify string
}

// Slot is one agent or reviewer of run: one actor, one process at a time.
type Slot struct {
	Name     string
	Reviewer bool
	Cmd      string // run by sh -c in the task's worktree, the prompt on stdin
	Harness  string
	// Stream is the structured output its runs print ("claude", "codex"),
	// read by coordinator/harness; "" is plain text. Program is the
	// preset's executable, checked at start.
	Stream        string
	Program       string
	Account       string
	Roles         []string
	Labels        []string
	RateLimit     *regexp.Regexp
	RateLimitExit map[int]bool
	// Skip, set by the coordinator, names the tasks the slot passes over
	// for now (a review whose branch is not here).
	Skip func(task string) bool
}
