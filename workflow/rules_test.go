package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// The rules of the loop, as package tests on a real temporary repository
// (no process, no CLI): claim order, lockout and unlock, escalation by
// count, by deadlock and by lack of progress, and authority.

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
	openAs(t, dir, "tester", false).Close() // a human commits the config
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
		doctorGit(t, dir, "update-ref", "refs/heads/"+c.Branch, doctorGit(t, dir, "commit-tree", "-p", c.Branch, "-m", "work by "+agent, c.Branch+"^{tree}"))
		if _, err := e.Submit(id, SubmitOptions{}); err != nil {
			t.Fatalf("%s submits %s: %v", agent, id, err)
		}
	})
}

func reject(t *testing.T, dir, id string) *Result {
	t.Helper()
	var res *Result
	as(t, dir, "lead", false, func(e *Engine) {
		var err error
		if res, err = e.Reject(id, "Not yet: the start does not snap."); err != nil {
			t.Fatal(err)
		}
	})
	return res
}

func ruleOf(err error) string {
	var re *RuleError
	if errors.As(err, &re) {
		return re.Rule
	}
	return ""
}

func TestRulesClaimOrder(t *testing.T) {
	dir := rulesRepo(t, rulesTeam)
	old := mustNew(t, dir, NewTask{Title: "Old P2"})
	urgent := mustNew(t, dir, NewTask{Title: "New P0", Priority: "P0"})
	later := mustNew(t, dir, NewTask{Title: "Newer P2"})
	rejected := mustNew(t, dir, NewTask{Title: "Rejected"})
	work(t, dir, "agent-a", rejected)
	reject(t, dir, rejected)
	paused := mustNew(t, dir, NewTask{Title: "Paused"})
	as(t, dir, "agent-c", true, func(e *Engine) {
		if _, err := e.Claim(ClaimOptions{Task: paused}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Pause(paused, "Half done."); err != nil {
			t.Fatal(err)
		}
	})
	// rejected, then needs_continuation, then incoming by priority, then
	// by age.
	for _, want := range []string{rejected, paused, urgent, old, later} {
		as(t, dir, "agent-b", true, func(e *Engine) {
			c, err := e.Claim(ClaimOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Task.Task.ID; got != want {
				t.Fatalf("claimed %s, want %s", got, want)
			}
		})
	}
	as(t, dir, "agent-b", true, func(e *Engine) {
		var none *NothingToClaimError
		if _, err := e.Claim(ClaimOptions{}); !errors.As(err, &none) {
			t.Fatalf("with nothing left: %v", err)
		}
	})
}

func TestRulesLockoutAndUnlock(t *testing.T) {
	dir := rulesRepo(t, rulesTeam)
	id := mustNew(t, dir, NewTask{Title: "Snap"})
	work(t, dir, "agent-a", id)
	if res := reject(t, dir, id); res.To != taskfile.Rejected || !contains(res.Task.Task.LockedOut, "agent-a") {
		t.Fatalf("after the rejection: %s, locked out %v", res.To, res.Task.Task.LockedOut)
	}
	as(t, dir, "agent-a", true, func(e *Engine) {
		if _, err := e.Claim(ClaimOptions{Task: id}); ruleOf(err) != "lockout" {
			t.Fatalf("the author claims again: %v", err)
		}
		var none *NothingToClaimError
		if _, err := e.Claim(ClaimOptions{}); !errors.As(err, &none) {
			t.Fatalf("the author's next claim: %v", err)
		}
		if _, err := e.Unlock(id, "agent-a"); ruleOf(err) != "authority" {
			t.Fatalf("an agent unlocks itself: %v", err)
		}
	})
	as(t, dir, "lead", false, func(e *Engine) {
		if _, err := e.Unlock(id, "agent-a"); err != nil {
			t.Fatal(err)
		}
	})
	as(t, dir, "agent-a", true, func(e *Engine) {
		if _, err := e.Claim(ClaimOptions{Task: id}); err != nil {
			t.Fatalf("after the unlock: %v", err)
		}
	})
}

func TestRulesEscalateByCount(t *testing.T) {
	dir := rulesRepo(t, rulesTeam)
	id := mustNew(t, dir, NewTask{Title: "Snap"})
	for i, agent := range []string{"agent-a", "agent-b", "agent-c"} {
		work(t, dir, agent, id)
		res := reject(t, dir, id)
		want := taskfile.Rejected
		if i == 2 {
			want = taskfile.Escalated // review.max_rejections: 3
		}
		if res.To != want || res.Task.Task.RejectionCount != i+1 {
			t.Fatalf("rejection %d: %s with count %d, want %s", i+1, res.To, res.Task.Task.RejectionCount, want)
		}
	}
}

func TestRulesEscalateByDeadlock(t *testing.T) {
	dir := rulesRepo(t, "base_branch: main\nagents:\n  - {name: agent-a, roles: [implementer]}\n  - {name: agent-b, roles: [implementer]}\nhumans: [lead]\n")
	id := mustNew(t, dir, NewTask{Title: "Snap"})
	work(t, dir, "agent-a", id)
	if res := reject(t, dir, id); res.To != taskfile.Rejected {
		t.Fatalf("first rejection: %s", res.To)
	}
	work(t, dir, "agent-b", id)
	// Every implementer in the roster is now locked out: a human decides.
	if res := reject(t, dir, id); res.To != taskfile.Escalated {
		t.Fatalf("second rejection: %s, want escalated", res.To)
	}
}

func TestRulesEscalateByNoProgress(t *testing.T) {
	dir := rulesRepo(t, strings.Replace(rulesTeam, "max_rejections: 3", "max_rejections: 10", 1)+"  lockout: false\n")
	id := mustNew(t, dir, NewTask{Title: "Cache"})
	work(t, dir, "agent-a", id)
	review := func(in *ReviewInput) *ReviewResult {
		t.Helper()
		var res *ReviewResult
		as(t, dir, "lead", false, func(e *Engine) {
			var err error
			if res, err = e.Review(id, in); err != nil {
				t.Fatal(err)
			}
		})
		return res
	}
	answer := func() {
		t.Helper()
		as(t, dir, "agent-a", true, func(e *Engine) {
			if _, err := e.Claim(ClaimOptions{Task: id}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Respond(id, "R1.1", "fixed", "Invalidated on every write path.", ""); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Pause(id, "answered"); err != nil {
				t.Fatal(err)
			}
		})
		work(t, dir, "agent-a", id)
	}
	if r := review(&ReviewInput{Issues: []ReviewIssue{{Severity: "HIGH", Title: "Stale entries after update"}}}); r.To != taskfile.Rejected || r.NoProgressCount != 0 {
		t.Fatalf("round 1: %s, no progress %d", r.To, r.NoProgressCount)
	}
	answer()
	if r := review(&ReviewInput{Reopen: []string{"R1.1"}}); r.To != taskfile.Rejected || r.NoProgressCount != 1 {
		t.Fatalf("round 2: %s, no progress %d", r.To, r.NoProgressCount)
	}
	answer()
	if r := review(&ReviewInput{Reopen: []string{"R1.1"}}); r.To != taskfile.Escalated || r.NoProgressCount != 2 || r.Escalated != "no_progress" {
		t.Fatalf("round 3: %s, no progress %d, escalated %q", r.To, r.NoProgressCount, r.Escalated)
	}
}

func TestRulesAuthority(t *testing.T) {
	dir := rulesRepo(t, rulesTeam)
	id := mustNew(t, dir, NewTask{Title: "Snap"})
	work(t, dir, "agent-a", id)
	as(t, dir, "agent-a", true, func(e *Engine) {
		if _, err := e.Approve(id, ""); ruleOf(err) != "self_review" {
			t.Errorf("the author approves its own work: %v", err)
		}
	})
	as(t, dir, "agent-a", true, func(e *Engine) {
		if _, err := e.Requeue(id, ""); ruleOf(err) != "authority" {
			t.Errorf("an agent requeues: %v", err)
		}
	})
	as(t, dir, "agent-b", true, func(e *Engine) {
		if _, err := e.New(NewTask{Title: "x"}); err != nil {
			t.Errorf("an agent files a task: %v", err) // new is anyone's
		}
	})
	// Refused attempts are recorded for the lead.
	n := 0
	for _, ev := range events(t, dir) {
		if ev.Action == ActionAuthorityRefused {
			n++
		}
	}
	if n < 2 {
		t.Errorf("%d authority.refused events, want 2 or more", n)
	}
	as(t, dir, "lead", false, func(e *Engine) {
		if _, err := e.Approve(id, "Good."); err != nil {
			t.Fatalf("a human approves: %v", err)
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
