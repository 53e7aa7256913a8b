package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/coordinator"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/termboard"
	"github.com/orch-tool/orch/workflow"
)

type runOptions struct {
	g         *globalOptions
	UntilIdle bool
	Sync      bool
	Remote    string
	Verbose   bool
}

func newRunCmd(g *globalOptions) *cobra.Command {
	o := &runOptions{g: g}
	cmd := &cobra.Command{
		Use:   "run [--until-idle] [--sync [--remote R]]",
		Short: "Start the agents and reviewers of config.yaml's run: and keep them busy",
		Long: `orch run is the coordinator (docs/design.md §7): a foreground process the lead starts. It
reads run: from config.yaml (on the state branch, human-owned: agents cannot
change what runs), prints the commands it will run, and keeps every slot busy:
an agent slot claims the next ready task (as itself: its name is the actor and
counts as a capable agent for lockout and deadlock), a reviewer slot the next
submission it may review (a review claim keeps two reviewers off one). Each
runs its cmd under sh -c in the task's worktree, the prompt on stdin, with
ORCH_AGENT, ORCH_TASK, ORCH_ROLE, ORCH_ATTEMPT, ORCH_WORKTREE, ORCH_PROMPT_FILE
and ORCH_LOG set, in a process group of its own.

How a run ends decides what happens to its task:
  - the agent submits, pauses, refuses or escalates (a reviewer reviews,
    approves or rejects): the slot takes the next one;
  - it exits without that: the task is paused with a note (exit status,
    duration, the log's last lines) for the next claimant; run.max_crashes
    such runs in a row escalate it, and the inbox message names the logs;
  - run.task_timeout (wall clock) or run.stall_timeout (no output): its whole
    process group gets SIGTERM, then SIGKILL; then as above;
  - a rate limit (rate_limit in its output, or rate_limit_exit): the task is
    paused without counting; with a reset time in the output every slot of
    that harness or account waits until then, else the slot backs off,
    doubling each time;
  - a reviewer that exits without a verdict releases its review claim.
Leases of running tasks are renewed; an agent's verbs carry ORCH_ATTEMPT and
are refused once its run has ended. run.max_provisional stops claiming while
that many submissions wait for review; with github.repo set, orch pr poll
runs every run.poll_prs. Logs: one file per run (orch logs ID).

The first Ctrl-C (or SIGTERM) stops claiming and waits for the running
agents; the second stops them and pauses their tasks. If orch run is killed,
its agents die with it, and the next orch run on this clone gives their
tasks back. --until-idle exits 0 once nothing is left to claim or review and
no agent runs; without it orch run waits for new work. --sync claims, renews
and reviews through the remote (claim refs decide across clones), so
coordinators on several clones never run one task twice.

On a terminal it shows one live line per slot and a line for what each run
came to (submitted, reviewed, landed, paused, escalated...); -v adds the
steps (claimed, started, exited). Otherwise it prints one line per event;
--json prints one JSON event per line (docs/schema/run-event.json lists
them). Its last line is a summary (on stderr; with --json the summary
event): how it ended, how long it ran, what was submitted, reviewed,
landed, escalated and paused, and the tokens and cost when known.
run.notify, when set, is a command run under sh -c with the event's JSON on
stdin when a task escalates, a slot stops or the queue drains (idle): as a
git hook, 30s at most; its failure is an event, never the run's end.

Exit codes: 0 once idle (--until-idle) or drained (one Ctrl-C); 130 after a
forced stop (a second Ctrl-C); 1 when no slot can run (every slot stopped,
each cause printed) or a run's ending could not be recorded; 4 when it
refuses to start (run: names no agents, a policy file changed in the view).`,
		Example: `  orch run --until-idle
  orch run --json
  orch run --sync --remote origin`,
		Args: exactArgs(0, "run [--until-idle] [--sync [--remote R]]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runRun(o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.UntilIdle, "until-idle", false, "exit once nothing is left to claim or review and no agent runs")
	f.BoolVar(&o.Sync, "sync", false, "claim, renew and review through the remote (claim refs)")
	f.StringVar(&o.Remote, "remote", "origin", "the remote --sync uses")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "on a terminal, print every step (claims, starts, exits), not only what each run came to")
	return cmd
}

// runEvent is one line of orch run --json: one thing the coordinator did
// or saw (coordinator.Event).
// Every key is always there ("" when the event has none); the schema
// lists the events (coordinator.EventKinds) and requires of each the keys
// it fills.
type runEvent struct {
	Time     answer.Time `json:"time"`
	Event    string      `json:"event"` // one of coordinator.EventKinds
	Slot     string      `json:"slot"`
	Role     string      `json:"role"` // implementer or reviewer
	Task     string      `json:"task"`
	Attempt  int         `json:"attempt"`
	ExitCode *int        `json:"exit_code"` // exited: the agent's exit code
	Duration string      `json:"duration"`
	Reason   string      `json:"reason"`
	Until    string      `json:"until"` // backoff: when the slot claims again
	Log      string      `json:"log"`
	Text     string      `json:"text"`
	Verdict  string      `json:"verdict"` // reviewed: approved, rejected, or the queue the reviewer left the task in
	Queue    string      `json:"queue"`   // where the task is now
	Cause    string      `json:"cause"`   // why, in words
	Rule     string      `json:"rule"`    // escalated: the rule's code
	// Summary is the summary event's, the last: what the run did.
	Summary *coordinator.Summary `json:"summary"`
}

func runRun(o *runOptions) error {
	g := o.g
	// The files of worktrees the run's landings discard are deleted by the
	// coordinator itself, which waits for them before it exits: nothing it
	// starts outlives it.
	var deleting sync.WaitGroup
	workflow.DeleteLater = func(dirs []string) {
		deleting.Add(1)
		go func() {
			defer deleting.Done()
			gitrepo.RemoveAll(dirs)
		}()
	}
	defer deleting.Wait()
	var run *config.Run
	var claimTimeout time.Duration
	err := g.runPrinting(func(e *workflow.Engine, out *output) error {
		var err error
		run, err = e.StartRun()
		claimTimeout = time.Duration(e.Config.ClaimTimeout)
		return err
	})
	if err != nil {
		return err
	}
	cr, err := coordinator.FromConfig(run, claimTimeout)
	if err != nil {
		return err
	}
	if len(cr.Agents)+len(cr.Reviewers) == 0 {
		return &workflow.RuleError{Rule: "no_slots", Msg: "config.yaml's run: names no agents and no reviewers, so orch run has nothing to start",
			Hint: "add run: agents: [{name: impl-1, cmd: \"...\"}] to config.yaml (orch edit config); docs/agents.md shows the forms"}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// orch run lives for hours: collect garbage as a long-running Go
	// program does (main turns collection off for one-shot commands).
	debug.SetGCPercent(100)

	out := newRunPrinter(g)
	out.steps = o.Verbose || !out.tty
	out.commands(cr)
	var so *workflow.SyncOptions
	if o.Sync {
		s := syncOptionsOf(o.Remote)
		so = &s
	}
	lead := g.engineOptions(false)
	priv := g.privDir()
	q := coordinator.NewQueue(lead, so, run, func(task string) []string { return coordinator.LogPaths(priv, task) })
	c, err := coordinator.New(coordinator.Options{Run: cr, Queue: q, Orch: exe, PrivDir: priv, Env: agentEnv(lead.StateBranch, exe),
		UntilIdle: o.UntilIdle, Fetches: o.Sync, Events: out.event, Encode: out.encode, Dir: g.Dir})
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		n := 0
		for range sigs {
			if n++; n == 1 {
				c.Drain()
			} else {
				c.Stop()
			}
		}
	}()
	stopView := out.live(c)
	err = c.Run(context.Background())
	stopView()
	if err == nil && c.Summary().Ended == "stopped" {
		// A forced stop is an interruption, as a shell reports one: the
		// agents were ended, their tasks paused.
		return &silentExit{code: exitInterrupted}
	}
	return err
}

// exitInterrupted is orch run's exit code after a forced stop (two
// Ctrl-C): 128 + SIGINT, as a shell reports a program it interrupted.
const exitInterrupted = 130

// agentEnv is the environment of every agent: orch run's own (an agent
// gets no secret orch did not get from its environment), without what
// would point its git or orch elsewhere, with the state branch orch run
// uses, and with this orch first on PATH.
func agentEnv(stateBranch, exe string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "ORCH_"), k == "GIT_DIR", k == "GIT_WORK_TREE", k == "GIT_INDEX_FILE", k == "GIT_COMMON_DIR":
			continue
		case k == "PATH" && filepath.Base(exe) == "orch":
			kv = "PATH=" + filepath.Dir(exe) + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
		env = append(env, kv)
	}
	if stateBranch != "" {
		env = append(env, "ORCH_STATE_BRANCH="+stateBranch)
	}
	if v := os.Getenv("ORCH_GH"); v != "" {
		env = append(env, "ORCH_GH="+v)
	}
	return env
}

// runPrinter prints orch run's events: JSON lines, plain lines, or plain
// lines above one live line per slot on a terminal.
type runPrinter struct {
	g     *globalOptions
	mu    sync.Mutex
	tty   bool
	steps bool // print the step events too (stepEvents)
	shown int  // live lines on the screen now
	c     *coordinator.Coordinator
}

func newRunPrinter(g *globalOptions) *runPrinter {
	return &runPrinter{g: g, tty: g.io.OutTTY && !g.JSON && os.Getenv("TERM") != "dumb"}
}

// commands prints what orch run will run (docs/design.md §7.2: the lead sees it).
func (p *runPrinter) commands(r *coordinator.Run) {
	for _, list := range [][]*coordinator.Slot{r.Agents, r.Reviewers} {
		for _, s := range list {
			role := "agent"
			if s.Reviewer {
				role = "reviewer"
			}
			text := fmt.Sprintf("%s %s runs: %s", role, s.Name, s.Cmd)
			if len(s.Roles) > 0 {
				text += " (roles: " + strings.Join(s.Roles, ", ") + ")"
			}
			p.event(coordinator.Event{Event: "slot", Slot: s.Name, Role: strings.Replace(role, "agent", "implementer", 1), Text: text})
		}
	}
}

// runEventOf is an event as orch run --json prints it.
func runEventOf(ev coordinator.Event) runEvent {
	return runEvent{answer.Time(ev.Time), ev.Event, ev.Slot, ev.Role, ev.Task, ev.Attempt, ev.ExitCode, ev.Duration, ev.Reason, ev.Until, ev.Log, ev.Text,
		ev.Verdict, ev.Queue, ev.Cause, ev.Rule, ev.Summary}
}

// encode is an event's JSON line, as --json prints it, for run.notify.
func (p *runPrinter) encode(ev coordinator.Event) ([]byte, error) {
	b, err := json.Marshal(runEventOf(ev))
	if err != nil {
		return nil, err
	}
	return answer.Envelope(b), nil
}

func (p *runPrinter) event(ev coordinator.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if p.g.JSON {
		if err := p.g.out().writeJSON(runEventOf(ev)); err != nil {
			fmt.Fprintln(p.g.io.Err, "orch: "+err.Error())
		}
		return
	}
	if !p.steps && stepEvents[ev.Event] && !(ev.Event == "exited" && ev.ExitCode != nil && *ev.ExitCode != 0) {
		return // the live lines show it; what the run came to follows
	}
	p.clear()
	w := p.g.io.Out
	if ev.Event == "summary" {
		// The end of the run, for the person who started it: on stderr,
		// where it is seen though stdout goes to a file.
		w = p.g.io.Err
	}
	fmt.Fprintf(w, "%s %s\n", ev.Time.Format("15:04:05"), ev.Text)
	p.draw()
}

// stepEvents are the steps of a run, which a terminal shows only with -v:
// its live lines show what runs, and each run's ending gets its line. A
// failed exit is shown: its line names what the agent said.
var stepEvents = map[string]bool{"slot_checked": true, "claimed": true, "started": true, "exited": true}

// live redraws the slots' lines twice a second on a terminal, until the
// returned function is called.
func (p *runPrinter) live(c *coordinator.Coordinator) func() {
	if !p.tty {
		return func() {}
	}
	p.mu.Lock()
	p.c = c
	p.mu.Unlock()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.mu.Lock()
				p.clear()
				p.draw()
				p.mu.Unlock()
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		p.mu.Lock()
		p.clear()
		p.c = nil
		p.mu.Unlock()
	}
}

// clear removes the live lines (the cursor is below them).
func (p *runPrinter) clear() {
	if p.shown > 0 {
		fmt.Fprintf(p.g.io.Out, "\x1b[%dA\x1b[J", p.shown)
		p.shown = 0
	}
}

// draw writes one line per slot: its task, for how long, its newest line
// of output.
func (p *runPrinter) draw() {
	if p.c == nil {
		return
	}
	width := terminalWidth(p.g.io.Out)
	now := time.Now()
	for _, st := range p.c.Status() {
		line := fmt.Sprintf("  %-12s ", st.Slot)
		switch {
		case st.Task != "":
			what := "attempt"
			if st.Role == "reviewer" {
				what = "review"
			}
			line += fmt.Sprintf("%s %s %d %6s  %s", st.Task, what, st.Attempt, now.Sub(st.Started).Round(time.Second), text.OneLine(st.LastLine))
		case now.Before(st.Until):
			line += "waiting until " + st.Until.Format("15:04:05") + " (rate limit)"
		default:
			line += "idle"
		}
		fmt.Fprintln(p.g.io.Out, termboard.Clip(line, width-1))
		p.shown++
	}
}

// terminalWidth is COLUMNS, else the terminal's width, else 100.
func terminalWidth(w io.Writer) int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	return 100
}
