//go:build unix

package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/orch-tool/orch/coordinator/harness"
	"github.com/orch-tool/orch/gitstore"
)

// Job is one run of one agent on one task: an implementer's attempt, or a
// reviewer's review claim.
type Job struct {
	Slot     *Slot
	Task     string
	Title    string
	Attempt  int    // the task's attempt (implementer) or review claim (reviewer): ORCH_ATTEMPT
	Role     string // the implementer's role, or "reviewer": ORCH_ROLE
	Worktree string
	Branch   string // the task's branch
	Prompt   string
	// Rejections is the task's rejection count when a review was claimed:
	// a verdict that requested changes raised it.
	Rejections int
	// Log and Started: a dead coordinator's run, as its state file had it.
	Log     string
	Started time.Time
}

// End is how a run ended without a transition by its agent.
type End struct {
	Reason   string // crash, timeout, stall, rate_limit, stopped, orphaned
	ExitCode int
	Duration time.Duration
	Tail     []string // the log's last lines
	Log      string
	// Escaped are the processes that had left the agent's process group
	// when it ended ("PID COMMAND"), which orch run ended.
	Escaped []string
	// Cause is why it ended, in words, as the harness's output says ("not
	// logged in", "usage limit until 20:09 UTC"); Usage what it spent.
	Cause string
	Usage harness.Usage
}

// Outcome is what became of a task when its agent's run ended: the event
// the coordinator reports (submitted, paused, refused, escalated, failed,
// reviewed, released, ...) and a line that says it.
type Outcome struct {
	Event string
	Text  string
	// Verdict, Queue, Cause and Rule are the event's (Event).
	Verdict, Queue, Cause, Rule string
	// Held says a policy file was found changed in the view as the run
	// ended (see engineQueue.heldEdits), for the lead to hear; Warning, what
	// else went wrong around the ending (a push of the task's branch).
	Held    string
	Warning string
}

// ErrBranchMissing says a claimed job cannot start because its task's
// branch is in no repository this clone reaches: the lead's problem, or a
// push still on its way, never the task's. The claim is given back without
// counting, and the slot passes the task over for a while (missingRetry),
// then for good, saying so.
var ErrBranchMissing = errors.New("the task's branch is not here")

// missingRetry is how long a slot passes over a task whose branch was
// missing, and missingTries how many times it tries before it stops
// trying for as long as orch run runs.
const (
	missingRetry = 30 * time.Second
	missingTries = 3
)

// ErrLost says a task is no longer the job's: its lease ran out and another
// agent holds it now, or a person moved it. The coordinator ends the run
// and leaves the task alone.
var ErrLost = errors.New("the task is no longer this run's")

// Queue is what the coordinator needs of orch's state. Each call opens the
// repository, acts, and closes it again, so that the agents' own orch
// commands are never kept waiting (see engineQueue: the verbs' own Engine
// API).
type Queue interface {
	// Claim claims the next task an implementer slot may take, with its
	// worktree and prompt ready; nil when there is none. A job with an
	// error was claimed but cannot be started (its worktree or prompt
	// failed): the coordinator gives it back (Abandon, reason
	// "unstartable").
	Claim(s *Slot) (*Job, error)
	// ClaimReview claims the next submission a reviewer slot may review;
	// nil when there is none; a job with an error as Claim.
	ClaimReview(s *Slot) (*Job, error)
	// Renew renews the job's lease (ErrLost: it is not the job's any more).
	Renew(j *Job) error
	// Finish says what the agent did with its task: done is false when the
	// run ended without a transition of the agent's (then Abandon follows).
	// It records the run (r, with whether the agent moved its task) on the
	// state branch, for orch show, orch stats and the board on every clone.
	Finish(j *Job, r RunRecord) (o Outcome, done bool, err error)
	// Abandon records a run that ended without a transition: the task is
	// paused with a note (a crash counts toward run.max_crashes, and may
	// escalate it), or a review claim released.
	Abandon(j *Job, end End) (Outcome, error)
	// Provisional is how many submissions wait for review.
	Provisional() (int, error)
	// Left counts the open tasks by queue (incoming, provisional,
	// escalated, ...), for the summary at the end of a run.
	Left() (map[string]int, error)
	// Moved reports whether the state branch moved since the last call.
	Moved() bool
	// PollPRs runs orch pr poll (with github.repo set).
	PollPRs() error
	// Archive moves a batch of the tasks finished more than archive_after
	// ago to the archive, as a command's transition does after it.
	Archive() error
	// RunChanged says how config.yaml's run: on the state branch differs
	// from what this coordinator started with ("" when it does not, or
	// when that difference was told already).
	RunChanged() string
	// Done is called once Run ends: what is left to share is shared.
	Done()
	// House does one step of the coordinator's own work (house.go): a
	// review.check, or a landing of approved work.
	House() HouseResult
	// SlotStopped tells orch inbox that a slot stopped, and why.
	SlotStopped(s *Slot, why string) error
	// ClaimedSince lists the claims (review claims, for a reviewer) the
	// slot made through this clone at since or later: those of a
	// coordinator that died between a claim and its record.
	ClaimedSince(s *Slot, since time.Time) ([]*Job, error)
}

// archiveEvery is how often, at most, the coordinator asks for a batch of
// finished tasks to be archived when the state branch has moved (an open
// of the repository; ArchiveDue itself looks at most every tenth of
// archive_after once nothing more is due).
const archiveEvery = time.Minute

// Options set a coordinator up.
type Options struct {
	Run   *Run
	Queue Queue
	Orch  string // the orch executable: agents run under `orch __supervise`
	// PrivDir is the clone's private state (<common dir>/orch): the logs
	// (one file per attempt: logs/<task>/<attempt>.log) and the state
	// files of the coordinators running on the clone (runstate.go).
	PrivDir   string
	Env       []string
	UntilIdle bool
	// Fetches says claims go through a remote (orch run --sync): a task
	// branch missing here may arrive with the next fetch.
	Fetches bool
	// Events hears everything the coordinator does, in order.
	Events func(Event)
	// Encode is an event as run.notify gets it on stdin (orch run's JSON
	// line); nil: the Event's own JSON.
	Encode func(Event) ([]byte, error)
	// Dir is where run.notify runs (orch run's -C DIR); "": here.
	Dir string
	// Poll is how often the coordinator looks at its agents and the state
	// branch (default 250ms).
	Poll time.Duration
	// Recheck is how often idle slots look for work even though the state
	// branch did not move: leases run out with time alone (default 30s).
	Recheck time.Duration
}

// Event is one thing the coordinator did or saw, as orch run --json prints
// it (one per line).
type Event struct {
	Time     time.Time `json:"time"`
	Event    string    `json:"event"` // started, claimed, exited, paused, submitted, reviewed, released, backoff, escalated, ...
	Slot     string    `json:"slot,omitempty"`
	Role     string    `json:"role,omitempty"`
	Task     string    `json:"task,omitempty"`
	Attempt  int       `json:"attempt,omitempty"`
	ExitCode *int      `json:"exit_code,omitempty"`
	Duration string    `json:"duration,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Until    string    `json:"until,omitempty"`
	Log      string    `json:"log,omitempty"`
	Text     string    `json:"text"`
	// Verdict is a reviewer's (reviewed): approved, rejected, or the queue
	// it left the task in. Queue is where the task is now, after an
	// ending or a verdict. Cause is why, in words (an ending's last words,
	// a stop's or an escalation's reason); Rule is an escalation's rule
	// code (max_rejections, lockout_deadlock, crashes, land_failures, ...).
	Verdict string `json:"verdict,omitempty"`
	Queue   string `json:"queue,omitempty"`
	Cause   string `json:"cause,omitempty"`
	Rule    string `json:"rule,omitempty"`
	// Summary is the summary event's: what the run did.
	Summary *Summary `json:"summary,omitempty"`
}

// Coordinator keeps the slots of run: busy.
type Coordinator struct {
	opts  Options
	slots []*slotState
	exits chan *slotState

	mu       sync.Mutex // guards the fields below and the slots' status
	draining bool
	stopping bool
	drainCh  chan struct{}
	stopCh   chan struct{}
	lastPoll time.Time
	lastLook time.Time
	lastArch time.Time
	full     bool // claiming waits: run.max_provisional submissions wait for review
	// unrecorded counts the runs whose ending could not be recorded: orch
	// run then ends with an error (UnrecordedError), not as idle.
	unrecorded int
	// The house's work (house.go): one step at a time.
	houseDone  chan HouseResult
	houseBusy  bool
	houseIdle  bool
	houseStale bool // the state moved while a step ran
	houseAt    time.Time
	status     []Status
	state      *runState
	// idleTold: the idle event was emitted since the last work (without
	// UntilIdle, orch run waits on).
	idleTold bool
	// sum is what the run did so far (the summary event), since began.
	sum   Summary
	began time.Time
	// run.notify's queue (notify.go); notifying is its goroutine while
	// it runs.
	notifyMu    sync.Mutex
	notifyQueue []notifyJob
	notifyBusy  bool
	notifying   sync.WaitGroup
}

// slotState is a slot and what it runs.
type slotState struct {
	*Slot
	job         *Job
	proc        *proc
	log         string
	started     time.Time
	renewed     time.Time
	reader      *harness.Reader // reads the run's output: its log, and how it ended
	killed      string          // why the coordinator ended the run (timeout, stall, stopped, lost)
	backoff     time.Time
	backoffStep int
	nothing     bool      // the last look found nothing for it
	lookedAt    time.Time // when it last found nothing
	unseen      bool      // the state branch moved since it found nothing
	claiming    time.Time // a claim is under way since then
	// stopped is why the slot runs no more (its setup is broken: a
	// command not found, not logged in, a quota gone); "" while it runs.
	stopped string
	// strikes counts the runs in a row that ended fast without a
	// transition, or with the same setup cause (lastCause); lastFast is the
	// task of the last fast ending.
	strikes   int
	lastCause string
	lastFast  string
	// missing: the tasks whose branch was missing, with the tries and until
	// when the slot passes them over (zero: for good).
	missing map[string]*missingBranch
}

type missingBranch struct {
	tries  int
	until  time.Time
	looked bool // the slot looked again once until had passed
}

// New makes a coordinator of run's slots.
func New(opts Options) (*Coordinator, error) {
	if opts.Run == nil || len(opts.Run.Agents)+len(opts.Run.Reviewers) == 0 {
		return nil, &NoSlotsError{}
	}
	if opts.Poll == 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.Recheck == 0 {
		opts.Recheck = 30 * time.Second
	}
	if opts.Events == nil {
		opts.Events = func(Event) {}
	}
	c := &Coordinator{opts: opts, exits: make(chan *slotState, 64), drainCh: make(chan struct{}), stopCh: make(chan struct{}), houseDone: make(chan HouseResult, 1)}
	for _, s := range opts.Run.Agents {
		c.slots = append(c.slots, &slotState{Slot: s})
	}
	for _, s := range opts.Run.Reviewers {
		c.slots = append(c.slots, &slotState{Slot: s})
	}
	for _, s := range c.slots {
		s.Skip = s.skipping
	}
	return c, nil
}

// UnrecordedError says that some runs' endings could not be recorded: their
// tasks stay claimed until their leases run out.
type UnrecordedError struct{ N int }

func (e *UnrecordedError) Error() string {
	return fmt.Sprintf("the endings of %d run(s) could not be recorded (see the errors above); their tasks stay claimed until their leases run out", e.N)
}

func (c *Coordinator) unrecordedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unrecorded > 0 {
		return &UnrecordedError{N: c.unrecorded}
	}
	return nil
}

// NoSlotsError: run: names no agent and no reviewer.
type NoSlotsError struct{}

func (*NoSlotsError) Error() string { return "config.yaml's run: names no agents and no reviewers" }

// Drain stops claiming: the running agents finish, then Run returns.
func (c *Coordinator) Drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.draining {
		c.draining = true
		close(c.drainCh)
	}
}

// Stop ends the running agents (their tasks are paused with a note) and
// Run returns.
func (c *Coordinator) Stop() {
	c.Drain()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopping {
		c.stopping = true
		close(c.stopCh)
	}
}

func (c *Coordinator) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	c.mu.Lock()
	c.sum.count(ev)
	c.mu.Unlock()
	c.opts.Events(ev)
	c.notify(ev)
}

func (c *Coordinator) addUsage(u harness.Usage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sum.InputTokens += u.InputTokens
	c.sum.OutputTokens += u.OutputTokens
	c.sum.CostUSD += u.CostUSD
}

// Summary is what the run did (so far, while it runs).
func (c *Coordinator) Summary() Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum
}

// Run keeps the slots busy until ctx ends, Drain or Stop is called (and the
// agents are done), or, with UntilIdle, nothing is left to do. Its last
// event is the summary: what the run did, and how it ended.
func (c *Coordinator) Run(ctx context.Context) error {
	c.began = time.Now()
	ended, err := c.run(ctx)
	if err != nil && ended == "" {
		ended = "error"
	}
	c.notifying.Wait() // the summary is the last event
	left, lerr := c.opts.Queue.Left()
	if lerr != nil {
		c.emit(Event{Event: "error", Text: "cannot count the tasks left for the summary (orch board shows them): " + lerr.Error()})
	}
	if left == nil {
		left = map[string]int{}
	}
	c.mu.Lock()
	c.sum.Ended, c.sum.Left = ended, left
	sum := c.sum
	c.mu.Unlock()
	d := time.Since(c.began).Round(time.Second)
	c.emit(Event{Event: "summary", Duration: d.String(), Summary: &sum, Text: sum.Line(d)})
	return err
}

// run is Run's loop; it says how the run ended (Summary.Ended).
func (c *Coordinator) run(ctx context.Context) (string, error) {
	state, err := openRunState(c.opts.PrivDir)
	if err != nil {
		return "", err
	}
	c.state = state
	defer state.close()
	defer c.opts.Queue.Done()
	c.recover()
	c.checkSlots()
	if err := c.allStopped(); err != nil {
		return "slots_stopped", err
	}
	tick := time.NewTicker(c.opts.Poll)
	defer tick.Stop()
	drainSeen, stopSeen := false, false
	for {
		now := time.Now()
		c.watch(now)
		busy := c.fill(now)
		running := c.running()
		c.snapshot()
		if running == 0 && !c.houseBusy && (drainSeen || stopSeen) {
			if stopSeen {
				return "stopped", c.unrecordedErr()
			}
			return "drained", c.unrecordedErr()
		}
		if running == 0 {
			if err := c.allStopped(); err != nil {
				return "slots_stopped", err
			}
		}
		idle := running == 0 && !busy && !c.waiting(now) && !c.houseBusy && c.houseIdle
		if idle && c.opts.UntilIdle {
			if err := c.unrecordedErr(); err != nil {
				return "", err
			}
			c.emit(Event{Event: "idle", Text: "nothing left to claim or review, and no agent runs"})
			return "idle", nil
		}
		if idle && !drainSeen && !c.idleTold {
			// The queue drained: said once (run.notify hears it), until
			// there is work again.
			c.idleTold = true
			c.emit(Event{Event: "idle", Text: "nothing left to claim or review, and no agent runs; waiting for new work"})
		}
		if running > 0 || busy {
			c.idleTold = false
		}
		select {
		case s := <-c.exits:
			c.finish(s)
		case r := <-c.houseDone:
			c.houseEnded(r)
		case <-tick.C:
		case <-c.drainCh:
			if !drainSeen {
				drainSeen = true
				c.emit(Event{Event: "draining", Text: fmt.Sprintf("no new claims; waiting for %d running agent(s) (a second Ctrl-C stops them)", running)})
			}
		case <-c.stopCh:
			if !stopSeen {
				stopSeen = true
				c.emit(Event{Event: "stopping", Text: fmt.Sprintf("stopping %d running agent(s); their tasks are paused", running)})
				c.killAll("stopped")
			}
		case <-ctx.Done():
			c.Stop()
		}
	}
}

// LogDir is where orch run keeps its agents' logs: <privDir>/logs/<task>/.
func LogDir(privDir string) string { return filepath.Join(privDir, gitstore.LogsDir) }

// saveState records the runs going now in this coordinator's state file.
func (c *Coordinator) saveState() {
	var jobs []RunningJob
	for _, s := range c.slots {
		switch {
		case s.job != nil:
			rj := RunningJob{Slot: s.Name, Reviewer: s.Reviewer, Task: s.job.Task, Attempt: s.job.Attempt, Started: s.started, Log: s.log, PID: os.Getpid()}
			if s.proc != nil {
				rj.Supervisor = s.proc.cmd.Process.Pid
			}
			jobs = append(jobs, rj)
		case !s.claiming.IsZero():
			jobs = append(jobs, RunningJob{Slot: s.Name, Reviewer: s.Reviewer, Started: s.claiming, PID: os.Getpid(), Claiming: true})
		}
	}
	if err := c.state.write(jobs); err != nil {
		c.emit(Event{Event: "error", Text: "cannot write the run state: " + err.Error()})
	}
}

// recover gives back the runs of coordinators of this clone that died
// without stopping them (their agents died with them): each task is
// paused with a note, each review claim released, at once rather than
// when its lease runs out. A claim a dead coordinator made but had not
// recorded yet is found by its slot and time (Queue.ClaimedSince); the
// tasks are listed before the live coordinators' state is read, so a
// live coordinator's claim in flight is never taken for a dead one's.
func (c *Coordinator) recover() {
	dead := orphans(c.opts.PrivDir)
	var jobs []*Job
	var pending []RunningJob
	for _, d := range dead {
		for _, rj := range d.jobs {
			if rj.Claiming {
				pending = append(pending, rj)
				continue
			}
			jobs = append(jobs, &Job{Slot: c.slotFor(rj.Slot, rj.Reviewer), Task: rj.Task, Attempt: rj.Attempt, Log: rj.Log, Started: rj.Started})
			// No task goes to another agent while this one may still run:
			// its supervisor is ending its group (kill_grace at most).
			waitSupervisorGone(rj.Supervisor, c.opts.Run.KillGrace+3*time.Second)
		}
	}
	failed := false
	var found []*Job
	for _, p := range pending {
		js, err := c.opts.Queue.ClaimedSince(c.slotFor(p.Slot, p.Reviewer), p.Started)
		if err != nil {
			failed = true
			c.emit(Event{Event: "error", Slot: p.Slot, Text: "cannot look for the claims of a dead orch run: " + err.Error()})
		}
		found = append(found, js...)
	}
	live := liveEntries(c.opts.PrivDir, dead)
	for _, j := range found {
		if !slices.ContainsFunc(live, func(l RunningJob) bool {
			return l.Task == j.Task || (l.Claiming && l.Slot == j.Slot.Name && l.Reviewer == j.Slot.Reviewer)
		}) && !slices.ContainsFunc(jobs, func(k *Job) bool { return k.Task == j.Task }) {
			jobs = append(jobs, j)
		}
	}
	for _, j := range jobs {
		o, err := c.opts.Queue.Abandon(j, End{Reason: "orphaned", Log: j.Log, Duration: time.Since(j.Started)})
		switch {
		case errors.Is(err, ErrLost):
		case err != nil:
			failed = true
			c.emit(Event{Event: "error", Slot: j.Slot.Name, Task: j.Task, Text: "cannot give back a run of a dead orch run (the next orch run tries again): " + err.Error()})
		default:
			o.Text = fmt.Sprintf("%s (the orch run that started it on this clone died)", o.Text)
			c.emit(o.event(Event{Slot: j.Slot.Name, Task: j.Task, Attempt: j.Attempt, Reason: "orphaned", Log: j.Log, Cause: "the orch run that started it died"}))
		}
	}
	for _, d := range dead {
		if failed {
			d.keep()
		} else {
			d.release()
		}
	}
}

// Status is one slot as the live view shows it.
type Status struct {
	Slot     string
	Role     string
	Task     string
	Attempt  int
	Started  time.Time
	LastLine string
	Until    time.Time // backing off until
	Log      string
}

// Status is what every slot does now (as of the last look: the live view
// reads it from another goroutine).
func (c *Coordinator) Status() []Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// snapshot records the slots' status for Status.
func (c *Coordinator) snapshot() {
	var out []Status
	for _, s := range c.slots {
		st := Status{Slot: s.Name, Role: "implementer", Until: s.backoff}
		if s.Reviewer {
			st.Role = "reviewer"
		}
		if s.job != nil && s.proc != nil {
			st.Task, st.Attempt, st.Started, st.Log = s.job.Task, s.job.Attempt, s.started, s.log
			if l := s.proc.lastLines(1); len(l) > 0 {
				st.LastLine = l[0]
			}
		}
		out = append(out, st)
	}
	c.mu.Lock()
	c.status = out
	c.mu.Unlock()
}
