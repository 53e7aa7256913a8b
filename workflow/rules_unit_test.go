package workflow

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
)

// The rules of the loop as unit tests: an Engine with no store and no
// repository, reading its tasks from memIndex (a TaskIndex in memory).
// rules_test.go runs the same rules through whole transitions on real
// temporary repositories.

// memIndex is a TaskIndex over task files held in memory.
type memIndex struct {
	byID   map[string]*gitstore.Summary
	order  []string         // IDs as added
	broken map[string]error // path -> a hand edit that does not parse
}

func (m *memIndex) SummaryByID(id string) *gitstore.Summary { return m.byID[id] }

func (m *memIndex) QueueByID(id string) (taskfile.Queue, bool) {
	if s := m.byID[id]; s != nil {
		return s.Task.Queue, true
	}
	return "", false
}

func (m *memIndex) EachSummaryWhile(fn func(*gitstore.Summary) bool) {
	for _, id := range m.order {
		if !fn(m.byID[id]) {
			return
		}
	}
}

func (m *memIndex) EachSummaryHeaderIn(queues map[taskfile.Queue]bool, fn func(*gitstore.SummaryHeader)) {
	for _, id := range m.order {
		if s := m.byID[id]; len(queues) == 0 || queues[s.Task.Queue] {
			fn(statecache.HeaderOf(s))
		}
	}
}

func (m *memIndex) BrokenFile(path string) error               { return m.broken[path] }
func (m *memIndex) Conflicted(path string) []taskfile.Conflict { return nil }
func (m *memIndex) ReadRef(string) (plumbing.Hash, error)      { return plumbing.ZeroHash, nil }

var unitNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// unitTask is one task file: its ID, and frontmatter lines beyond id and
// title (queue defaults to incoming).
type unitTask struct {
	id, fm string
}

// unitRules is an Engine for actor over tasks, with config.yaml text cfg
// ("" for the defaults), and the tasks by ID as parsed files.
func unitRules(t *testing.T, actor string, kind ActorKind, cfg string, tasks ...unitTask) (*Engine, map[string]*Task) {
	t.Helper()
	c := DefaultConfig()
	if cfg != "" {
		var err error
		if c, err = ParseConfig("config.yaml", []byte(cfg)); err != nil {
			t.Fatal(err)
		}
	}
	idx := &memIndex{byID: map[string]*gitstore.Summary{}, broken: map[string]error{}}
	files := map[string]*Task{}
	for _, tk := range tasks {
		fm := tk.fm
		if !strings.Contains(fm, "queue:") {
			fm += "\nqueue: incoming"
		}
		if !strings.Contains(fm, "created:") {
			fm += "\ncreated: 2026-11-01T00:00:00Z"
		}
		src := fmt.Sprintf("---\nid: %s\ntitle: Task %s\n%s\n---\n# Task %s\n\nDo it.\n", tk.id, tk.id, strings.TrimSpace(fm), tk.id)
		path := "tasks/" + tk.id + ".md"
		f, err := taskfile.Parse(path, []byte(src))
		if err != nil {
			t.Fatalf("%s: %v\n%s", tk.id, err, src)
		}
		s := &gitstore.Summary{Path: path, Task: f.Task}
		idx.byID[tk.id], idx.order = s, append(idx.order, tk.id)
		files[tk.id] = &Task{Summary: s, File: f}
	}
	e := &Engine{Tasks: idx, Actor: actor, Kind: kind, Config: c, Now: func() time.Time { return unitNow }}
	return e, files
}

func TestUnitClaimOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tasks []unitTask
		want  string
	}{
		{"rejected first, whatever the priority", []unitTask{
			{"T-inc", "queue: incoming\npriority: P0"},
			{"T-cont", "queue: needs_continuation\npriority: P0"},
			{"T-rej", "queue: rejected\npriority: P3"},
		}, "T-rej"},
		{"needs_continuation before incoming", []unitTask{
			{"T-inc", "queue: incoming\npriority: P0"},
			{"T-cont", "queue: needs_continuation\npriority: P3"},
		}, "T-cont"},
		{"within a queue the higher priority", []unitTask{
			{"T-p2", "priority: P2"},
			{"T-p1", "priority: P1"},
		}, "T-p1"},
		{"within a priority the older", []unitTask{
			{"T-new", "created: 2026-11-03T00:00:00Z"},
			{"T-old", "created: 2026-11-02T00:00:00Z"},
		}, "T-old"},
		{"done, claimed and provisional are not claimable", []unitTask{
			{"T-done", "queue: done"},
			{"T-prov", "queue: provisional"},
			{"T-held", "queue: claimed\nclaimed_by: agent-b\nclaimed_at: 2026-11-25T11:00:00Z"},
			{"T-last", "priority: P3"},
		}, "T-last"},
		{"a claim whose lease ran out is claimable again", []unitTask{
			{"T-held", "queue: claimed\nclaimed_by: agent-b\nclaimed_at: 2026-11-25T08:00:00Z"},
			{"T-inc", "priority: P0"},
		}, "T-held"},
		{"waiting for a dependency is passed over", []unitTask{
			{"T-dep", "priority: P0\ndepends_on: [T-base]"},
			{"T-base", "queue: claimed\nclaimed_by: agent-b\nclaimed_at: 2026-11-25T11:00:00Z"},
			{"T-free", "priority: P3"},
		}, "T-free"},
		{"a finished dependency does not hold it", []unitTask{
			{"T-dep", "priority: P0\ndepends_on: [T-base]"},
			{"T-base", "queue: done"},
			{"T-free", "priority: P3"},
		}, "T-dep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := unitRules(t, "agent-a", KindAgent, "", tc.tasks...)
			got, reasons := e.nextClaimable([]string{"implementer"})
			if got == nil {
				t.Fatalf("nothing claimable: %v", reasons)
			}
			if got.Task.ID != tc.want {
				t.Errorf("claims %s, want %s", got.Task.ID, tc.want)
			}
		})
	}
}

func TestUnitEligibility(t *testing.T) {
	e, files := unitRules(t, "agent-a", KindAgent, "",
		unitTask{"T-role", "role: reviewer"},
		unitTask{"T-assigned", "assigned_to: agent-b"},
		unitTask{"T-mine", "assigned_to: agent-a"},
		unitTask{"T-locked", "queue: rejected\nlocked_out: [agent-a]"},
		unitTask{"T-deps", "depends_on: [T-mine]"},
		unitTask{"T-gone", "depends_on: [T-nowhere]"},
		unitTask{"T-held", "queue: claimed\nclaimed_by: agent-b\nclaimed_at: 2026-11-25T11:00:00Z"},
		unitTask{"T-own", "queue: claimed\nclaimed_by: agent-a\nclaimed_at: 2026-11-25T11:00:00Z"},
		unitTask{"T-done", "queue: done"},
		unitTask{"T-broken", ""},
	)
	e.Tasks.(*memIndex).broken["tasks/T-broken.md"] = errors.New("line 3: bad YAML")
	for id, want := range map[string]string{
		"T-role": "role", "T-assigned": "assigned", "T-mine": "", "T-locked": "lockout",
		"T-deps": "dependencies", "T-gone": "dependencies", "T-held": "claimed", "T-own": "claimed",
		"T-done": "queue", "T-broken": "hand_edit",
	} {
		if rule, msg := e.whyNot(files[id].Summary, []string{"implementer"}); rule != want {
			t.Errorf("%s: rule %q (%s), want %q", id, rule, msg, want)
		}
	}
	// Nothing left for this agent: every reason counted, the claims in use
	// not among them.
	delete(e.Tasks.(*memIndex).byID, "T-mine")
	e.Tasks.(*memIndex).order = []string{"T-role", "T-assigned", "T-locked", "T-held"}
	if got, reasons := e.nextClaimable([]string{"implementer"}); got != nil || strings.Join(reasons, "; ") != "1 assigned to someone else; 1 you are locked out; 1 for another role" {
		t.Errorf("claims %v, reasons %q", got, reasons)
	}
}

// rejectAs rejects files[id] as the engine's actor and returns the change.
func rejectAs(t *testing.T, e *Engine, tk *Task) *change {
	t.Helper()
	c, err := e.rejectChange(tk, Rejection{Sources: []taskfile.Source{{From: e.Actor, Time: unitNow, Text: "Not yet."}}, Summary: "Not yet."})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUnitLockoutAndEscalationByCount(t *testing.T) {
	// A roster of four implementers, so that no lockout here deadlocks.
	const team = "agents:\n  - {name: agent-a, roles: [implementer]}\n  - {name: agent-b, roles: [implementer]}\n  - {name: agent-c, roles: [implementer]}\n  - {name: agent-d, roles: [implementer]}\n"
	const cfg = team + "review:\n  max_rejections: 3\n"
	for _, tc := range []struct {
		name       string
		fm         string
		to         taskfile.Queue
		locked     []string
		escalation string
	}{
		{"the author is locked out", "queue: provisional\nsubmitted_by: agent-a\nworked_by: [agent-a]", taskfile.Rejected, []string{"agent-a"}, ""},
		{"a claimant who never submitted is the author", "queue: claimed\nclaimed_by: agent-b\nclaimed_at: 2026-11-25T11:00:00Z", taskfile.Rejected, []string{"agent-b"}, ""},
		{"lockouts add up", "queue: provisional\nsubmitted_by: agent-b\nlocked_out: [agent-a]\nrejection_count: 1", taskfile.Rejected, []string{"agent-a", "agent-b"}, ""},
		{"the third rejection escalates", "queue: provisional\nsubmitted_by: agent-c\nrejection_count: 2\nlocked_out: [agent-a, agent-b]", taskfile.Escalated, []string{"agent-a", "agent-b", "agent-c"}, "max_rejections"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, files := unitRules(t, "lead", KindHuman, cfg, unitTask{"T-1", tc.fm})
			c := rejectAs(t, e, files["T-1"])
			if c.to != tc.to {
				t.Errorf("to %s, want %s", c.to, tc.to)
			}
			if got := c.file.Task.LockedOut; strings.Join(got, ",") != strings.Join(tc.locked, ",") {
				t.Errorf("locked_out %v, want %v", got, tc.locked)
			}
			if got := escalationReason(c.data); got != tc.escalation {
				t.Errorf("escalated %q, want %q", got, tc.escalation)
			}
			if tc.escalation != "" && len(c.extra) != 1 {
				t.Errorf("an escalation without a message for the inbox: %d extra files", len(c.extra))
			}
			if c.file.Task.ClaimedBy != "" {
				t.Errorf("claimed_by %q left after a rejection", c.file.Task.ClaimedBy)
			}
		})
	}
	// lockout: false keeps the author free.
	e, files := unitRules(t, "lead", KindHuman, team+"review:\n  lockout: false\n", unitTask{"T-1", "queue: provisional\nsubmitted_by: agent-a"})
	if c := rejectAs(t, e, files["T-1"]); len(c.file.Task.LockedOut) != 0 || c.to != taskfile.Rejected {
		t.Errorf("lockout off: locked %v, to %s", c.file.Task.LockedOut, c.to)
	}
}

func TestUnitDeadlock(t *testing.T) {
	const roster = "review:\n  max_rejections: 9\nagents:\n  - {name: agent-a, roles: [implementer]}\n  - {name: agent-b, roles: [implementer]}\n  - {name: rev, roles: [reviewer]}\n"
	// With a roster: the last implementer locked out escalates; one free
	// does not.
	e, files := unitRules(t, "lead", KindHuman, roster, unitTask{"T-1", "queue: provisional\nsubmitted_by: agent-b\nlocked_out: [agent-a]\nrejection_count: 1"})
	if c := rejectAs(t, e, files["T-1"]); c.to != taskfile.Escalated || escalationReason(c.data) != "lockout_deadlock" {
		t.Errorf("every implementer locked out: to %s, escalated %v", c.to, escalationReason(c.data))
	}
	e, files = unitRules(t, "lead", KindHuman, roster, unitTask{"T-1", "queue: provisional\nsubmitted_by: agent-b"})
	if c := rejectAs(t, e, files["T-1"]); c.to != taskfile.Rejected {
		t.Errorf("agent-a still free: to %s", c.to)
	}
	// Without a roster, the capable agents are those seen working on tasks
	// of the role: here agent-c, on another task, is still free.
	noRoster := "review:\n  max_rejections: 9\n"
	e, files = unitRules(t, "lead", KindHuman, noRoster,
		unitTask{"T-1", "queue: provisional\nsubmitted_by: agent-b\nworked_by: [agent-a, agent-b]\nlocked_out: [agent-a]\nrejection_count: 1"},
		unitTask{"T-2", "queue: done\nworked_by: [agent-c]"})
	if c := rejectAs(t, e, files["T-1"]); c.to != taskfile.Rejected {
		t.Errorf("agent-c seen on T-2 is free: to %s", c.to)
	}
	e, files = unitRules(t, "lead", KindHuman, noRoster,
		unitTask{"T-1", "queue: provisional\nsubmitted_by: agent-b\nworked_by: [agent-a, agent-b]\nlocked_out: [agent-a]\nrejection_count: 1"},
		unitTask{"T-2", "queue: done\nrole: docs\nworked_by: [agent-c]"})
	if c := rejectAs(t, e, files["T-1"]); c.to != taskfile.Escalated || escalationReason(c.data) != "lockout_deadlock" {
		t.Errorf("agent-c works on another role only: to %s, escalated %v", c.to, escalationReason(c.data))
	}
}

func TestUnitEscalationByNoProgress(t *testing.T) {
	e, files := unitRules(t, "lead", KindHuman, "review:\n  max_rejections: 9\n  max_no_progress: 2\n  lockout: false\n",
		unitTask{"T-1", "queue: provisional\nsubmitted_by: agent-a\nworked_by: [agent-a]"})
	tk := files["T-1"]
	review := func(in *ReviewInput) (*change, *ReviewResult) {
		t.Helper()
		out := &ReviewResult{}
		c, err := e.reviewChange(tk, in, out)
		if err != nil {
			t.Fatal(err)
		}
		// The next round reviews the file this one wrote.
		tk = &Task{Summary: &gitstore.Summary{Path: tk.Path, Task: c.file.Task}, File: c.file}
		return c, out
	}
	c, out := review(&ReviewInput{Issues: []ReviewIssue{{Severity: "HIGH", Title: "Stale entries after update"}}})
	if c.to != taskfile.Rejected || out.NoProgressCount != 0 {
		t.Fatalf("round 1: to %s, no progress %d", c.to, out.NoProgressCount)
	}
	c, out = review(&ReviewInput{Reopen: []string{"R1.1"}})
	if c.to != taskfile.Rejected || out.NoProgressCount != 1 {
		t.Fatalf("round 2 (nothing resolved): to %s, no progress %d", c.to, out.NoProgressCount)
	}
	c, out = review(&ReviewInput{Reopen: []string{"R1.1"}})
	if c.to != taskfile.Escalated || out.NoProgressCount != 2 || escalationReason(c.data) != "no_progress" {
		t.Fatalf("round 3: to %s, no progress %d, escalated %v", c.to, out.NoProgressCount, escalationReason(c.data))
	}
	// Progress resets the count: a round that resolves the blocking issue.
	e2, files2 := unitRules(t, "lead", KindHuman, "review:\n  max_rejections: 9\n  max_no_progress: 2\n  lockout: false\n",
		unitTask{"T-2", "queue: provisional\nsubmitted_by: agent-a"})
	e, tk = e2, files2["T-2"]
	review(&ReviewInput{Issues: []ReviewIssue{{Severity: "HIGH", Title: "First"}}})
	if _, out = review(&ReviewInput{Issues: []ReviewIssue{{Severity: "HIGH", Title: "Second"}}}); out.NoProgressCount != 0 || !out.Progress {
		t.Errorf("R1.1 resolved: progress %v, no progress %d", out.Progress, out.NoProgressCount)
	}
}

func TestUnitReviewAuthority(t *testing.T) {
	const cfg = "review:\n  reviewers:\n    - rev-a\n"
	task := unitTask{"T-1", "queue: provisional\nsubmitted_by: agent-a\nworked_by: [agent-a, rev-a]"}
	for _, tc := range []struct {
		actor string
		kind  ActorKind
		cfg   string
		rule  string
	}{
		{"lead", KindHuman, cfg, ""},                              // a human always may
		{"agent-b", KindAgent, cfg, "reviewer"},                   // not among review.reviewers
		{"rev-a", KindAgent, cfg, "self_review"},                  // a reviewer who worked on it
		{"agent-a", KindAgent, "", "self_review"},                 // no reviewers list: any agent, but not the author
		{"agent-b", KindAgent, "", ""},                            // ... another agent may
		{"lead", KindHuman, "humans: [lead]\n", ""},               // a named human
		{"agent-a", KindHuman, "humans: [lead]\n", "self_review"}, // nobody reviews their own work
	} {
		e, files := unitRules(t, tc.actor, tc.kind, tc.cfg, task)
		_, err := e.checkReviewer(files["T-1"], ActionApprove)
		if got := ruleOf(err); got != tc.rule {
			t.Errorf("%s (%s) with %q: rule %q (%v), want %q", tc.actor, tc.kind, tc.cfg, got, err, tc.rule)
		}
		if tc.rule != "" && strings.Contains(strings.ToLower(hintOf(err)), "--agent") {
			t.Errorf("%s: the hint suggests acting under another name: %s", tc.actor, hintOf(err))
		}
	}
}

func hintOf(err error) string {
	var re *RuleError
	if errors.As(err, &re) {
		return re.Hint
	}
	return ""
}
