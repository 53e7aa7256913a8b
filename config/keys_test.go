package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/orch-tool/orch/taskfile"
)

// Every key says what it means: a field without a doc tag would give
// docs/configuration.md and orch help config a blank line.
func TestKeysDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Keys() {
		if k.Meaning == "" {
			t.Errorf("%s: no doc tag on its field", k.Path)
		}
		if k.Type == "" || strings.Contains(k.Type, "struct") {
			t.Errorf("%s: type %q", k.Path, k.Type)
		}
		if seen[k.Path] {
			t.Errorf("%s twice", k.Path)
		}
		seen[k.Path] = true
	}
	for _, want := range []string{"run.task_timeout", "run.stall_timeout", "run.max_crashes", "run.kill_grace", "run.agents[].account", "land.mode", "review.check", "worktree_dir"} {
		if !seen[want] {
			t.Errorf("Keys has no %s", want)
		}
	}
}

// Each key of DefaultYAML (what orch init writes) is a key, and its
// default is the one Keys gives, where Keys gives one value.
func TestDefaultYAMLKeys(t *testing.T) {
	if _, err := Parse("config.yaml", []byte(DefaultYAML)); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(DefaultYAML, "\n") {
		if len(l) > 100 {
			t.Errorf("DefaultYAML line %d is %d characters", i+1, len(l))
		}
		if c := strings.Index(l, "# "); c > 0 && !strings.HasPrefix(strings.TrimSpace(l), "#") && c != 27 {
			t.Errorf("DefaultYAML line %d: its comment starts at column %d, the others at 28: %q", i+1, c+1, l)
		}
	}
}

func TestUnknownKeyDidYouMean(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"run:\n  agent:\n    - {name: a, cmd: x}\n", "config.yaml:2: run.agent is not a key of config.yaml: did you mean run.agents?"},
		{"run:\n  task_timout: 1h\n", "config.yaml:2: run.task_timout is not a key of config.yaml: did you mean run.task_timeout?"},
		{"reveiw:\n  max_rejections: 2\n", "config.yaml:1: reveiw is not a key of config.yaml: did you mean review?"},
		{"land:\n  mod: local\n", "did you mean land.mode?"},
		{"run:\n  agents:\n    - {name: a, cmd: x, harnes: claude}\n", "config.yaml:3: run.agents[].harnes is not a key of config.yaml: did you mean run.agents[].harness?"},
		{"run:\n  zzzzzzzzzz: 1\n", "run.zzzzzzzzzz is not a key of config.yaml (run holds agents, reviewers,"},
		{"run:\n  agents: {name: a}\n", "config.yaml:2: run.agents must be a list of entries: one \"- {name: ..., ...}\" a line, not a mapping"},
		{"review:\n  max_rejections: abc\n", "config.yaml:2: review.max_rejections must be a whole number, not \"abc\""},
		{"land:\n  push: maybe\n", "config.yaml:2: land.push must be true or false, not \"maybe\""},
		{"humans: bob\n", "config.yaml:1: humans must be a list of strings: [a, b] or one \"- item\" a line, not a single value"},
		{"review: 3\n", "config.yaml:1: review must be a mapping of its keys"},
		{"review:\n  max_rejections: [1]\n", "config.yaml:2: review.max_rejections must be an integer, not a list"},
	} {
		_, err := Parse(".orchestrator/config.yaml", []byte(c.yaml))
		if err == nil {
			t.Errorf("%q: no error", c.yaml)
			continue
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%q: %T, want *config.Error", c.yaml, err)
		}
		var pe *taskfile.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: not a ParseError", c.yaml)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
		if strings.Contains(err.Error(), "config.") && !strings.Contains(err.Error(), "config.yaml") {
			t.Errorf("%q: %v names a Go type", c.yaml, err)
		}
	}
}
