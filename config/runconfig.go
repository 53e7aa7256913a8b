package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/taskfile"
)

// Run is config.yaml's run: section (docs/design.md §7): the agents and reviewers
// orch run starts, one slot each, and how it watches them. It is
// human-owned like the rest of config.yaml: agents cannot change what runs.
type Run struct {
	Agents    []RunSlot `yaml:"agents" json:"agents" doc:"the implementers orch run starts, one slot (one actor) each"`
	Reviewers []RunSlot `yaml:"reviewers" json:"reviewers" doc:"the reviewers orch run starts, one slot each"`
	// TaskTimeout (wall clock) and StallTimeout (no output) end an agent's
	// process group: SIGTERM, then SIGKILL after KillGrace.
	TaskTimeout  Duration `yaml:"task_timeout" json:"task_timeout" doc:"an agent's run is ended after this long (SIGTERM, then SIGKILL after kill_grace)"`
	StallTimeout Duration `yaml:"stall_timeout" json:"stall_timeout" doc:"an agent's run that printed nothing for this long is ended"`
	KillGrace    Duration `yaml:"kill_grace" json:"kill_grace" doc:"how long an ended run has between SIGTERM and SIGKILL"`
	// MaxProvisional > 0 stops claiming while that many submissions wait
	// for review.
	MaxProvisional int `yaml:"max_provisional" json:"max_provisional" doc:"> 0: stop claiming while that many submissions wait for review; 0: no limit"`
	// MaxCrashes exits without a transition, in a row, escalate a task.
	MaxCrashes int `yaml:"max_crashes" json:"max_crashes" doc:"runs in a row that exit without a transition before the task escalates"`
	// PollPRs runs orch pr poll that often when github.repo is set.
	PollPRs Duration `yaml:"poll_prs" json:"poll_prs" doc:"how often orch run runs orch pr poll when github.repo is set"`
	// Backoff is a rate-limited slot's first wait when its agent's output
	// gives no reset time; it doubles each time, up to 64 times as long.
	Backoff Duration `yaml:"backoff" json:"backoff" doc:"a rate-limited slot's first wait when its agent gives no reset time; it doubles each time, up to 64 times as long"`
	// MaxWait caps every wait for a rate limit's reset, whatever time the
	// agent's output names (a reset in 2099 is not a wait).
	MaxWait Duration `yaml:"max_wait" json:"max_wait" doc:"the longest wait for a rate limit's reset, whatever time the agent names"`
	// MaxLog caps one run's log: past it, the head and the newest output
	// are kept, and the cut is marked.
	MaxLog ByteSize `yaml:"max_log" json:"max_log" doc:"the largest log of one run: past it the head and the newest output are kept, and the cut is marked"`
	// Allow is what an agent may run without asking, one command prefix
	// each ("git", "orch", "go test"), translated to each harness's flags
	// (Harness.Command). nil: DefaultAllow.
	Allow []string `yaml:"allow" json:"allow" doc:"what an agent may run without asking, one command prefix each (git, orch, go test), given to each harness in its own flags" default:"[git, orch]"`
	// Notify is a command of the lead's, run by sh -c with the event's
	// JSON (as orch run --json prints it) on stdin when a task escalates,
	// a slot stops, the queue drains (idle) or a landing fails for the
	// last time; "" runs none. Its failure is reported, never fatal.
	Notify string `yaml:"notify" json:"notify" doc:"a command run by sh -c with the event's JSON on stdin when a task escalates, a slot stops, the queue drains or a landing fails for the last time; its failure is reported, never fatal; empty: none"`
}

// AllowList is run.allow, or DefaultAllow when it says none.
func (r *Run) AllowList() []string {
	if r.Allow == nil {
		return DefaultAllow
	}
	return r.Allow
}

// ByteSize is a size in bytes, written 16MiB, 512KiB, 1GB, 4096.
type ByteSize int64

// UnmarshalYAML reads a size with an optional unit (B, KB, KiB, MB, MiB,
// GB, GiB; K, M and G are the binary units).
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*b = ByteSize(v)
	return nil
}

// ParseByteSize reads a size as config.yaml writes it.
func ParseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.TrimSpace(t[i:])
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1e3, "m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9}[strings.ToLower(unit)]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 {
		return 0, fmt.Errorf("%q is not a size (16MiB, 512KiB, 4096)", s)
	}
	return int64(v * mult), nil
}

// String is the size in the largest binary unit that holds it whole.
func (b ByteSize) String() string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b > 0 && int64(b)%u.n == 0 {
			return strconv.FormatInt(int64(b)/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// RunSlot is one agent or reviewer of run:.
type RunSlot struct {
	Name string `yaml:"name" json:"name" doc:"the slot's name: the actor it claims and reviews as"`
	// Cmd runs under sh -c in the task's worktree, the prompt on stdin.
	Cmd string `yaml:"cmd" json:"cmd" doc:"the command, run by sh -c in the task's worktree with the prompt on stdin (or a harness)"`
	// Harness names a preset (Harnesses) that fills Cmd and RateLimit
	// when they are not given.
	Harness string `yaml:"harness" json:"harness,omitempty" doc:"a preset that fills cmd and rate_limit: claude, codex, aider, gemini or opencode"`
	// Account groups slots that share a rate limit (as Harness does).
	Account string `yaml:"account" json:"account,omitempty" doc:"slots with one account share a rate limit (as one harness does)"`
	// Roles: an agent claims tasks of these roles (as in the roster); a
	// reviewer reviews only tasks of these roles or Labels (as a scoped
	// entry of review.reviewers).
	Roles  []string `yaml:"roles" json:"roles,omitempty" doc:"an agent claims tasks of these roles; a reviewer reviews only tasks of these roles (or labels)"`
	Labels []string `yaml:"labels" json:"labels,omitempty" doc:"a reviewer reviews only tasks of these labels (or roles)"`
	// RateLimit is a regular expression: a line of output that matches it
	// means the agent was rate limited; so does an exit code in
	// RateLimitExit.
	RateLimit     string    `yaml:"rate_limit" json:"rate_limit,omitempty" doc:"a regular expression: a line of output that matches it means the agent was rate limited"`
	RateLimitExit ExitCodes `yaml:"rate_limit_exit" json:"rate_limit_exit,omitempty" doc:"exit codes that mean the agent was rate limited"`

	line int
}

// ExitCodes is one exit code or a list of them.
type ExitCodes []int

// UnmarshalYAML accepts 75 as well as [75, 76].
func (x *ExitCodes) UnmarshalYAML(n *yaml.Node) error {
	var list []int
	if n.Kind == yaml.ScalarNode {
		v, err := strconv.Atoi(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: rate_limit_exit: %q is not an exit code", n.Line, n.Value)
		}
		list = []int{v}
	} else if err := n.Decode(&list); err != nil {
		return fmt.Errorf("line %d: rate_limit_exit: a code or a list of codes", n.Line)
	}
	*x = list
	return nil
}

// UnmarshalYAML records the entry's line, for messages.
func (s *RunSlot) UnmarshalYAML(n *yaml.Node) error {
	type plain RunSlot
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = RunSlot(p)
	s.line = n.Line
	return nil
}

// Harness is a preset for a coding agent's command-line tool: its
// non-interactive form, with the prompt on stdin, and the structured output
// orch reads (Stream: "claude" for Claude Code's stream-json, "codex" for
// codex exec --json, "" for plain text, read only at a failed run's end).
// Checked is the version of the CLI the preset was proven against (the
// e2e suite drives that version); "" means it was not.
type Harness struct {
	Program string
	Stream  string
	Checked string
	// RateLimit is a plain-text preset's pattern for a limit message in a
	// failed run's last lines.
	RateLimit string
	command   func(allow []string) string
}

// Command is the preset's command with what the agent may run without
// asking (run.allow) translated to the CLI's own flags.
func (h Harness) Command(allow []string) string { return h.command(allow) }

// Harnesses are the presets run.agents[].harness may name.
var Harnesses = map[string]Harness{
	// Claude Code: stream-json, one line per event (liveness for
	// stall_timeout, and the result that says how the run ended); edits
	// accepted, and each allowed command a Bash rule (Claude checks every
	// part of a compound command against them); orch's MCP tools allowed.
	// bypassPermissions is refused as root, and a denied call is only a
	// tool error the model may ignore, so the rules are the way.
	"claude": {Program: "claude", Stream: "claude", Checked: "2.1.328", command: func(allow []string) string {
		rules := []string{"mcp__orch"}
		for _, a := range allow {
			rules = append(rules, "Bash("+a+":*)")
		}
		return "claude -p --output-format stream-json --verbose --permission-mode acceptEdits --allowedTools '" + strings.Join(rules, " ") + "'"
	}},
	// Codex: exec --json. It has no list of commands: what it may run is
	// its sandbox. workspace-write cannot commit in a linked worktree (its
	// git dir is in the main repository's .git, which the sandbox keeps
	// read-only, --add-dir or not), so an allow list that names anything
	// (git, orch) needs danger-full-access. Its login shell would reset
	// PATH (and lose orch): allow_login_shell=false keeps orch run's.
	"codex": {Program: "codex", Stream: "codex", Checked: "0.169.0", command: func(allow []string) string {
		sandbox := "danger-full-access"
		if len(allow) == 0 {
			sandbox = "workspace-write"
		}
		return "codex exec --json --skip-git-repo-check --sandbox " + sandbox + " -c allow_login_shell=false -"
	}},
	"aider": {Program: "aider", RateLimit: `(?i)RateLimitError|rate.?limit|\b429\b`, command: func([]string) string {
		return `aider --yes-always --no-pretty --message-file "$ORCH_PROMPT_FILE"`
	}},
	"gemini": {Program: "gemini", RateLimit: `(?i)RESOURCE_EXHAUSTED|quota|rate.?limit|\b429\b`, command: func([]string) string {
		return `gemini --yolo --prompt "$(cat "$ORCH_PROMPT_FILE")"`
	}},
	"opencode": {Program: "opencode", RateLimit: `(?i)usage limit|rate.?limit|\b429\b`, command: func([]string) string {
		return `opencode run "$(cat "$ORCH_PROMPT_FILE")"`
	}},
}

// DefaultAllow is run.allow when config.yaml says none: what the loop
// itself needs (git to commit, orch to submit).
var DefaultAllow = []string{"git", "orch"}

// harnessNames lists the presets, sorted.
func harnessNames() []string {
	var out []string
	for n := range Harnesses {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Resolved is the slot with its harness preset applied: the command (for
// allow) and the rate-limit pattern it runs with.
func (s RunSlot) Resolved(allow []string) RunSlot {
	if h, ok := Harnesses[s.Harness]; ok {
		if s.Cmd == "" {
			s.Cmd = h.Command(allow)
		}
		if s.RateLimit == "" {
			s.RateLimit = h.RateLimit
		}
	}
	return s
}

// Stream is the structured output orch reads from the slot's runs: its
// harness's, when its command is the preset's.
func (s RunSlot) Stream() string {
	if h, ok := Harnesses[s.Harness]; ok && s.Cmd == "" {
		return h.Stream
	}
	return ""
}

// allowRE is what one entry of run.allow may be: a command and its first
// words, as a prefix ("go test", "npm run lint").
var allowRE = lazyregexp.New(`^[A-Za-z0-9_][A-Za-z0-9_./+-]*( [A-Za-z0-9_./+=-]+)*$`)

// defaultRun is run:'s defaults (docs/design.md §7.1).
func defaultRun() Run {
	return Run{TaskTimeout: Duration(45 * time.Minute), StallTimeout: Duration(10 * time.Minute), KillGrace: Duration(10 * time.Second),
		MaxCrashes: 2, PollPRs: Duration(5 * time.Minute), Backoff: Duration(time.Minute), MaxWait: Duration(6 * time.Hour), MaxLog: 16 << 20}
}

// check validates run: (path names config.yaml in messages).
func (r *Run) check(c *Config, path string, data []byte) error {
	problem := func(line int, format string, a ...any) error {
		if line == 0 {
			line = keyLine(data, "run")
		}
		return &taskfile.ParseError{Path: path, Line: line, Msg: "run: " + fmt.Sprintf(format, a...)}
	}
	seen := map[string]bool{}
	for _, list := range []struct {
		key   string
		slots []RunSlot
	}{{"agents", r.Agents}, {"reviewers", r.Reviewers}} {
		for _, s := range list.slots {
			switch {
			case !taskfile.ValidName(s.Name):
				return problem(s.line, "%s: %q is not a valid agent name", list.key, s.Name)
			case seen[s.Name]:
				return problem(s.line, "%s: %s is named twice: each slot is one actor, and distinct names are what hand a locked-out task to a fresh agent", list.key, s.Name)
			case slices.Contains(c.Humans, s.Name):
				return problem(s.line, "%s: %s is in humans too: a slot is an agent", list.key, s.Name)
			case s.Harness != "" && Harnesses[s.Harness].command == nil:
				return problem(s.line, "%s: %s: harness %q is not one of %v", list.key, s.Name, s.Harness, harnessNames())
			case s.Cmd == "" && s.Harness == "":
				return problem(s.line, "%s: %s needs a cmd (run by sh -c in the task's worktree) or a harness (%v)", list.key, s.Name, harnessNames())
			}
			seen[s.Name] = true
			if rs := s.Resolved(r.AllowList()).RateLimit; rs != "" {
				if _, err := regexp.Compile(rs); err != nil {
					return problem(s.line, "%s: %s: rate_limit is not a regular expression: %v", list.key, s.Name, err)
				}
			}
			for _, n := range append(append([]string(nil), s.Roles...), s.Labels...) {
				if !taskfile.ValidName(n) {
					return problem(s.line, "%s: %s: %q is not a valid role or label", list.key, s.Name, n)
				}
			}
		}
	}
	if r.MaxCrashes < 1 {
		return problem(keyLine(data, "max_crashes"), "max_crashes must be at least 1")
	}
	if r.MaxProvisional < 0 {
		return problem(keyLine(data, "max_provisional"), "max_provisional must be 0 (no limit) or more")
	}
	for _, a := range r.Allow {
		if !allowRE().MatchString(a) {
			return problem(keyLine(data, "allow"), "allow: %q is not a command prefix (a command and its first words, like \"go test\")", a)
		}
	}
	if r.MaxLog < 64<<10 {
		return problem(keyLine(data, "max_log"), "max_log must be at least 64KiB (the head and the newest output of a run are kept)")
	}
	if r.MaxWait <= 0 {
		return problem(keyLine(data, "max_wait"), "max_wait must be more than 0")
	}
	return nil
}

// runAgent returns name's slot among run.agents (nil if none).
func (r *Run) runAgent(name string) *RunSlot {
	for i := range r.Agents {
		if r.Agents[i].Name == name {
			return &r.Agents[i]
		}
	}
	return nil
}

// runReviewer returns name's slot among run.reviewers (nil if none).
func (r *Run) runReviewer(name string) *RunSlot {
	for i := range r.Reviewers {
		if r.Reviewers[i].Name == name {
			return &r.Reviewers[i]
		}
	}
	return nil
}
