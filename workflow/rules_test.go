package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/testgit"
)

// Helpers for package tests on a real temporary repository (no process,
// no CLI), and the rules that only a repository has: claim refs. The rules
// of the loop themselves (claim order, eligibility, lockout, deadlock, the
// three escalations, authority) are the rule suite, rule_suite_test.go.

const rulesTeam = `base_branch: main
agents:
  - {name: agent-a, roles: [implementer]}
  - {name: agent-b, roles: [implementer]}
  - {name: agent-c, roles: [implementer]}
humans: [lead]
review:
  max_rejections: 3
  max_no_progress: 2
`

// rulesRepo is a repository with orch set up under config and no task.
func rulesRepo(t *testing.T, config string) string {
	t.Helper()
	dir, _ := doctorRepo(t)
	// doctorRepo's two tasks are archived out of the way: failed, then
	// archived, by a human.
	e := openAs(t, dir, "tester", false)
	for _, s := range e.Store.Summaries() {
		if _, err := e.Fail(s.Task.ID, "not part of this test"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Archive(s.Task.ID); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	if err := os.WriteFile(filepath.Join(dir, ".orchestrator", "config.yaml"), []byte(config), 0o666); err != nil {
		t.Fatal(err)
	}
	openCheck(t, dir, "tester").Close() // a human commits the config
	return dir
}

// as runs fn with an engine opened as name (an agent when agent is set).
func as(t *testing.T, dir, name string, agent bool, fn func(e *Engine)) {
	t.Helper()
	e := openAs(t, dir, name, agent)
	defer e.Close()
	fn(e)
}

func mustNew(t *testing.T, dir string, nt NewTask) string {
	t.Helper()
	var id string
	as(t, dir, "lead", false, func(e *Engine) {
		r, err := e.New(nt)
		if err != nil {
			t.Fatal(err)
		}
		id = r.Task.Task.ID
	})
	return id
}

// work claims id as agent, commits on its branch and submits.
func work(t *testing.T, dir, agent, id string) {
	t.Helper()
	as(t, dir, agent, true, func(e *Engine) {
		c, err := e.Claim(ClaimOptions{Task: id})
		if err != nil {
			t.Fatalf("%s claims %s: %v", agent, id, err)
		}
		testgit.Git(t, dir, "update-ref", "refs/heads/"+c.Branch, testgit.Git(t, dir, "commit-tree", "-p", c.Branch, "-m", "work by "+agent, c.Branch+"^{tree}"))
		if _, err := e.Submit(id, SubmitOptions{}); err != nil {
			t.Fatalf("%s submits %s: %v", agent, id, err)
		}
	})
}

func ruleOf(err error) string {
	var re *RuleError
	if errors.As(err, &re) {
		return re.Rule
	}
	return ""
}

// TestRulesAgentFilesTask: new is anyone's, an agent's too (the rule
// suite's verbs are those of tasks that exist).
func TestRulesAgentFilesTask(t *testing.T) {
	dir := rulesRepo(t, rulesTeam)
	as(t, dir, "agent-b", true, func(e *Engine) {
		if _, err := e.New(NewTask{Title: "x", Priority: "P0"}); err != nil {
			t.Errorf("an agent files a task: %v", err)
		}
	})
}

// TestRulesRemoteClaims: a claim ref the state branch does not hold yet
// makes the task taken until its lease ends; one the state holds leaves the
// rules to the state; one whose task moved on is stale.
func TestRulesRemoteClaims(t *testing.T) {
	dir := rulesRepo(t, rulesTeam)
	a := mustNew(t, dir, NewTask{Title: "Pending elsewhere"})
	b := mustNew(t, dir, NewTask{Title: "Free"})
	now := time.Now().UTC()
	as(t, dir, "agent-a", true, func(e *Engine) {
		pending := &remoteClaim{ID: a, By: "agent-b", Attempt: 1, Until: now.Add(time.Hour)}
		e.remoteClaims = map[string]*remoteClaim{a: pending}
		if got := e.claimState(pending); got != "pending" {
			t.Errorf("claimState = %s, want pending", got)
		}
		_, err := e.Claim(ClaimOptions{Task: a})
		if ruleOf(err) != "claimed" || !strings.Contains(err.Error(), "agent-b on the remote") {
			t.Fatalf("claim of a task with a pending remote claim: %v, want rule claimed naming agent-b", err)
		}
		c, err := e.Claim(ClaimOptions{})
		if err != nil || c.Task.Task.ID != b {
			t.Fatalf("next claim = %v, %v; want %s (the other task)", c, err, b)
		}
		// The claim commit carries what other clones read from its ref.
		cm, err := e.Store.ReadCommit(c.Commit)
		if err != nil {
			t.Fatal(err)
		}
		if tr := gitstore.ParseTrailers(cm.Message); tr.Get("Orch-Attempt") != "1" || tr.Get("Orch-Lease-Until") == "" {
			t.Errorf("claim trailers = %v, want Orch-Attempt 1 and Orch-Lease-Until", tr)
		}
		held := &remoteClaim{ID: b, By: "agent-a", Attempt: 1, Until: now.Add(time.Hour)}
		if got := e.claimState(held); got != "held" {
			t.Errorf("claimState of this claim = %s, want held", got)
		}
		// A lease that ran out: the task is claimable again.
		pending.Until = now.Add(-time.Second)
		if _, err := e.Claim(ClaimOptions{Task: a}); err != nil {
			t.Fatalf("claim after the remote lease ran out: %v", err)
		}
		if got := e.claimState(pending); got != "ended" {
			t.Errorf("claimState of agent-b's claim after agent-a's = %s, want ended", got)
		}
		if stale := e.staleClaims(); len(stale) != 1 {
			t.Errorf("staleClaims = %v, want agent-b's only", stale)
		}
	})
}
