//go:build unix

package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orch-tool/orch/coordinator/harness"
	"github.com/orch-tool/orch/internal/text"
)

// How a run that ended without a transition of its agent is read, and
// what becomes of its slot. The harness's own output says why it ended
// (coordinator/harness): a limit pauses the task uncounted and the slot
// waits; a broken setup (a command not found, not logged in, an invalid
// key, a model not found, a quota gone, tools denied) is the slot's
// problem, not the task's: the task goes back uncounted and the slot
// stops, so that one typo never escalates the queue; anything else is a
// crash, counted toward run.max_crashes.

// fastEnd is how soon a run that ends without a transition, and without a
// cause its output names, counts as ending fast: twice in a row, and the
// slot stops (a setup that cannot run, not two bad tasks).
const fastEnd = 20 * time.Second

// maxBackoffs is how many rate limits in a row without a reset time a slot
// waits out before it stops.
const maxBackoffs = 8

// versionTimeout bounds the start check of a harness (its --version).
const versionTimeout = 20 * time.Second

// endWithout records a run that ended without a transition, as its output
// and its exit explain it.
func (c *Coordinator) endWithout(s *slotState, end End, res harness.Result) {
	task := s.job.Task
	setup := setupCause(end, res)
	switch {
	case s.killed != "":
		end.Reason = s.killed
	case res.Cause.Wait() || s.limitedByPattern(end):
		end.Reason = "rate_limit"
	case res.Cause == harness.Quota:
		end.Reason = "setup"
		c.abandon(s, end)
		c.stopSlot(s, end.Cause+" (a quota that is gone is not a wait)")
		return
	case setup != "":
		end.Reason, end.Cause = "setup", setup
		c.abandon(s, end)
		c.stopSlot(s, setup)
		return
	case res.Cause == harness.Permission:
		end.Reason = "permission"
		again := s.lastCause == end.Cause
		s.lastCause = end.Cause
		c.abandon(s, end)
		if again {
			c.stopSlot(s, end.Cause+", twice in a row (run.allow says what agents may run)")
		}
		return
	case end.Duration < fastEnd && end.Cause == "" && s.lastFast != "" && s.lastFast != task:
		// Two tasks in a row, both over before they began: the slot, not
		// the tasks. This one goes back uncounted.
		end.Reason = "fast"
		first := s.lastFast
		c.abandon(s, end)
		c.stopSlot(s, fmt.Sprintf("its runs end within %s without a transition on two tasks in a row, and their output says nothing of why (%s, then %s: exit %d; %s)",
			fastEnd, first, task, end.ExitCode, lastLine(end.Tail)))
		return
	}
	s.lastFast, s.lastCause = "", ""
	if end.Reason == "crash" && end.Duration < fastEnd && end.Cause == "" {
		s.lastFast = task // a crash of this task, counted: the next fast one elsewhere stops the slot
	}
	limited := end.Reason == "rate_limit"
	c.abandon(s, end)
	if limited {
		c.backOff(s, res)
	}
}

// setupCause is the broken setup a run's ending shows, in words, or "":
// the harness said so (not logged in, an invalid key, a model not found),
// or the shell could not find the command (exit 127 with "not found").
func setupCause(end End, res harness.Result) string {
	if res.Cause == harness.Auth || res.Cause == harness.Model {
		return end.Cause
	}
	if end.ExitCode == 127 {
		for _, l := range end.Tail {
			if strings.Contains(l, "not found") || strings.Contains(l, "No such file") {
				return "command not found: " + text.Clip(strings.TrimSpace(l), 200)
			}
		}
	}
	return ""
}

// limitedByPattern applies a slot's own rate_limit (or rate_limit_exit) to
// a failed run: its last lines only, never the work text of a run that
// ended well.
func (s *slotState) limitedByPattern(end End) bool {
	if end.ExitCode == 0 {
		return false
	}
	if s.RateLimitExit[end.ExitCode] {
		return true
	}
	if s.RateLimit == nil {
		return false
	}
	tail := end.Tail
	if len(tail) > 5 {
		tail = tail[len(tail)-5:]
	}
	return slices.ContainsFunc(tail, s.RateLimit.MatchString)
}

func lastLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return text.Clip(l, 160)
		}
	}
	return "no output"
}

// backOff makes a rate-limited slot wait: until the reset time its agent's
// output gave, with every slot of the same harness or account; else alone,
// twice as long as the time before. A reset past run.max_wait, or
// maxBackoffs waits in a row with no reset time, stop the slot: a task is
// never held in an endless backoff (it went back to the queue already).
func (c *Coordinator) backOff(s *slotState, res harness.Result) {
	now := time.Now()
	maxWait := c.opts.Run.MaxWait
	if resetAt := res.ResetAt; !resetAt.IsZero() {
		until := resetAt.Add(time.Second)
		if until.Before(now) {
			until = now.Add(time.Second)
		}
		if maxWait > 0 && until.Sub(now) > maxWait {
			c.stopSlot(s, fmt.Sprintf("%s: that is past run.max_wait (%s)", res.Words, maxWait))
			return
		}
		for _, o := range c.slots {
			if o == s || (s.Harness != "" && o.Harness == s.Harness) || (s.Account != "" && o.Account == s.Account) {
				if until.After(o.backoff) {
					o.backoff = until
				}
				c.emit(Event{Event: "backoff", Slot: o.Name, Reason: "rate_limit", Until: until.UTC().Format(time.RFC3339),
					Text: fmt.Sprintf("%s waits until %s: %s said its limit resets then (%s)", o.Name, until.Format("15:04:05"), s.Name, res.Words)})
			}
		}
		return
	}
	d := c.opts.Run.Backoff << min(s.backoffStep, 10)
	s.backoffStep++
	if s.backoffStep > maxBackoffs || (maxWait > 0 && d > maxWait) {
		c.stopSlot(s, fmt.Sprintf("rate limited %d times in a row with no reset time given (%s)", s.backoffStep, orWords(res.Words, "rate limited")))
		return
	}
	s.backoff = now.Add(d)
	why := orWords(res.Words, "rate limited")
	if !strings.Contains(why, "no reset time given") { // the harness's words may say it already
		why += ", no reset time given"
	}
	c.emit(Event{Event: "backoff", Slot: s.Name, Reason: "rate_limit", Until: s.backoff.UTC().Format(time.RFC3339),
		Text: fmt.Sprintf("%s backs off for %s (%s)", s.Name, d, why)})
}

func orWords(w, or string) string {
	if w == "" {
		return or
	}
	return w
}

// stopSlot stops a slot whose setup cannot run: it claims nothing more
// until orch run starts again, and the lead is told why (the event, the
// slot's line, orch inbox).
func (c *Coordinator) stopSlot(s *slotState, why string) {
	if s.stopped != "" {
		return
	}
	s.stopped = why
	c.emit(Event{Event: "slot_stopped", Slot: s.Name, Role: s.role(), Reason: "setup", Cause: why,
		Text: fmt.Sprintf("%s stops: %s; its tasks went back to the queue, uncounted. Fix the setup, then start orch run again", s.Name, why)})
	if err := c.opts.Queue.SlotStopped(s.Slot, why); err != nil {
		c.emit(Event{Event: "error", Slot: s.Name, Text: "cannot tell orch inbox that the slot stopped: " + err.Error()})
	}
}

func (s *slotState) role() string {
	if s.Reviewer {
		return "reviewer"
	}
	return "implementer"
}

// SlotsStoppedError says every slot stopped: orch run has nothing it can
// run, and each slot's cause is the lead's to fix.
type SlotsStoppedError struct{ Causes []string }

func (e *SlotsStoppedError) Error() string {
	return "every slot stopped, so orch run can run nothing:\n  " + strings.Join(e.Causes, "\n  ")
}

// allStopped is the error when every slot has stopped, else nil.
func (c *Coordinator) allStopped() error {
	var causes []string
	for _, s := range c.slots {
		if s.stopped == "" {
			return nil
		}
		causes = append(causes, s.Name+": "+s.stopped)
	}
	return &SlotsStoppedError{Causes: causes}
}

// checkSlots checks, before anything is claimed, that each slot's command
// can run: its program is on the agents' PATH, and a harness preset's CLI
// answers --version. A slot that cannot is stopped, with the cause.
func (c *Coordinator) checkSlots() {
	path := ""
	for _, kv := range c.opts.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, s := range c.slots {
		prog := s.Program
		if prog == "" {
			prog = firstProgram(s.Cmd)
		}
		if prog == "" {
			continue // a command orch cannot read ahead of time: its runs tell
		}
		exe, err := lookPath(prog, path)
		if err != nil {
			c.stopSlot(s, fmt.Sprintf("%s: command not found (on the agents' PATH)", prog))
			continue
		}
		if s.Program == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
		cmd := exec.CommandContext(ctx, exe, "--version")
		cmd.Env = c.opts.Env
		out, err := cmd.CombinedOutput()
		cancel()
		version := strings.TrimSpace(text.Visible(string(out)))
		if err != nil {
			c.stopSlot(s, fmt.Sprintf("%s --version failed (%v): %s", prog, err, text.Clip(text.OneLine(version), 200)))
			continue
		}
		c.emit(Event{Event: "slot_checked", Slot: s.Name, Role: s.role(), Text: fmt.Sprintf("%s runs %s", s.Name, text.Clip(text.OneLine(version), 120))})
	}
}

// firstProgram is the program a shell command starts with, when it can be
// told without running it: the first word after any VAR=value, when it is
// a plain word (no quotes, no expansion); "" otherwise.
func firstProgram(cmd string) string {
	for _, w := range strings.Fields(cmd) {
		if strings.ContainsAny(w, "'\"$`\\(){};|&<>*?[]~") {
			return ""
		}
		if k, _, ok := strings.Cut(w, "="); ok && k != "" && !strings.Contains(k, "/") {
			continue
		}
		switch w {
		case "exec", "env", "nice", "nohup", "time", "command":
			continue
		}
		return w
	}
	return ""
}

// lookPath finds prog as the agents' shell would, on path.
func lookPath(prog, path string) (string, error) {
	if strings.Contains(prog, "/") {
		if fi, err := os.Stat(prog); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", errors.New("not an executable")
		}
		return prog, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, prog)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if isShellBuiltin(prog) {
		return prog, nil
	}
	return "", errors.New("not found")
}

func isShellBuiltin(w string) bool {
	switch w {
	case "true", "false", ":", "echo", "printf", "test", "[", "cd", "exit", "read", "set", "export", "if", "for", "while", "case", "sleep":
		return true
	}
	return false
}

// promptless leaves out of a run's last lines those that are lines of its
// prompt: an agent that echoes what it was given would fill the note (and
// the next prompt) with the prompt, and with the notes the prompt holds.
func promptless(lines []string, prompt string) []string {
	if prompt == "" {
		return lines
	}
	in := map[string]bool{}
	for _, l := range strings.Split(prompt, "\n") {
		if l = strings.TrimSpace(l); len(l) >= 20 {
			in[l] = true
		}
	}
	return slices.DeleteFunc(append([]string(nil), lines...), func(l string) bool { return in[strings.TrimSpace(l)] })
}

// RunRecord is one run, as orch run records it.
type RunRecord struct {
	Exit       int
	Duration   time.Duration
	Cause      string // harness.Cause: "" when none
	Words      string
	Usage      harness.Usage
	Transition bool   // the agent moved its task itself
	Killed     string // why orch run ended it (timeout, stall, stopped), if it did
}

// endCause is why a run ended, in words: why orch run ended it, else
// what its harness's output said, else, when it failed, its last line of
// output ("sh: 1: cluade: not found"); "" when nothing says.
func endCause(end End) string {
	if w := killedWords(end.Reason); w != "" {
		return w // orch run's doing: what the output says then is its exit
	}
	// The exit status is on the line already: the words after it are the
	// cause.
	words := strings.TrimPrefix(strings.TrimPrefix(end.Cause, fmt.Sprintf("exit status %d", end.ExitCode)), ": ")
	if words != "" {
		return text.Clip(text.Visible(text.OneLine(words)), 200)
	}
	if end.ExitCode != 0 {
		if l := lastLine(end.Tail); l != "no output" {
			return text.Visible(l)
		}
	}
	return ""
}

// killedWords says why orch run ended a run, or "" for a reason that is
// not orch run's doing.
func killedWords(reason string) string {
	switch reason {
	case "timeout":
		return "it ran past run.task_timeout"
	case "stall":
		return "it printed nothing for run.stall_timeout"
	case "stopped":
		return "the lead stopped orch run"
	case "lost":
		return "the task is no longer this run's"
	}
	return ""
}

// endWords is an ending's reason with its cause, for a line of orch run:
// "crash: sh: 1: cluade: not found".
func endWords(end End) string {
	if c := endCause(end); c != "" {
		return end.Reason + ": " + c
	}
	return end.Reason
}
