package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/orch-tool/orch/taskfile"
)

// Land is config.yaml's land: section: how approved work reaches the base
// branch. Mode off keeps approval the end (a person merges); local lands
// it here, through git's own merge and the check; github merges the task's
// pull request with gh.
type Land struct {
	Mode     string `yaml:"mode" json:"mode" doc:"off: approval is the end and a person merges; local: approved work lands on base_branch (orch land, orch run); github: gh pr merge" default:"off (orch init writes local)"`
	Strategy string `yaml:"strategy" json:"strategy" doc:"merge (--no-ff, the commit names the task), squash or rebase"`
	// Check runs on the merged result, in a scratch worktree, before the
	// base branch moves ("" : no check), for at most CheckTimeout.
	Check        string   `yaml:"check" json:"check" doc:"a command run on the merged result, in a scratch worktree, before the base branch moves; empty: none"`
	CheckTimeout Duration `yaml:"check_timeout" json:"check_timeout" doc:"the longest land.check may run"`
	// Batch > 1 merges up to that many approved tasks onto one candidate,
	// checks it once, and bisects on red.
	Batch int `yaml:"batch" json:"batch" doc:"> 1: merge up to that many approved tasks in order, check once, bisect on red"`
	// MaxFailures landing failures (conflicts, red checks, review.check
	// failures) escalate the task.
	MaxFailures int `yaml:"max_failures" json:"max_failures" doc:"landing failures (a conflict, a red check, a red review.check) before the task escalates"`
	// Push: the push of the base branch to the remote is the commit point
	// (orch run --sync implies it).
	Push         bool  `yaml:"push" json:"push" doc:"true: the push of the base branch to origin is the commit point (orch run --sync implies it)"`
	DeleteBranch *bool `yaml:"delete_branch" json:"delete_branch" doc:"a landed task's branch (and its clean worktree) is deleted" default:"true"`
}

// Landing modes and strategies.
const (
	LandOff    = "off"
	LandLocal  = "local"
	LandGitHub = "github"

	StrategyMerge  = "merge"
	StrategySquash = "squash"
	StrategyRebase = "rebase"
)

// On reports whether approval leads to landing (approved, then done once
// landed) rather than straight to done.
func (l Land) On() bool { return l.Mode == LandLocal || l.Mode == LandGitHub }

// DeletesBranch reports whether a landed task's branch is deleted
// (default yes).
func (l Land) DeletesBranch() bool { return l.DeleteBranch == nil || *l.DeleteBranch }

func defaultLand() Land {
	return Land{Mode: LandOff, Strategy: StrategyMerge, CheckTimeout: Duration(20 * time.Minute), Batch: 1, MaxFailures: 3}
}

// check validates land: (and review.check, which counts toward
// land.max_failures).
func (l *Land) check(c *Config, path string, data []byte) error {
	problem := func(key, format string, a ...any) error {
		return &taskfile.ParseError{Path: path, Line: keyLine(data, key), Msg: "land: " + key + ": " + fmt.Sprintf(format, a...)}
	}
	switch {
	case !slices.Contains([]string{LandOff, LandLocal, LandGitHub}, l.Mode):
		return problem("mode", "%q is not off, local or github", l.Mode)
	case !slices.Contains([]string{StrategyMerge, StrategySquash, StrategyRebase}, l.Strategy):
		return problem("strategy", "%q is not merge, squash or rebase", l.Strategy)
	case l.Batch < 1:
		return problem("batch", "must be at least 1")
	case l.MaxFailures < 1:
		return problem("max_failures", "must be at least 1")
	case l.CheckTimeout <= 0:
		return problem("check_timeout", "must be more than 0")
	case l.On() && c.Format < FormatLanding:
		return problem("mode", "%s needs format: %d (an orch that does not know landing would take approved work for done); set format: %d too, once every clone runs an orch that knows it", l.Mode, FormatLanding, FormatLanding)
	}
	return nil
}
