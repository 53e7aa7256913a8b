package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/e2e/standin"
)

// orch run against the real agent CLIs: Claude Code and Codex, started by
// orch run from the presets (harness: claude, harness: codex) in task
// worktrees, each pointed at a stand-in model server (e2e/standin) that
// plays a script: shell calls that commit, submit and approve, delays,
// rate and usage limits, a refused key, a missing model, a denied command,
// a run that ends without submitting, a submit through orch's MCP tool, a
// look at Codex's PATH. What is asserted is what orch records: the task's
// queue and counts, the runs in orch show --json, orch run's events and
// exit, orch inbox.
//
// The CLIs are those make test installs (.ci/run): $ORCH_AGENT_CLI_DIR
// (a node_modules directory), else /tmp/agentcli/node_modules, else PATH.
// A missing one skips its subtests, loudly.

// realCLIs are the harness presets under test (config.Harnesses: their
// Checked versions are the ones .ci/run installs).
var realCLIs = []string{"claude", "codex"}

const realInstall = `npm install --no-audit --no-fund --prefix DIR @anthropic-ai/claude-code@2.1.328 @openai/codex@0.169.0` +
	` and ORCH_AGENT_CLI_DIR=DIR/node_modules (make test does this through .ci/run)`

// findAgentCLI finds an agent CLI or skips the test, saying how to install it.
func findAgentCLI(t *testing.T, name string) string { return standin.FindCLI(t, name, realInstall) }

// commitSubmit is the implementer's one shell call that does the work:
// a file committed on the task branch, then orch submit.
const commitSubmit = "touch made-by-agent && git add made-by-agent && git commit -qm agent && orch submit -m done"

// agentScript is the model of a scenario. The n-th run of a role (its n-th
// session) plays runs[n] (the last past the end), one reply per step;
// "{task}" in a shell command is the task's ID, read from the prompt.
type agentScript struct {
	impl, review [][]standin.Reply
}

// promptHead is the first line of orch's prompts (prompt/templates):
// "# Task T-x:", "# Continue T-x:", "# Retry of T-x:", "# Review T-x:".
var promptHead = regexp.MustCompile(`(?m)^# (Task|Continue|Retry of|Review) (T-[0-9a-z]+):`)

// scripted is the Player of a scenario. It keeps every turn it played.
type scripted struct {
	s agentScript

	mu       sync.Mutex
	sessions map[string]int // role and session: the run's index in its role
	runs     map[bool]int   // runs seen, by role (true: reviewer)
	turns    []playedTurn
}

type playedTurn struct {
	Review bool
	Run    int
	Turn   standin.Turn
}

func newScripted(s agentScript) *scripted {
	return &scripted{s: s, sessions: map[string]int{}, runs: map[bool]int{}}
}

func (p *scripted) play(t *standin.Turn) standin.Reply {
	m := promptHead.FindStringSubmatch(t.Prompt)
	if m == nil || t.Session == "" {
		return standin.Reply{Error: &standin.Error{Status: 400, Body: fmt.Sprintf(
			`{"type":"error","error":{"type":"invalid_request_error","message":"realagents: no orch prompt (or no session) in %.200q"}}`, t.Prompt)}}
	}
	review, id := m[1] == "Review", m[2]
	p.mu.Lock()
	defer p.mu.Unlock()
	key := fmt.Sprint(review, t.Session)
	n, ok := p.sessions[key]
	if !ok {
		n = p.runs[review]
		p.runs[review]++
		p.sessions[key] = n
	}
	runs := p.s.impl
	if review {
		runs = p.s.review
	}
	var rep standin.Reply
	switch {
	case len(runs) == 0:
		rep = standin.Text("realagents: no script for this role")
	case t.Step >= len(runs[min(n, len(runs)-1)]):
		rep = standin.Text("realagents: end of script")
	default:
		rep = runs[min(n, len(runs)-1)][t.Step]
	}
	rep.Shell = strings.ReplaceAll(rep.Shell, "{task}", id)
	p.turns = append(p.turns, playedTurn{Review: review, Run: n, Turn: *t})
	return rep
}

// played returns the turns of a role's n-th run, in order.
func (p *scripted) played(review bool, run int) []playedTurn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []playedTurn
	for _, pt := range p.turns {
		if pt.Review == review && pt.Run == run {
			out = append(out, pt)
		}
	}
	return out
}

// toolResult is what the model was given at step of a role's run: what
// came of its call at the step before (its command's output, the CLI's
// refusal, an MCP tool's answer).
func (p *scripted) toolResult(review bool, run, step int) (string, bool) {
	for _, pt := range p.played(review, run) {
		if pt.Turn.Step == step {
			return pt.Turn.ToolResult, true
		}
	}
	return "", false
}

// realCase is one scenario on one CLI: the repository, the server, the
// task, and what orch run did.
type realCase struct {
	cli   string
	r     *Repo
	srv   *standin.Server
	model *scripted
	task  string
	run   orchRun
}

// realConfig is the run: section of a scenario.
type realConfig struct {
	reviewer bool   // a reviewer slot too (else an implementer alone)
	settings string // more run: settings, one "key: value" a line
}

// newRealCase makes a repository whose run: starts cli's preset against a
// stand-in server that plays s, with one task in it.
func newRealCase(t *testing.T, cli string, cfg realConfig, s agentScript, prepare func(c *realCase)) *realCase {
	t.Helper()
	bin := findAgentCLI(t, cli)
	c := &realCase{cli: cli, model: newScripted(s)}
	srv, err := standin.Start(c.model.play)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c.srv = srv
	c.r = NewRepo(t)
	r := c.r
	// What orch run gives every agent: the CLI on PATH, pointed at the
	// server, its config in the private HOME.
	r.Env = append(r.Env, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	switch cli {
	case "claude":
		r.Env = append(r.Env, standin.ClaudeEnv(srv.URL(), filepath.Join(r.Home, ".claude"))...)
	case "codex":
		codexHome := filepath.Join(r.Home, ".codex")
		if err := standin.WriteCodexConfig(codexHome, srv.URL()); err != nil {
			t.Fatal(err)
		}
		r.Env = append(r.Env, standin.CodexEnv(codexHome)...)
	}
	if prepare != nil {
		prepare(c)
	}
	// Landing is tested elsewhere: approved is done.
	path := filepath.Join(r.Main, ".orchestrator", "config.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mode := regexp.MustCompile(`(?m)^  mode: local\b`)
	if n := len(mode.FindAllIndex(b, -1)); n != 1 {
		t.Fatalf("config.yaml has %d lines '  mode: local' (land:), want 1:\n%s", n, b)
	}
	b = mode.ReplaceAll(b, []byte("  mode: off  "))
	var run strings.Builder
	run.WriteString("run:\n  kill_grace: 2s\n  backoff: 1s\n  max_wait: 3m\n")
	for _, l := range strings.Split(strings.TrimSpace(cfg.settings), "\n") {
		if l != "" {
			run.WriteString("  " + strings.TrimSpace(l) + "\n")
		}
	}
	fmt.Fprintf(&run, "  agents:\n    - {name: impl-1, harness: %s}\n", cli)
	if cfg.reviewer {
		fmt.Fprintf(&run, "  reviewers:\n    - {name: rev-1, harness: %s}\n", cli)
	}
	if err := os.WriteFile(path, append(b, run.String()...), 0o666); err != nil {
		t.Fatal(err)
	}
	r.MustOrch(r.Main, "check") // a person's verb commits the policy edit
	var out NewOutput
	if err := r.MustOrch(r.Main, "new", "Real agent task", "--body", "Make a file and commit it.", "--json").JSON(&out); err != nil {
		t.Fatal(err)
	}
	c.task = out.Task.ID
	t.Cleanup(func() {
		if t.Failed() {
			c.dump(t)
		}
	})
	return c
}

// orchRun is one orch run --until-idle --json.
type orchRun struct {
	code           int
	stdout, stderr string
	events         []runEventJSON
	took           time.Duration
}

type runEventJSON struct {
	Event    string `json:"event"`
	Slot     string `json:"slot"`
	Role     string `json:"role"`
	Task     string `json:"task"`
	Attempt  int    `json:"attempt"`
	ExitCode *int   `json:"exit_code"`
	Duration string `json:"duration"`
	Reason   string `json:"reason"`
	Until    string `json:"until"`
	Text     string `json:"text"`
}

// runOrch runs orch run --until-idle --json in the main worktree.
func (c *realCase) runOrch(t *testing.T) orchRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, orchBin, "run", "--until-idle", "--json")
	cmd.Dir = c.r.Main
	cmd.Env = c.r.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := orchRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		c.run = res
		t.Fatalf("orch run did not end within 5 minutes")
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	for _, line := range strings.Split(res.stdout, "\n") {
		var ev runEventJSON
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &ev) == nil {
			res.events = append(res.events, ev)
		}
	}
	c.run = res
	t.Logf("%s: orch run exited %d after %s", c.cli, res.code, res.took.Round(100*time.Millisecond))
	return res
}

// dump logs what a failed scenario did: orch run's output, the agents'
// logs, the requests the server had.
func (c *realCase) dump(t *testing.T) {
	t.Logf("orch run (exit %d) stdout:\n%s\nstderr:\n%s", c.run.code, c.run.stdout, c.run.stderr)
	logs, _ := filepath.Glob(filepath.Join(c.r.Main, ".git", "orch", "logs", "*", "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		t.Logf("log %s:\n%s", filepath.Base(filepath.Dir(l))+"/"+filepath.Base(l), b)
	}
	for _, q := range c.srv.Requests() {
		s := fmt.Sprintf("server: %s %s %s -> %d", q.Kind, q.Method, q.Path, q.Status)
		if q.Turn != nil {
			s += fmt.Sprintf(" (step %d attempt %d, session %s, result %.200q)", q.Turn.Step, q.Turn.Attempt, q.Turn.Session, q.Turn.ToolResult)
		}
		t.Log(s)
	}
}

// events returns orch run's events of a kind (and of the task, for those
// that name one).
func (c *realCase) events(kind string) []runEventJSON {
	var out []runEventJSON
	for _, ev := range c.run.events {
		if ev.Event == kind && (ev.Task == "" || ev.Task == c.task) {
			out = append(out, ev)
		}
	}
	return out
}

func (c *realCase) hasEvent(kind, reason string) bool {
	for _, ev := range c.events(kind) {
		if reason == "" || ev.Reason == reason {
			return true
		}
	}
	return false
}

// showJSON is what orch show --json says of the task (the fields read).
type showJSON struct {
	Task struct {
		ID             string `json:"id"`
		Queue          string `json:"queue"`
		Branch         string `json:"branch"`
		Attempts       int    `json:"attempts"`
		Crashes        int    `json:"crashes"`
		RejectionCount int    `json:"rejection_count"`
	} `json:"task"`
	Runs []struct {
		Agent        string  `json:"agent"`
		Role         string  `json:"role"`
		Attempt      int     `json:"attempt"`
		Harness      string  `json:"harness"`
		DurationMS   int64   `json:"duration_ms"`
		Exit         int     `json:"exit"`
		Transition   bool    `json:"transition"`
		Cause        string  `json:"cause"`
		Words        string  `json:"words"`
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		CostUSD      float64 `json:"cost_usd"`
	} `json:"runs"`
	Spent struct {
		Runs         int     `json:"runs"`
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		CostUSD      float64 `json:"cost_usd"`
	} `json:"spent"`
	Body string `json:"body"`
}

func (c *realCase) show(t *testing.T) showJSON {
	t.Helper()
	var s showJSON
	if err := c.r.MustOrch(c.r.Main, "show", c.task, "--json").JSON(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// wantTask checks the task's queue and its crash and rejection counts.
func (c *realCase) wantTask(t *testing.T, s showJSON, queue string, crashes int) {
	t.Helper()
	if s.Task.Queue != queue || s.Task.Crashes != crashes || s.Task.RejectionCount != 0 {
		t.Errorf("%s: %s, %d crashes, %d rejections; want %s, %d crashes, none rejected",
			c.task, s.Task.Queue, s.Task.Crashes, s.Task.RejectionCount, queue, crashes)
	}
}

// wantRuns checks the recorded runs: one per want, in order, each with
// the agent, whether it moved its task, and its cause.
func (c *realCase) wantRuns(t *testing.T, s showJSON, want ...runWant) {
	t.Helper()
	if len(s.Runs) != len(want) {
		t.Errorf("orch show lists %d runs, want %d: %+v", len(s.Runs), len(want), s.Runs)
		return
	}
	for i, w := range want {
		got := s.Runs[i]
		if got.Agent != w.agent || got.Transition != w.transition || got.Cause != w.cause || got.Harness != c.cli ||
			!strings.Contains(got.Words, w.words) {
			t.Errorf("run %d: %s, transition %v, cause %q (%q), harness %q; want %s, %v, %q (%q), %s",
				i+1, got.Agent, got.Transition, got.Cause, got.Words, got.Harness, w.agent, w.transition, w.cause, w.words, c.cli)
		}
	}
}

type runWant struct {
	agent      string
	transition bool
	cause      string
	words      string // a part of the cause's words
}

// wantOK checks that orch run ended well, idle.
func (c *realCase) wantOK(t *testing.T) {
	t.Helper()
	if c.run.code != 0 || len(c.events("idle")) != 1 {
		t.Errorf("orch run exited %d (idle events: %d), want 0 and idle\n%s", c.run.code, len(c.events("idle")), tail(c.run.stderr, 10))
	}
}

// wantCommitted checks that the agent's commit is on the task branch.
func (c *realCase) wantCommitted(t *testing.T, s showJSON) {
	t.Helper()
	if s.Task.Branch == "" {
		t.Fatalf("%s has no branch", c.task)
	}
	if msg := c.r.Git(c.r.Main, "log", "-1", "--format=%s", s.Task.Branch); msg != "agent" {
		t.Errorf("the tip of %s is %q, want the agent's commit", s.Task.Branch, msg)
	}
	if res := c.r.TryGit(c.r.Main, "cat-file", "-e", s.Task.Branch+":made-by-agent"); !res.OK() {
		t.Errorf("no made-by-agent on %s: %v", s.Task.Branch, res)
	}
	if mainMsg := c.r.Git(c.r.Main, "log", "-1", "--format=%s", "main"); mainMsg == "agent" {
		t.Errorf("the agent's commit is on main (land: mode off)")
	}
}

// wantSetupStop checks a slot stopped for its setup: orch run exits
// non-zero naming the cause, the task is back uncounted, orch inbox says
// so.
func (c *realCase) wantSetupStop(t *testing.T, cause, words string) {
	t.Helper()
	if c.run.code == 0 || !strings.Contains(c.run.stderr, "every slot stopped") || !strings.Contains(c.run.stderr, "impl-1: "+words) {
		t.Errorf("orch run exited %d, stderr %q: want non-zero, every slot stopped, impl-1: %s", c.run.code, c.run.stderr, words)
	}
	stops := c.events("slot_stopped")
	if len(stops) != 1 || stops[0].Slot != "impl-1" || stops[0].Reason != "setup" || !strings.Contains(stops[0].Text, words) {
		t.Errorf("slot_stopped events %+v, want one for impl-1 (setup) naming %q", stops, words)
	}
	if !c.hasEvent("paused", "setup") {
		t.Errorf("no paused event with reason setup: %+v", c.run.events)
	}
	s := c.show(t)
	c.wantTask(t, s, "needs_continuation", 0)
	c.wantRuns(t, s, runWant{"impl-1", false, cause, words})
	var inbox struct {
		Items []struct {
			Reason  string `json:"reason"`
			Summary string `json:"summary"`
		} `json:"items"`
	}
	if err := c.r.MustOrch(c.r.Main, "inbox", "--json").JSON(&inbox); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range inbox.Items {
		if it.Reason == "slot" && strings.Contains(it.Summary, "impl-1") && strings.Contains(it.Summary, words) {
			found = true
		}
	}
	if !found {
		t.Errorf("orch inbox has no slot item for impl-1 naming %q: %+v", words, inbox.Items)
	}
}

// realScenario is one scenario: what the model plays, how orch is set up,
// what must come of it.
type realScenario struct {
	name    string
	only    string // "": both CLIs
	cfg     realConfig
	script  func(cli string) agentScript
	prepare func(t *testing.T, c *realCase)
	check   func(t *testing.T, c *realCase)
}

func usage(in, out int) standin.Usage { return standin.Usage{InputTokens: in, OutputTokens: out} }

var realScenarios = []realScenario{
	{
		// The loop: the implementer commits and submits, a reviewer
		// approves, the task is done; both runs recorded with what they
		// spent.
		name: "implement", cfg: realConfig{reviewer: true},
		script: func(string) agentScript {
			return agentScript{
				impl:   [][]standin.Reply{{{Shell: commitSubmit, Usage: usage(1000, 50)}, {Text: "Submitted.", Usage: usage(1100, 60)}}},
				review: [][]standin.Reply{{{Shell: "orch approve {task} -m ok", Usage: usage(300, 7)}, {Text: "Approved.", Usage: usage(310, 8)}}},
			}
		},
		check: func(t *testing.T, c *realCase) {
			c.wantOK(t)
			s := c.show(t)
			c.wantTask(t, s, "done", 0)
			c.wantCommitted(t, s)
			c.wantRuns(t, s, runWant{"impl-1", true, "", ""}, runWant{"rev-1", true, "", ""})
			if len(s.Runs) == 2 {
				impl, rev := s.Runs[0], s.Runs[1]
				if impl.Role != "implementer" || rev.Role != "reviewer" || impl.Exit != 0 || rev.Exit != 0 {
					t.Errorf("runs: %+v", s.Runs)
				}
				if impl.InputTokens != 2100 || impl.OutputTokens != 110 || rev.InputTokens != 610 || rev.OutputTokens != 15 {
					t.Errorf("tokens: implementer %d in / %d out, reviewer %d / %d; want 2100 / 110 and 610 / 15 (the server's counts)",
						impl.InputTokens, impl.OutputTokens, rev.InputTokens, rev.OutputTokens)
				}
				if c.cli == "claude" && (impl.CostUSD <= 0 || rev.CostUSD <= 0) {
					t.Errorf("claude reports a cost; runs record %v and %v", impl.CostUSD, rev.CostUSD)
				}
			}
			if s.Spent.Runs != 2 || s.Spent.InputTokens != 2710 || s.Spent.OutputTokens != 125 {
				t.Errorf("spent: %+v, want 2 runs, 2710 in / 125 out", s.Spent)
			}
			// What the agents saw of their orch verbs, through the CLI's shell.
			if out, _ := c.model.toolResult(false, 0, 1); strings.TrimSpace(out) != c.task+": claimed -> provisional" {
				t.Errorf("the implementer's shell call gave %q, want orch submit's answer", out)
			}
			if out, _ := c.model.toolResult(true, 0, 1); strings.TrimSpace(out) != c.task+": provisional -> done" {
				t.Errorf("the reviewer's shell call gave %q, want orch approve's answer", out)
			}
		},
	},
	{
		// A long run that keeps talking: every turn comes after a delay
		// shorter than run.stall_timeout, the whole run takes longer.
		name: "long-run", cfg: realConfig{settings: "stall_timeout: 8s"},
		script: func(string) agentScript {
			d := 4 * time.Second
			return agentScript{impl: [][]standin.Reply{{
				{Shell: "git status --short", Delay: d},
				{Shell: "git log --oneline -1", Delay: d},
				{Shell: "git branch --show-current", Delay: d},
				{Shell: commitSubmit, Delay: d},
				{Text: "Submitted.", Delay: d},
			}}}
		},
		check: func(t *testing.T, c *realCase) {
			c.wantOK(t)
			if c.hasEvent("killing", "") {
				t.Errorf("orch run killed the agent: %+v", c.events("killing"))
			}
			s := c.show(t)
			c.wantTask(t, s, "provisional", 0)
			c.wantCommitted(t, s)
			c.wantRuns(t, s, runWant{"impl-1", true, "", ""})
			if len(s.Runs) == 1 && s.Runs[0].DurationMS < 16000 {
				t.Errorf("the run took %d ms: want more than run.stall_timeout twice over (five turns of 4 s)", s.Runs[0].DurationMS)
			}
		},
	},
	{
		// A rate limit: the task is paused uncounted, the slot backs off
		// (claude: a 429, retried once, with no reset time Claude reads)
		// or waits until the reset (codex: a usage limit with its time),
		// then the next run submits.
		name: "rate-limit",
		script: func(cli string) agentScript {
			limit := standin.RateLimit(2 * time.Second)
			if cli == "codex" {
				limit = standin.UsageLimit(2 * time.Second)
			}
			return agentScript{impl: [][]standin.Reply{{limit}, {standin.Shell(commitSubmit), standin.Text("Submitted.")}}}
		},
		check: func(t *testing.T, c *realCase) {
			c.wantOK(t)
			if !c.hasEvent("paused", "rate_limit") {
				t.Errorf("no paused event with reason rate_limit")
			}
			backoffs := c.events("backoff")
			if len(backoffs) == 0 || backoffs[0].Reason != "rate_limit" || backoffs[0].Slot != "impl-1" {
				t.Errorf("backoff events %+v, want impl-1's for a rate limit", backoffs)
			} else if want := "impl-1 backs off for 1s (rate limited (429), no reset time given)"; c.cli == "claude" && backoffs[0].Text != want {
				t.Errorf("backoff: %q, want %q (run.backoff: Claude Code reads no reset time with an API key)", backoffs[0].Text, want)
			}
			s := c.show(t)
			c.wantTask(t, s, "provisional", 0)
			c.wantCommitted(t, s)
			cause, words := "rate_limit", "rate limited (429)"
			if c.cli == "codex" {
				cause, words = "usage_limit", "usage limit until"
			}
			c.wantRuns(t, s, runWant{"impl-1", false, cause, words}, runWant{"impl-1", true, "", ""})
			if c.cli == "codex" && len(backoffs) > 0 && !strings.Contains(backoffs[0].Text, "waits until") {
				t.Errorf("codex said when its limit resets; the slot should wait until then: %q", backoffs[0].Text)
			}
			if c.cli == "claude" {
				// Claude retried once (CLAUDE_CODE_MAX_RETRIES=1) before it gave up.
				if n := len(c.model.played(false, 0)); n != 2 {
					t.Errorf("the rate-limited run asked %d times, want 2 (one retry)", n)
				}
			}
		},
	},
	{
		// Codex's 429 (retried once, "exceeded retry limit, last status:
		// 429"), which gives no reset time: the slot backs off.
		name: "rate-limit-429", only: "codex",
		script: func(string) agentScript {
			return agentScript{impl: [][]standin.Reply{{standin.RateLimit(time.Second)}, {standin.Shell(commitSubmit), standin.Text("Submitted.")}}}
		},
		check: func(t *testing.T, c *realCase) {
			c.wantOK(t)
			backoffs := c.events("backoff")
			if !c.hasEvent("paused", "rate_limit") || len(backoffs) == 0 || backoffs[0].Text != "impl-1 backs off for 1s (rate limited (429), no reset time given)" {
				t.Errorf("want the task paused for a rate limit and impl-1 backing off for run.backoff (1s); backoffs: %+v", backoffs)
			}
			s := c.show(t)
			c.wantTask(t, s, "provisional", 0)
			c.wantRuns(t, s, runWant{"impl-1", false, "rate_limit", "rate limited (429)"}, runWant{"impl-1", true, "", ""})
		},
	},
	{
		// A refused API key: the slot's setup, not the task's.
		name:   "unauthorized",
		script: func(string) agentScript { return agentScript{impl: [][]standin.Reply{{standin.Unauthorized()}}} },
		check: func(t *testing.T, c *realCase) {
			c.wantSetupStop(t, "auth", "invalid API key")
		},
	},
	{
		// A model that does not exist: the slot's setup too.
		name:   "no-model",
		script: func(string) agentScript { return agentScript{impl: [][]standin.Reply{{standin.NoModel()}}} },
		check: func(t *testing.T, c *realCase) {
			words := "model not found: claude-opus-5-5"
			if c.cli == "codex" {
				words = "model not found: gpt-5.5"
			}
			c.wantSetupStop(t, "model", words)
		},
	},
	{
		// A command outside run.allow: Claude denies it (the preset's
		// rules), the run goes on and submits; the run is recorded with
		// the denial.
		name: "permission", only: "claude",
		script: func(string) agentScript {
			return agentScript{impl: [][]standin.Reply{{standin.Shell("curl -s http://127.0.0.1:9/"), standin.Shell(commitSubmit), standin.Text("Submitted.")}}}
		},
		check: func(t *testing.T, c *realCase) {
			c.wantOK(t)
			if out, _ := c.model.toolResult(false, 0, 1); !strings.Contains(out, "requires approval") {
				t.Errorf("claude gave the model %q for curl, want its denial", out)
			}
			s := c.show(t)
			c.wantTask(t, s, "provisional", 0)
			c.wantCommitted(t, s)
			c.wantRuns(t, s, runWant{"impl-1", true, "permission", "permission denied: Bash(curl -s http://127.0.0.1:9/)"})
		},
	},
	{
		// The agent exits 0 without a transition: a crash, counted. The
		// task goes back out (paused, with a note) and the next run does
		// the same: at run.max_crashes (2) it is escalated. (A submit
		// would reset the count: crashes are counted in a row.)
		name: "no-submit", cfg: realConfig{settings: "max_crashes: 2"},
		script: func(string) agentScript {
			return agentScript{impl: [][]standin.Reply{{standin.Text("I looked and changed nothing.")}}}
		},
		check: func(t *testing.T, c *realCase) {
			c.wantOK(t)
			if !c.hasEvent("paused", "crash") || !c.hasEvent("escalated", "crash") {
				t.Errorf("want a paused event, then an escalated one, both with reason crash")
			}
			exits := c.events("exited")
			if len(exits) != 2 || exits[0].ExitCode == nil || *exits[0].ExitCode != 0 {
				t.Errorf("exited events %+v, want two, the first with exit code 0", exits)
			}
			s := c.show(t)
			c.wantTask(t, s, "escalated", 2)
			c.wantRuns(t, s, runWant{"impl-1", false, "", ""}, runWant{"impl-1", false, "", ""})
			if !strings.Contains(s.Body, "without submitting") {
				t.Errorf("the task has no note of the runs that ended without submitting:\n%s", s.Body)
			}
		},
	},
	{
		// Claude calls orch's MCP tool (orch mcp, from a .mcp.json in the
		// repository, so in the task's worktree; the preset allows
		// mcp__orch) to submit.
		name: "mcp", only: "claude",
		prepare: func(t *testing.T, c *realCase) {
			mcp := `{"mcpServers": {"orch": {"command": "orch", "args": ["mcp"]}}}` + "\n"
			if err := os.WriteFile(filepath.Join(c.r.Main, ".mcp.json"), []byte(mcp), 0o666); err != nil {
				t.Fatal(err)
			}
			c.r.Git(c.r.Main, "add", ".mcp.json")
			c.r.Git(c.r.Main, "commit", "-qm", "orch's MCP server")
		},
		script: func(string) agentScript {
			return agentScript{impl: [][]standin.Reply{{
				standin.Shell("touch made-by-agent && git add made-by-agent && git commit -qm agent"),
				toolCall("mcp__orch__orch_submit", map[string]string{"message": "done"}),
				standin.Text("Submitted."),
			}}}
		},
		check: func(t *testing.T, c *realCase) {
			c.wantOK(t)
			if out, _ := c.model.toolResult(false, 0, 2); !strings.Contains(out, `"from":"claimed"`) || !strings.Contains(out, c.task) {
				t.Errorf("the MCP tool orch_submit answered %q, want orch's JSON answer for %s", out, c.task)
			}
			s := c.show(t)
			c.wantTask(t, s, "provisional", 0)
			c.wantCommitted(t, s)
			c.wantRuns(t, s, runWant{"impl-1", true, "", ""})
		},
	},
	{
		// Codex runs its commands with bash -c (allow_login_shell=false):
		// a login shell's profile would reset PATH and lose orch.
		name: "path", only: "codex",
		script: func(string) agentScript {
			return agentScript{impl: [][]standin.Reply{{standin.Shell("command -v orch"), standin.Shell(commitSubmit), standin.Text("Submitted.")}}}
		},
		check: func(t *testing.T, c *realCase) {
			c.wantOK(t)
			out, _ := c.model.toolResult(false, 0, 1)
			if strings.TrimSpace(out) != orchBin {
				t.Errorf("command -v orch in codex's shell: %q, want %s (orch run puts it first on PATH)", out, orchBin)
			}
			s := c.show(t)
			c.wantTask(t, s, "provisional", 0)
			c.wantRuns(t, s, runWant{"impl-1", true, "", ""})
		},
	},
}

// toolCall is a Claude reply that calls a tool other than Bash (the
// server's Shell is Bash only): the Messages API's stream for one tool_use
// block, sent as the body of a 200 "error" (the server writes an error's
// body and headers as they are).
func toolCall(name string, input any) standin.Reply {
	in, _ := json.Marshal(input)
	var b strings.Builder
	ev := func(typ string, data map[string]any) {
		data["type"] = typ
		j, _ := json.Marshal(data)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, j)
	}
	usage := map[string]int{"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	ev("message_start", map[string]any{"message": map[string]any{"id": "msg_realagents_tool", "type": "message", "role": "assistant",
		"model": "claude-opus-5-5", "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "tool_use", "id": "toolu_realagents_" + name, "name": name, "input": map[string]any{}}})
	ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
	ev("content_block_stop", map[string]any{"index": 0})
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 20}})
	ev("message_stop", map[string]any{})
	return standin.Reply{Error: &standin.Error{Status: 200, Headers: map[string]string{"Content-Type": "text/event-stream"}, Body: b.String()}}
}

// TestRealAgents runs every scenario on each CLI it applies to: subtests
// claude/<scenario> and codex/<scenario>.
func TestRealAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the real agent CLIs take seconds a run")
	}
	for _, cli := range realCLIs {
		t.Run(cli, func(t *testing.T) {
			bin := findAgentCLI(t, cli)
			out, err := exec.Command(bin, "--version").CombinedOutput()
			version := strings.TrimSpace(string(out))
			if want := config.Harnesses[cli].Checked; err != nil || !strings.Contains(version, want) {
				t.Logf("WARNING: %s --version says %q (%v); the preset was checked against %s", bin, version, err, want)
			} else {
				t.Logf("%s: %s", bin, version)
			}
			for _, sc := range realScenarios {
				if sc.only != "" && sc.only != cli {
					continue
				}
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					var prepare func(c *realCase)
					if sc.prepare != nil {
						prepare = func(c *realCase) { sc.prepare(t, c) }
					}
					c := newRealCase(t, cli, sc.cfg, sc.script(cli), prepare)
					c.runOrch(t)
					sc.check(t, c)
				})
			}
		})
	}
}
