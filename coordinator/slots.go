//go:build unix

package coordinator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/orch-tool/orch/coordinator/harness"
	"github.com/orch-tool/orch/internal/text"
)

// slotFor is the slot of that name, or one made up for a slot that is no
// longer in run: (a dead coordinator's, under an older config).
func (c *Coordinator) slotFor(name string, reviewer bool) *Slot {
	for _, s := range c.slots {
		if s.Name == name && s.Reviewer == reviewer {
			return s.Slot
		}
	}
	return &Slot{Name: name, Reviewer: reviewer}
}

// running counts the slots whose agent runs.
func (c *Coordinator) running() int {
	n := 0
	for _, s := range c.slots {
		if s.proc != nil {
			n++
		}
	}
	return n
}

// waiting reports whether some slot waits out a rate limit: the work is
// not done, only paused.
func (c *Coordinator) waiting(now time.Time) bool {
	for _, s := range c.slots {
		if now.Before(s.backoff) || s.unseen {
			return true
		}
		for _, m := range s.missing {
			if now.Before(m.until) {
				return true // a branch that may arrive
			}
		}
	}
	return false
}

// idleLook is how often a slot that found nothing looks again while the
// state branch keeps moving. A look takes the store's lock, and with many
// agents the branch moves every few milliseconds: looking at each move
// would keep the agents' own commits waiting for claims that find nothing
// again (most moves are submits and approvals, which make nothing
// claimable). New work waits at most this long for an idle slot.
const idleLook = time.Second

// fill gives every idle slot work, and reports whether any slot found some
// (or could not tell).
func (c *Coordinator) fill(now time.Time) bool {
	c.mu.Lock()
	stop := c.draining
	c.mu.Unlock()
	if stop {
		return false
	}
	r := c.opts.Run
	if r.PollPRs > 0 && now.Sub(c.lastPoll) >= r.PollPRs {
		c.lastPoll = now
		if err := c.opts.Queue.PollPRs(); err != nil {
			c.emit(Event{Event: "error", Reason: "pr_poll", Text: "orch pr poll: " + err.Error()})
		}
	}
	moved := c.opts.Queue.Moved()
	c.startHouse(now, moved)
	if moved {
		if d := c.opts.Queue.RunChanged(); d != "" {
			c.emit(Event{Event: "config_changed", Text: "config.yaml's run: changed on the state branch; it takes effect at the next start of orch run:\n" + d})
		}
		// The coordinator's transitions are its own, not the CLI's, whose
		// runner archives after each: without this, finished work would
		// never leave the hot path of a repository only orch run drives.
		if now.Sub(c.lastArch) >= archiveEvery {
			c.lastArch = now
			if err := c.opts.Queue.Archive(); err != nil {
				c.emit(Event{Event: "error", Reason: "archive", Text: "moving finished tasks to the archive failed (it is tried again): " + err.Error()})
			}
		}
	}
	recheck := now.Sub(c.lastLook) >= c.opts.Recheck
	if recheck {
		c.lastLook = now
	}
	busy := false
	for _, s := range c.slots {
		if s.proc != nil || now.Before(s.backoff) || s.stopped != "" {
			continue
		}
		if moved && s.nothing {
			s.unseen = true
		}
		for _, m := range s.missing {
			if !m.until.IsZero() && !now.Before(m.until) && !m.looked {
				m.looked, s.nothing = true, false // its branch may be here now
			}
		}
		if s.nothing && !recheck && (!s.unseen || now.Sub(s.lookedAt) < idleLook) {
			continue
		}
		if !s.Reviewer && c.tooManyWaiting() {
			continue
		}
		// A claim in flight is recorded first: should this process die
		// before it records the job, the next orch run finds the claim.
		s.claiming = time.Now()
		c.saveState()
		var job *Job
		var err error
		if s.Reviewer {
			job, err = c.opts.Queue.ClaimReview(s.Slot)
		} else {
			job, err = c.opts.Queue.Claim(s.Slot)
		}
		s.claiming = time.Time{}
		if job != nil && errors.Is(err, ErrBranchMissing) {
			s.job = job
			c.branchMissing(s, job, err)
			c.saveState()
			busy = true
			continue
		}
		if job != nil && err != nil {
			// Claimed, but it cannot run (its branch is gone, say): give
			// it back at once, counted like a crash, so that a task that
			// never can escalates instead of coming back for ever.
			c.emit(Event{Event: "error", Slot: s.Name, Task: job.Task, Text: "cannot start " + job.Task + ": " + err.Error()})
			s.job = job
			c.abandon(s, End{Reason: "unstartable", ExitCode: -1, Tail: []string{"orch run: " + err.Error()}})
			c.saveState()
			busy = true
			continue
		}
		if err != nil {
			c.emit(Event{Event: "error", Slot: s.Name, Text: err.Error()})
			s.backoff = now.Add(5 * time.Second)
			busy = true
			continue
		}
		if job == nil {
			s.nothing, s.unseen, s.lookedAt = true, false, now
			c.saveState()
			continue
		}
		s.nothing, s.unseen = false, false
		busy = true
		c.start(s, job)
	}
	return busy
}

// skipping reports whether the slot passes task over for now.
func (s *slotState) skipping(task string) bool {
	m := s.missing[task]
	return m != nil && (m.until.IsZero() || time.Now().Before(m.until))
}

// branchMissing gives back a claim whose task's branch is not here,
// without counting it, and passes the task over: for missingRetry, and
// after missingTries for as long as this orch run runs, saying what the
// lead can do.
func (c *Coordinator) branchMissing(s *slotState, j *Job, err error) {
	if s.missing == nil {
		s.missing = map[string]*missingBranch{}
	}
	m := s.missing[j.Task]
	if m == nil {
		m = &missingBranch{}
		s.missing[j.Task] = m
	}
	m.tries++
	m.until, m.looked = time.Now().Add(missingRetry), false
	text := fmt.Sprintf("%s cannot start on %s: %v; its claim is given back (not counted), and it tries again in %s", s.Name, j.Task, err, missingRetry)
	if m.tries >= missingTries || !c.opts.Fetches {
		// Without --sync nothing brings the branch here: no use waiting.
		m.until = time.Time{}
		text = fmt.Sprintf("%s cannot start on %s: %v; its claim is given back (not counted), and orch run passes the task over until it starts again (push the branch here from the clone that has it, or orch requeue %s)", s.Name, j.Task, err, j.Task)
	}
	c.emit(Event{Event: "error", Slot: s.Name, Task: j.Task, Reason: "no_branch", Text: text})
	c.abandon(s, End{Reason: "no_branch", ExitCode: -1, Tail: []string{"orch run: " + err.Error()}})
}

// tooManyWaiting applies run.max_provisional: claiming waits while that
// many submissions wait for review.
func (c *Coordinator) tooManyWaiting() bool {
	max := c.opts.Run.MaxProvisional
	if max <= 0 {
		return false
	}
	n, err := c.opts.Queue.Provisional()
	if err != nil {
		return false
	}
	full := n >= max
	if full && !c.full {
		c.emit(Event{Event: "waiting", Reason: "max_provisional", Text: fmt.Sprintf("%d submission(s) wait for review (run.max_provisional is %d): no new claims until reviews land", n, max)})
	}
	c.full = full
	return full
}

// start runs the slot's agent on the job.
func (c *Coordinator) start(s *slotState, j *Job) {
	role := j.Role
	c.emit(Event{Event: "claimed", Slot: s.Name, Role: role, Task: j.Task, Attempt: j.Attempt, Text: fmt.Sprintf("%s %s %s (%s %d): %s", s.Name, claimedVerb(s), j.Task, attemptWord(s), j.Attempt, j.Title)})
	dir := filepath.Join(LogDir(c.opts.PrivDir), j.Task)
	name := fmt.Sprint(j.Attempt)
	if s.Reviewer {
		name = "review-" + name
	}
	log := filepath.Join(dir, name+".log")
	promptFile := filepath.Join(dir, name+".prompt")
	// Private: an agent's prompt and output can hold secrets.
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		err = os.WriteFile(promptFile, []byte(j.Prompt), 0o600)
	}
	if err == nil {
		s.job, s.log, s.killed = j, log, ""
		s.reader = harness.NewReader(s.Stream, time.Now)
		s.started, s.renewed = time.Now(), time.Now()
		env := append(append([]string(nil), c.opts.Env...),
			"ORCH_AGENT="+s.Name, "ORCH_TASK="+j.Task, "ORCH_ROLE="+role, fmt.Sprintf("ORCH_ATTEMPT=%d", j.Attempt),
			"ORCH_WORKTREE="+j.Worktree, "ORCH_PROMPT_FILE="+promptFile, "ORCH_LOG="+log)
		spec := procSpec{Orch: c.opts.Orch, Script: s.Cmd, Dir: j.Worktree, Env: env, Stdin: promptFile, Log: log,
			MaxLog: c.opts.Run.MaxLog, Grace: c.opts.Run.KillGrace}
		if s.Stream != "" {
			// The log is what the stream says, in words; the stream itself
			// is kept beside it.
			spec.Render, spec.RawLog = s.reader.Line, filepath.Join(dir, name+".jsonl")
		} else {
			rd := s.reader
			spec.OnLine = func(l string) { rd.Line(l) }
		}
		var p *proc
		p, err = startProc(spec)
		if err == nil {
			s.proc = p
			c.saveState()
			go func() { <-p.done; c.exits <- s }()
			c.emit(Event{Event: "started", Slot: s.Name, Role: role, Task: j.Task, Attempt: j.Attempt, Log: log, Text: fmt.Sprintf("%s started on %s in %s", s.Name, j.Task, j.Worktree)})
			return
		}
	}
	// The agent never ran: its claim is given back at once.
	c.emit(Event{Event: "error", Slot: s.Name, Task: j.Task, Text: "cannot start the agent: " + err.Error()})
	s.job, s.proc = j, nil
	c.abandon(s, End{Reason: "crash", ExitCode: 127, Log: log, Tail: []string{"orch run: " + err.Error()}})
	s.backoff = time.Now().Add(5 * time.Second)
}

// attemptWord names a claim's number: an implementer's attempt, a
// reviewer's review (the task's review claims are counted apart from its
// attempts: "review 2" beside "attempt 3").
func attemptWord(s *slotState) string {
	if s.Reviewer {
		return "review"
	}
	return "attempt"
}

func claimedVerb(s *slotState) string {
	if s.Reviewer {
		return "reviews"
	}
	return "claimed"
}

// watch applies the timeouts to the running agents and renews their
// leases.
func (c *Coordinator) watch(now time.Time) {
	r := c.opts.Run
	for _, s := range c.slots {
		p := s.proc
		if p == nil || s.killed != "" {
			continue
		}
		switch {
		case r.TaskTimeout > 0 && now.Sub(s.started) >= r.TaskTimeout:
			c.kill(s, "timeout", fmt.Sprintf("ran for %s (run.task_timeout)", r.TaskTimeout))
			continue
		case r.StallTimeout > 0 && now.Sub(p.lastOutput()) >= r.StallTimeout:
			c.kill(s, "stall", fmt.Sprintf("no output for %s (run.stall_timeout)", r.StallTimeout))
			continue
		}
		if now.Sub(s.renewed) >= r.RenewEvery {
			s.renewed = now
			if err := c.opts.Queue.Renew(s.job); errors.Is(err, ErrLost) {
				c.kill(s, "lost", "the task is no longer this run's: "+err.Error())
			} else if err != nil {
				c.emit(Event{Event: "error", Slot: s.Name, Task: s.job.Task, Text: "the lease was not renewed: " + err.Error()})
			}
		}
	}
}

// kill ends a slot's agent (its whole process group) for a reason.
func (c *Coordinator) kill(s *slotState, reason, text string) {
	s.killed = reason
	c.emit(Event{Event: "killing", Slot: s.Name, Task: s.job.Task, Attempt: s.job.Attempt, Reason: reason, Text: fmt.Sprintf("%s on %s: %s; ending its process group", s.Name, s.job.Task, text)})
	s.proc.terminate()
	p := s.proc
	grace := c.opts.Run.KillGrace + 2*time.Second
	go func() {
		select {
		case <-p.done:
		case <-time.After(grace):
			p.kill() // the supervisor did not end the group in time
		}
	}()
}

func (c *Coordinator) killAll(reason string) {
	for _, s := range c.slots {
		if s.proc != nil && s.killed == "" {
			c.kill(s, reason, "orch run was stopped")
		}
	}
}

// finish handles a slot whose agent ended.
func (c *Coordinator) finish(s *slotState) {
	p, j := s.proc, s.job
	code, _ := p.exited()
	dur := time.Since(s.started).Round(time.Millisecond)
	res := s.reader.Finish(code)
	tail := promptless(p.lastLines(tailLines), j.Prompt)
	// The line names why it ended, in words: orch run's reason, the
	// harness's words, or a failed run's last line of output.
	cause := endCause(End{Reason: s.killed, ExitCode: code, Tail: tail, Cause: res.Words})
	line := fmt.Sprintf("%s on %s exited %d after %s", s.Name, j.Task, code, dur)
	if cause != "" {
		line += ": " + cause
	}
	c.emit(Event{Event: "exited", Slot: s.Name, Role: j.Role, Task: j.Task, Attempt: j.Attempt, ExitCode: &code, Duration: dur.String(), Log: s.log,
		Cause: cause, Text: line})
	s.proc = nil
	c.saveState()
	if esc := p.escapedProcs(); len(esc) > 0 {
		c.emit(Event{Event: "escaped", Slot: s.Name, Role: j.Role, Task: j.Task, Attempt: j.Attempt,
			Text: fmt.Sprintf("%s on %s left %d process(es) outside its process group; orch run ended them: %s", s.Name, j.Task, len(esc), text.Clip(text.Visible(strings.Join(esc, "; ")), 200))})
	}
	if s.killed == "lost" {
		s.job = nil
		return
	}
	c.addUsage(res.Usage)
	rec := RunRecord{Exit: code, Duration: dur, Cause: string(res.Cause), Words: res.Words, Usage: res.Usage, Killed: s.killed}
	o, done, err := c.opts.Queue.Finish(j, rec)
	if err != nil {
		c.emit(Event{Event: "error", Slot: s.Name, Task: j.Task, Text: err.Error()})
		s.job = nil
		return
	}
	if o.Held != "" {
		c.emit(Event{Event: "policy_held", Slot: s.Name, Role: j.Role, Task: j.Task, Attempt: j.Attempt, Reason: "policy_file", Text: o.Held})
	}
	if o.Warning != "" {
		c.emit(Event{Event: "error", Slot: s.Name, Role: j.Role, Task: j.Task, Attempt: j.Attempt, Text: o.Warning})
	}
	if done {
		s.strikes, s.lastFast, s.backoffStep = 0, "", 0
		o.emitFor(c, s, j)
		s.job = nil
		return
	}
	end := End{Reason: "crash", ExitCode: code, Duration: dur, Tail: tail, Log: s.log, Escaped: p.escapedProcs(),
		Cause: res.Words, Usage: res.Usage}
	c.endWithout(s, end, res)
}

func (o Outcome) emitFor(c *Coordinator, s *slotState, j *Job) {
	c.emit(o.event(Event{Slot: s.Name, Role: j.Role, Task: j.Task, Attempt: j.Attempt}))
}

// event fills ev with the outcome's fields.
func (o Outcome) event(ev Event) Event {
	ev.Event, ev.Text, ev.Verdict, ev.Queue, ev.Rule = o.Event, o.Text, o.Verdict, o.Queue, o.Rule
	if o.Cause != "" {
		ev.Cause = o.Cause
	}
	return ev
}

// abandon records a run that ended without a transition.
func (c *Coordinator) abandon(s *slotState, end End) {
	j := s.job
	s.job = nil
	o, err := c.opts.Queue.Abandon(j, end)
	if err != nil && !errors.Is(err, ErrLost) {
		// The ending is recorded whatever the output was: once more
		// without it (the log keeps it), before the task is left claimed.
		c.emit(Event{Event: "error", Slot: s.Name, Task: j.Task, Text: "cannot record the run's ending (trying again without its output): " + err.Error()})
		bare := end
		bare.Tail, bare.Escaped = nil, nil
		o, err = c.opts.Queue.Abandon(j, bare)
	}
	if err != nil {
		if errors.Is(err, ErrLost) {
			return
		}
		c.mu.Lock()
		c.unrecorded++
		c.mu.Unlock()
		c.emit(Event{Event: "error", Slot: s.Name, Task: j.Task, Text: fmt.Sprintf("the ending of %s's run on %s was not recorded, and the task stays claimed until its lease runs out: %v", s.Name, j.Task, err)})
		return
	}
	c.emit(o.event(Event{Slot: s.Name, Role: j.Role, Task: j.Task, Attempt: j.Attempt, Reason: end.Reason, Log: end.Log, Cause: endCause(end)}))
}
