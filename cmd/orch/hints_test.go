package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/orch-tool/orch/internal/testgit"
)

// TestAgentHintsNeverLeadAroundARule drives every refusal an agent can meet
// (DESIGN §4a) and checks each hint: none tells the agent to act under
// another name, to give itself a role or a reviewer's place, or to use a
// human's verb. A refused agent is told how to ask (escalate) or what else
// it may do.
func TestAgentHintsNeverLeadAroundARule(t *testing.T) {
	privateGitHome(t)
	t.Setenv("NO_COLOR", "1")
	t.Setenv("ORCH_AGENT", "")
	repo := filepath.Join(t.TempDir(), "repo")
	git := func(dir string, args ...string) string { t.Helper(); return testgit.Git(t, dir, args...) }
	if err := os.MkdirAll(repo, 0o777); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q")
	git(repo, "commit", "-q", "--allow-empty", "-m", "base")

	// orch runs orch in-process, as agent (ORCH_AGENT) or as the git user
	// when agent is "".
	type answer struct {
		code   int
		stdout string
		hint   string
		msg    string
	}
	orch := func(dir, agent string, args ...string) answer {
		t.Helper()
		t.Setenv("ORCH_AGENT", agent)
		var out, errb bytes.Buffer
		code := Main(append([]string{"-C", dir, "--json"}, args...), strings.NewReader(""), &out, &errb)
		a := answer{code: code, stdout: out.String()}
		if code != 0 {
			var env struct {
				Error struct{ Message, Hint string }
			}
			if err := json.Unmarshal(errb.Bytes(), &env); err != nil {
				t.Fatalf("orch %v: stderr is not the JSON error: %q", args, errb.String())
			}
			a.msg, a.hint = env.Error.Message, env.Error.Hint
		}
		return a
	}
	must := func(dir, agent string, args ...string) answer {
		t.Helper()
		a := orch(dir, agent, args...)
		if a.code != 0 {
			t.Fatalf("orch %v as %q: exit %d: %s (hint: %s)", args, agent, a.code, a.msg, a.hint)
		}
		return a
	}
	id := func(a answer) string {
		var v struct{ Task struct{ ID string } }
		if err := json.Unmarshal([]byte(a.stdout), &v); err != nil || v.Task.ID == "" {
			t.Fatalf("no task in %q", a.stdout)
		}
		return v.Task.ID
	}
	commit := func(branch string) {
		t.Helper()
		tree := git(repo, "rev-parse", "refs/heads/"+branch+"^{tree}")
		c := git(repo, "commit-tree", "-p", "refs/heads/"+branch, "-m", "work", tree)
		git(repo, "update-ref", "refs/heads/"+branch, c)
	}

	must(repo, "", "init")
	cfg := "base_branch: main\nreview:\n  reviewers: [lead, agent-a, {name: qa, labels: [tests]}]\nagents:\n" +
		"  - {name: agent-a, roles: [implementer]}\n  - {name: agent-b, roles: [implementer]}\n  - {name: fe, roles: [frontend]}\n"
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o666); err != nil {
		t.Fatal(err)
	}
	must(repo, "", "edit", "config", "--from", cfgFile)

	// The states the refusals need: a task claimed by agent-a (with its
	// worktree), one submitted by agent-a, one rejected (agent-b locked
	// out), one assigned elsewhere, one of another role, one waiting for a
	// dependency, and one blocked by a refusal.
	claimed := id(must(repo, "", "new", "Claimed by a"))
	must(repo, "agent-a", "claim", "--task", claimed)
	wt := filepath.Join(filepath.Dir(repo), "wt-a")
	git(repo, "worktree", "add", "-q", wt, "task/"+claimed+"-claimed-by-a")

	submitted := id(must(repo, "", "new", "Submitted by a"))
	must(repo, "agent-a", "claim", "--task", submitted)
	commit("task/" + submitted + "-submitted-by-a")
	must(repo, "agent-a", "submit", submitted)

	rejected := id(must(repo, "", "new", "Rejected for b"))
	must(repo, "agent-b", "claim", "--task", rejected)
	commit("task/" + rejected + "-rejected-for-b")
	must(repo, "agent-b", "submit", rejected)
	must(repo, "", "reject", rejected, "-m", "again", "--agent", "lead")

	assigned := id(must(repo, "", "new", "For someone", "--assign", "carol"))
	frontend := id(must(repo, "", "new", "Styles", "--role", "frontend"))
	waiting := id(must(repo, "", "new", "Waits", "--depends-on", claimed))

	blocked := id(must(repo, "", "new", "Refused"))
	must(repo, "agent-b", "claim", "--task", blocked)
	refusal := filepath.Join(t.TempDir(), "refusal.json")
	if err := os.WriteFile(refusal, []byte(`{"reason_type": "BLOCKER", "reason_summary": "Keys are in a vault the agent cannot read",
"what_attempted": ["Ran vault read secret/api - permission denied", "Asked for the ops-keys policy in #ops - no answer after 2h"],
"blocking_factor": "vault read secret/api returns permission denied",
"evidence": [{"type": "error_log", "data": "Error reading secret/api: permission denied", "source": "vault CLI"}],
"suggested_alternative": "Grant the ops-keys policy to the agent role, then rerun the rotation"}`), 0o666); err != nil {
		t.Fatal(err)
	}
	if a := orch(repo, "agent-b", "refuse", blocked, "-F", refusal); a.code != 0 {
		t.Fatalf("the refusal was refused: %s (%s)", a.msg, a.hint)
	}

	paths := []struct {
		name  string
		dir   string
		agent string
		args  []string
	}{
		{"another name under ORCH_AGENT", repo, "agent-a", []string{"claim", "--agent", "agent-b"}},
		{"acting in another's worktree", wt, "agent-b", []string{"pause", "-m", "mine now"}},
		{"unlock", repo, "agent-b", []string{"unlock", rejected, "agent-b"}},
		{"requeue", repo, "agent-b", []string{"requeue", rejected}},
		{"decide", repo, "agent-b", []string{"decide", blocked, "accept"}},
		{"archive", repo, "agent-b", []string{"archive", blocked}},
		{"sweep", repo, "agent-b", []string{"sweep"}},
		{"fail another's claim", repo, "agent-b", []string{"fail", claimed, "-m", "no"}},
		{"fail an unclaimed task", repo, "agent-b", []string{"fail", assigned, "-m", "no"}},
		{"edit config", repo, "agent-b", []string{"edit", "config", "--from", cfgFile}},
		{"pause another's claim", repo, "agent-b", []string{"pause", claimed, "-m", "x"}},
		{"submit another's claim", repo, "agent-b", []string{"submit", claimed}},
		{"respond on another's claim", repo, "agent-b", []string{"respond", claimed, "R1.1", "fixed", "-m", "x"}},
		{"refuse another's claim", repo, "agent-b", []string{"refuse", claimed, "-F", refusal}},
		{"widen the role", repo, "agent-b", []string{"claim", "--role", "frontend"}},
		{"claim another role's task", repo, "agent-b", []string{"claim", "--task", frontend}},
		{"claim a locked-out task", repo, "agent-b", []string{"claim", "--task", rejected}},
		{"claim an assigned task", repo, "agent-b", []string{"claim", "--task", assigned}},
		{"claim a waiting task", repo, "agent-b", []string{"claim", "--task", waiting}},
		{"claim a claimed task", repo, "fe", []string{"claim", "--role", "frontend", "--task", claimed}},
		{"nothing to claim", repo, "agent-b", []string{"claim"}},
		{"approve as a non-reviewer", repo, "agent-b", []string{"approve", submitted}},
		{"reject as a non-reviewer", repo, "agent-b", []string{"reject", submitted, "-m", "x"}},
		{"review as a non-reviewer", repo, "agent-b", []string{"review", submitted, "--issue", "HIGH|x"}},
		{"approve own work as a reviewer", repo, "agent-a", []string{"approve", submitted}},
		{"approve outside the review scope", repo, "qa", []string{"approve", submitted}},
		{"reject outside the review scope", repo, "qa", []string{"reject", submitted, "-m", "x"}},
		{"review outside the review scope", repo, "qa", []string{"review", submitted, "--issue", "HIGH|x"}},
		{"an illegal transition", repo, "agent-b", []string{"claim", "--task", submitted}},
		{"approve a claimed task", repo, "lead-bot", []string{"approve", claimed}},
	}
	actors := []string{"agent-a", "agent-b", "fe", "lead", "tester", "carol", "lead-bot", "qa"}
	// --label and "label it": a reviewer outside its scope is not told to
	// bring the task into it.
	forbidden := regexp.MustCompile(`--agent|ORCH_AGENT|reviewers|agents:|roster|--role|--label|label it|orch (unlock|requeue|decide|archive|sweep|edit( config| [A-Z]+-))\b`)
	for _, p := range paths {
		a := orch(p.dir, p.agent, p.args...)
		if a.code == 0 {
			t.Errorf("%s: orch %v as %s succeeded; want a refusal", p.name, p.args, p.agent)
			continue
		}
		if a.hint == "" {
			t.Errorf("%s: no hint (message %q)", p.name, a.msg)
		}
		if m := forbidden.FindString(a.hint); m != "" {
			t.Errorf("%s: the hint leads around a rule (%q): %s", p.name, m, a.hint)
		}
		for _, other := range actors {
			if other != p.agent && regexp.MustCompile(`(^|[^a-z-])`+regexp.QuoteMeta(other)+`($|[^a-z-])`).MatchString(a.hint) {
				t.Errorf("%s: the hint names another actor (%s): %s", p.name, other, a.hint)
			}
		}
		t.Logf("%s: exit %d: %s\n    hint: %s", p.name, a.code, a.msg, a.hint)
	}
}

// privateGitHome gives the test's git and orch a private git home.
func privateGitHome(t *testing.T) {
	t.Helper()
	env, err := testgit.Home(t.TempDir(), "tester", "tester@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}
