package config

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/taskfile"
)

// Config is config.yaml on the state branch.
type Config struct {
	// Format is the repository format the state branch needs (absent: 1).
	// An orch that does not know it reads but never writes (Unknown).
	Format       int      `yaml:"format" json:"format" doc:"the repository format: what every orch that writes here must know; an orch that does not know it reads but never writes" default:"1 (orch init writes 3)"`
	BaseBranch   string   `yaml:"base_branch" json:"base_branch" doc:"task branches start from here (a task may set its own base_branch)" default:"the branch checked out at orch init, else main"`
	BranchPrefix string   `yaml:"branch_prefix" json:"branch_prefix" doc:"task branches are <prefix><id>-<slug>"`
	ClaimTimeout Duration `yaml:"claim_timeout" json:"claim_timeout" doc:"a claim is a lease this long, renewed by orch heartbeat and orch respond; once it runs out the next claim takes the task over"`
	// ClaimArbiter decides a claim across machines (workflow/claimrefs.go):
	// ArbiterClaimRef or ArbiterStateBranch; absent, the format's default
	// (DefaultArbiter).
	ClaimArbiter string `yaml:"claim_arbiter" json:"claim_arbiter" doc:"who decides claim --sync across machines: claim_ref answers once the task's claim ref is won (one push); state_branch once the remote's state branch holds the claim" default:"claim_ref from format 2, else state_branch"`
	// ArchiveAfter is how long a finished task stays among the tasks
	// before it moves to the archive (0: only orch archive moves it).
	ArchiveAfter Duration `yaml:"archive_after" json:"archive_after" doc:"a done, failed or superseded task finished this long ago moves to the archive (show, log, list --all and reopen still find it); 0: only orch archive moves it"`
	IDPrefix     string   `yaml:"id_prefix" json:"id_prefix" doc:"task IDs are <prefix>-xxxxxx"`
	DefaultRole  string   `yaml:"default_role" json:"default_role" doc:"the role of tasks made without --role, and of agents not in the roster"`
	// WorktreeDir holds the tasks' worktrees (relative to the main
	// worktree); empty: beside the main worktree.
	WorktreeDir string  `yaml:"worktree_dir" json:"worktree_dir" doc:"where orch worktree and claim --worktree put task worktrees, relative to the main worktree; empty: beside it, as <repo>-<id>"`
	Review      Review  `yaml:"review" json:"review"`
	Agents      []Agent `yaml:"agents" json:"agents" doc:"the roster: who is an agent, and the roles it claims (each entry name and roles)"`
	// Humans names the people (docs/design.md §5.1); when empty, every actor that
	// is not an agent is a human.
	Humans []string `yaml:"humans" json:"humans" doc:"the people; empty: everyone who is not an agent (ORCH_AGENT set, or in agents)"`
	GitHub GitHub   `yaml:"github" json:"github"`
	// Run is what orch run starts (runconfig.go).
	Run Run `yaml:"run" json:"run"`
	// Land is how approved work reaches the base branch (landconfig.go).
	Land Land `yaml:"land" json:"land"`
}

// Review holds the review and rejection policies.
type Review struct {
	MaxRejections int   `yaml:"max_rejections" json:"max_rejections" doc:"the Nth rejection escalates the task instead"`
	MaxNoProgress int   `yaml:"max_no_progress" json:"max_no_progress" doc:"structured reviews: rounds in a row that resolved no blocking issue before the task escalates"`
	Lockout       *bool `yaml:"lockout" json:"lockout" doc:"the agent whose work was rejected may not claim that task again" default:"true"`
	// Reviewers names who reviews among agents (empty: anyone), each
	// entry a name or a name scoped to roles and labels (see Reviewer).
	Reviewers Reviewers `yaml:"reviewers" json:"reviewers" doc:"empty: anyone may review; else only these agents (humans always may); an entry {name, roles, labels} reviews only tasks of those roles or labels"`
	// Check runs in the task's worktree after a submit, before any
	// reviewer claims it (orch run); red rejects it with the output.
	Check string `yaml:"check" json:"check" doc:"orch run: a command run in the task's worktree after a submit, before any review; red sends the work back (counts toward land.max_failures); empty: none"`
}

// LockoutOn reports whether rejected authors are locked out (default on).
func (r Review) LockoutOn() bool { return r.Lockout == nil || *r.Lockout }

// Agent is one entry of the optional roster.
type Agent struct {
	Name  string   `yaml:"name" json:"name" doc:"the agent's name (its ORCH_AGENT)"`
	Roles []string `yaml:"roles" json:"roles" doc:"the roles of the tasks it claims"`
}

// GitHub configures the read-only PR polling.
type GitHub struct {
	Repo string `yaml:"repo" json:"repo" doc:"owner/name of the GitHub repository for orch pr; empty: ask gh repo view"`
}

// Duration is a time.Duration written as "2h", "90m" or "1d".
type Duration time.Duration

// UnmarshalYAML accepts Go durations plus a "d" suffix for days.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// String is the duration as config.yaml would say it: whole days as "30d".
func (d Duration) String() string {
	v := time.Duration(d)
	if v > 0 && v%(24*time.Hour) == 0 {
		return strconv.Itoa(int(v/(24*time.Hour))) + "d"
	}
	return v.String()
}

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(time.Duration(d).String())), nil
}

var dayRE = lazyregexp.New(`^(\d+)d$`)

// ParseDuration accepts Go durations ("90m", "2h30m") and whole days ("3d").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if m := dayRE().FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (like 90m, 2h or 3d)", s)
	}
	return d, nil
}

// Claim arbiters (claim_arbiter).
const (
	// ArbiterStateBranch: a claim is answered once the remote's state
	// branch holds it; claim refs only spare losers a refetch. Safe beside
	// clones whose orch predates claim refs.
	ArbiterStateBranch = "state_branch"
	// ArbiterClaimRef: a claim is answered once its claim ref is won; the
	// state branch catches up (the same command tries once, the next sync
	// or claim of this clone pushes it). Every clone must honour claim refs.
	ArbiterClaimRef = "claim_ref"
)

// Repository formats (config.yaml's format). A new format is one an older
// orch would get wrong if it wrote to the repository: it must refuse.
const (
	// FormatStateBranch: claims across machines may be decided by the
	// state branch alone (orch before claim refs).
	FormatStateBranch = 1
	// FormatClaimRefs: every clone honours claim refs, so claim_ref is the
	// default arbiter. An orch older than this format does not know the
	// "format" key and refuses config.yaml; one that knows the key and
	// not the value refuses to write (Unknown).
	FormatClaimRefs = 2
	// FormatLanding: every clone knows the approved queue and lands
	// approved work (land:); an older orch would take approved for done.
	FormatLanding = 3
	// KnownFormat is the newest format this orch reads and writes.
	KnownFormat = FormatLanding
)

// Unknown reports whether the repository's format is newer than this orch
// knows: it may read the state branch but must not write to it.
func (c *Config) Unknown() bool { return c.Format > KnownFormat }

// DefaultArbiter is the claim_arbiter of a format when config.yaml does not
// set one.
func DefaultArbiter(format int) string {
	if format >= FormatClaimRefs {
		return ArbiterClaimRef
	}
	return ArbiterStateBranch
}

// DefaultArchiveAfter is archive_after when config.yaml does not set it.
const DefaultArchiveAfter = 30 * 24 * time.Hour

// Default is the configuration of a repository without config.yaml.
func Default() *Config {
	return &Config{
		Format:       FormatStateBranch,
		BaseBranch:   "main",
		BranchPrefix: "task/",
		ClaimTimeout: Duration(2 * time.Hour),
		ClaimArbiter: ArbiterStateBranch,
		ArchiveAfter: Duration(DefaultArchiveAfter),
		IDPrefix:     "T",
		DefaultRole:  "implementer",
		Review:       Review{MaxRejections: 3, MaxNoProgress: 2},
		Run:          defaultRun(),
		Land:         defaultLand(),
	}
}

// DefaultYAML is what `orch init` writes: every setting with its
// default and what it does.
const DefaultYAML = `# orch configuration. This file lives on the state branch; edit it in
# .orchestrator/config.yaml (or with "orch edit config") and orch commits it.
format: 3                  # the repository format: an orch that does not know it never writes
base_branch: main          # task branches start from here
branch_prefix: task/       # task branches are <prefix><id>-<slug>
claim_timeout: 2h          # a claim is a lease this long, renewed by orch heartbeat and respond
claim_arbiter: claim_ref   # claim --sync across machines: answered once the claim ref is won
                           # (one push); state_branch: once the remote's state branch has it
archive_after: 30d         # a done, failed or superseded task this old moves to the archive
                           # (show, log, list --all and reopen still find it); 0: never
id_prefix: T               # task ids are <prefix>-xxxxxx
default_role: implementer  # role of tasks created without --role
worktree_dir: ""           # where orch worktree and claim --worktree put task worktrees
                           # (relative to this repository); empty: beside it, as <repo>-<id>
review:
  max_rejections: 3        # the 3rd rejection escalates instead
  max_no_progress: 2       # structured reviews: rounds in a row that resolved no blocking issue
  lockout: true            # the agent whose work was rejected may not claim that task again
  check: ""                # orch run: run in the task's worktree after a submit, before any review;
                           # red sends it back (counts toward land.max_failures); empty: none
  reviewers: []            # empty: anyone may review; else only these agents (humans always may);
                           # an entry {name: qa, roles: [...], labels: [...]} reviews only tasks
                           # of those roles or labels
agents: []                 # optional roster: {name, roles: [...]}; an agent claims only tasks of
                           # its roles
humans: []                 # optional: the people; empty: everyone not an agent (ORCH_AGENT set,
                           # or in agents) is a human
github:
  repo: ""                 # owner/name; empty: ask "gh repo view"
land:
  mode: local              # approved work lands on base_branch (orch land, orch run); off: approve
                           # means done and a person merges; github: gh pr merge
  strategy: merge          # merge (--no-ff, the commit names the task) | squash | rebase
  check: ""                # run on the merged result before the base branch moves; empty: none
  check_timeout: 20m       # the longest the check may run
  batch: 1                 # > 1: merge up to N in order, check once, bisect on red
  max_failures: 3          # landing failures (conflict, red check) before the task escalates
  push: false              # true: the push of the base branch to origin is the commit point
  delete_branch: true      # a landed task's branch (and its clean worktree) goes
`

var cfgLineRE = lazyregexp.New(`line (\d+): (.*)`)

// Error is a mistake in config.yaml, at a line of it: a person's to fix,
// as a usage error is.
type Error struct{ *taskfile.ParseError }

// Unwrap gives the ParseError, which names the file and the line.
func (e *Error) Unwrap() error { return e.ParseError }

// Parse reads config.yaml. Unknown keys are errors: a misspelt setting
// silently ignored is worse than a refusal. Every error is an *Error.
func Parse(path string, data []byte) (*Config, error) {
	c, err := parse(path, data)
	var pe *taskfile.ParseError
	if err != nil && errors.As(err, &pe) {
		return nil, &Error{pe}
	}
	return c, err
}

func parse(path string, data []byte) (*Config, error) {
	cfg := Default()
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, nil
	}
	var head struct {
		Format *int `yaml:"format"`
	}
	if err := yaml.Unmarshal(data, &head); err == nil && head.Format != nil {
		cfg.Format = *head.Format
	}
	if cfg.Unknown() {
		// A newer orch's file: read what this orch knows of it, leniently
		// (its new keys are not mistakes), for reads only.
		_ = yaml.Unmarshal(data, cfg)
		if cfg.ClaimArbiter == "" {
			cfg.ClaimArbiter = DefaultArbiter(cfg.Format)
		}
		return cfg, nil
	}
	if err := checkKeys(path, data); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var raw Config
	raw = *cfg
	raw.ClaimArbiter = ""
	if err := dec.Decode(&raw); err != nil {
		msg := err.Error()
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg = te.Errors[0]
		}
		msg = strings.TrimPrefix(msg, "yaml: ")
		line := 0
		if m := cfgLineRE().FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		return nil, &taskfile.ParseError{Path: path, Line: line, Msg: msg}
	}
	c := &raw
	problem := func(key, format string, a ...any) error {
		return &taskfile.ParseError{Path: path, Line: keyLine(data, key), Msg: key + ": " + fmt.Sprintf(format, a...)}
	}
	if c.Format < FormatStateBranch {
		return nil, problem("format", "%d is not a repository format (1 or %d)", c.Format, KnownFormat)
	}
	if c.ClaimArbiter == "" {
		c.ClaimArbiter = DefaultArbiter(c.Format)
	}
	if c.BaseBranch == "" || !taskfile.ValidBranch(c.BaseBranch) {
		return nil, problem("base_branch", "%q is not a valid branch name", c.BaseBranch)
	}
	if c.BranchPrefix != "" && !taskfile.ValidBranch(strings.TrimSuffix(c.BranchPrefix, "/")+"/x") {
		return nil, problem("branch_prefix", "%q cannot start a branch name", c.BranchPrefix)
	}
	if !idPrefixRE().MatchString(c.IDPrefix) {
		return nil, problem("id_prefix", "%q must be letters and digits, starting with a letter", c.IDPrefix)
	}
	if c.ClaimArbiter != ArbiterStateBranch && c.ClaimArbiter != ArbiterClaimRef {
		return nil, problem("claim_arbiter", "%q is not %s or %s", c.ClaimArbiter, ArbiterStateBranch, ArbiterClaimRef)
	}
	if c.Review.MaxRejections < 1 {
		return nil, problem("max_rejections", "must be at least 1")
	}
	if c.Review.MaxNoProgress < 1 {
		return nil, problem("max_no_progress", "must be at least 1")
	}
	if err := c.Review.Reviewers.check(path); err != nil {
		return nil, err
	}
	for _, a := range c.Agents {
		if !taskfile.ValidName(a.Name) {
			return nil, problem("agents", "%q is not a valid agent name", a.Name)
		}
	}
	if err := c.Run.check(c, path, data); err != nil {
		return nil, err
	}
	if err := c.Land.check(c, path, data); err != nil {
		return nil, err
	}
	for _, h := range c.Humans {
		if !taskfile.ValidPersonName(h) {
			return nil, problem("humans", "%q is not a valid name", h)
		}
		if c.InRoster(h) {
			return nil, problem("humans", "%q is in agents too: an actor is one or the other", h)
		}
	}
	return c, nil
}

// keyLine finds the line of "key:" in a YAML text, for messages.
func keyLine(data []byte, key string) int {
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), key+":") {
			return i + 1
		}
	}
	return 0
}

// RolesOf returns the roles of an agent in the roster, or of a run.agents
// slot (nil if not listed, or listed without roles).
func (c *Config) RolesOf(agent string) []string {
	for _, a := range c.Agents {
		if a.Name == agent {
			return a.Roles
		}
	}
	if s := c.Run.runAgent(agent); s != nil {
		return s.Roles
	}
	return nil
}

// Roster is every agent capable of work, for lockout and deadlock: the
// agents: roster and orch run's agents (each slot an actor, docs/design.md §7.1).
func (c *Config) Roster() []Agent {
	out := append([]Agent(nil), c.Agents...)
	for _, s := range c.Run.Agents {
		if !slices.ContainsFunc(out, func(a Agent) bool { return a.Name == s.Name }) {
			out = append(out, Agent{Name: s.Name, Roles: s.Roles})
		}
	}
	return out
}

// ReviewerEntry is name's entry among the reviewers: review.reviewers, or
// run.reviewers (whose roles and labels scope it the same way); nil when
// name is neither.
func (c *Config) ReviewerEntry(name string) *Reviewer {
	if r := c.Review.Reviewers.Find(name); r != nil {
		return r
	}
	if s := c.Run.runReviewer(name); s != nil {
		return &Reviewer{Name: s.Name, Roles: s.Roles, Labels: s.Labels}
	}
	return nil
}

// InRoster reports whether agents: lists name.
func (c *Config) InRoster(name string) bool {
	for _, a := range c.Agents {
		if a.Name == name {
			return true
		}
	}
	return c.Run.runAgent(name) != nil || c.Run.runReviewer(name) != nil
}

// IsRunSlot reports whether name is a slot of run: (an agent or a
// reviewer orch run starts).
func (c *Config) IsRunSlot(name string) bool {
	return c.Run.runAgent(name) != nil || c.Run.runReviewer(name) != nil
}

// IsReviewer reports whether name may review under the config (some
// tasks, when its entry is scoped: see Reviewer.Covers).
func (c *Config) IsReviewer(name string) bool {
	return len(c.Review.Reviewers) == 0 || c.ReviewerEntry(name) != nil
}

// idPrefixRE is what id_prefix may be (compiled once, when first used).
var idPrefixRE = lazyregexp.New(`^[A-Za-z][A-Za-z0-9]{0,15}$`)
