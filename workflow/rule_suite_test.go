package workflow

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// The rules of the loop, as one suite run over two backends (as git-bug
// runs one RepoTest over its mock repository and over git): claim order,
// eligibility, lockout, deadlock, the three escalations and review
// authority. Each case states a situation (config.yaml and the task files)
// and what the rules make of it. TestRulesMemory runs the suite over tasks
// in memory, with no repository (rule_backends_test.go); TestRulesRepository
// over a temporary repository, through the Engine's verbs, each a whole
// transition and a commit. Both run the same rule code: a claim's choice
// (claimTarget), and each verb's step (claimStep, rejectStep, reviewStep,
// approveStep) inside Engine.step; the repository then commits what the
// step returns, memory keeps it. Two things are not rules and differ: the
// work between two reviews (see resubmit), and what a human's requeue or
// unlock does once allowed (memory checks only that it is).

// ruleNow is the suite's clock: every case's times are before it.
var ruleNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// seedTask is one task file of a situation: its ID, and its frontmatter
// lines beyond id and title (queue defaults to incoming, created to
// 2026-11-01).
type seedTask struct{ id, fm string }

// who acts: a name, and whether the process says it is an agent
// (ORCH_AGENT). Whether orch then governs it as a human or an agent is
// KindOf's to say, on both backends alike.
type who struct {
	name  string
	agent bool
}

var (
	lead   = who{"lead", false}
	agentA = who{"agent-a", true}
	agentB = who{"agent-b", true}
)

// ruleOutcome is what a rejection or a review did.
type ruleOutcome struct {
	to         taskfile.Queue
	task       taskfile.Task // the task after it
	escalated  string        // the trigger ("" when it did not escalate)
	inbox      int           // messages it left about the task for orch inbox
	noProgress int
	progress   bool
}

// ruleWorld is one situation on one backend.
type ruleWorld interface {
	// claim claims as by (the named task, or the next) and returns the
	// task claimed.
	claim(by who, opts ClaimOptions) (string, error)
	// whyNot is the rule that keeps by from claiming id ("" when none).
	whyNot(by who, id string) string
	reject(by who, id string) (*ruleOutcome, error)
	review(by who, id string, in *ReviewInput) (*ruleOutcome, error)
	approve(by who, id string) error
	// humanVerb runs requeue, or unlock of agent-a, as by.
	humanVerb(by who, verb, id string) error
	task(id string) taskfile.Task
	// resubmit is the work between two reviews, which is no rule of the
	// suite: by takes the rejected task again and submits it. The
	// repository runs the verbs an agent runs; memory, whose tasks have
	// no branch to commit on, keeps the outcome as a fixture.
	resubmit(id string, by who)
	// breakFile leaves a hand edit of id's view file that does not parse.
	breakFile(id string)
}

// newRuleWorld makes a situation on a backend: config.yaml's text ("" for
// the defaults) and the task files.
type newRuleWorld func(t *testing.T, config string, tasks ...seedTask) ruleWorld

func ruleSuite(t *testing.T, newWorld newRuleWorld) {
	t.Run("ClaimOrder", func(t *testing.T) { suiteClaimOrder(t, newWorld) })
	t.Run("Eligibility", func(t *testing.T) { suiteEligibility(t, newWorld) })
	t.Run("Lockout", func(t *testing.T) { suiteLockout(t, newWorld) })
	t.Run("EscalationByCount", func(t *testing.T) { suiteEscalationByCount(t, newWorld) })
	t.Run("Deadlock", func(t *testing.T) { suiteDeadlock(t, newWorld) })
	t.Run("EscalationByNoProgress", func(t *testing.T) { suiteEscalationByNoProgress(t, newWorld) })
	t.Run("Authority", func(t *testing.T) { suiteAuthority(t, newWorld) })
}

const (
	heldByB  = "queue: claimed\nclaimed_by: agent-b\nclaimed_at: 2026-11-25T11:00:00Z" // its lease runs
	lapsedB  = "queue: claimed\nclaimed_by: agent-b\nclaimed_at: 2026-11-25T08:00:00Z" // claim_timeout is 2h
	inUse    = "no task is in incoming, rejected or needs_continuation; %d claimed, with their leases running"
	fourImpl = "agents:\n  - {name: agent-a, roles: [implementer]}\n  - {name: agent-b, roles: [implementer]}\n  - {name: agent-c, roles: [implementer]}\n  - {name: agent-d, roles: [implementer]}\n"
)

// suiteClaimOrder: claims by one agent in a row take the tasks in claim
// order (rejected, then needs_continuation with lapsed claims, then
// incoming; then priority, age, id), then say why nothing is left.
func suiteClaimOrder(t *testing.T, newWorld newRuleWorld) {
	for _, tc := range []struct {
		name  string
		tasks []seedTask
		want  []string // the claims in a row
		left  string   // why nothing is claimable after them
	}{
		{"rejected first, whatever the priority", []seedTask{
			{"T-incoming", "priority: P0"},
			{"T-paused", "queue: needs_continuation\npriority: P0"},
			{"T-rejected", "queue: rejected\npriority: P3\nrejection_count: 1"},
		}, []string{"T-rejected", "T-paused", "T-incoming"}, fmt.Sprintf(inUse, 3)},
		{"needs_continuation before incoming", []seedTask{
			{"T-incoming", "priority: P0"},
			{"T-paused", "queue: needs_continuation\npriority: P3"},
		}, []string{"T-paused", "T-incoming"}, ""},
		{"within a queue the higher priority", []seedTask{
			{"T-ptwo", "priority: P2"},
			{"T-pone", "priority: P1"},
		}, []string{"T-pone", "T-ptwo"}, ""},
		{"within a priority the older", []seedTask{
			{"T-newer", "created: 2026-11-03T00:00:00Z"},
			{"T-older", "created: 2026-11-02T00:00:00Z"},
		}, []string{"T-older", "T-newer"}, ""},
		{"within an age the lower id", []seedTask{
			{"T-bbbb", "created: 2026-11-02T00:00:00Z"},
			{"T-aaaa", "created: 2026-11-02T00:00:00Z"},
		}, []string{"T-aaaa", "T-bbbb"}, ""},
		{"done, provisional and live claims are not claimable", []seedTask{
			{"T-done", "queue: done"},
			{"T-prov", "queue: provisional\nsubmitted_by: agent-b"},
			{"T-held", heldByB},
			{"T-last", "priority: P3"},
		}, []string{"T-last"}, fmt.Sprintf(inUse, 2)},
		{"a claim whose lease ran out is taken with needs_continuation", []seedTask{
			{"T-held", lapsedB},
			{"T-incoming", "priority: P0"},
		}, []string{"T-held", "T-incoming"}, ""},
		{"waiting for a dependency is passed over", []seedTask{
			{"T-waits", "priority: P0\ndepends_on: [T-base]"},
			{"T-base", heldByB},
			{"T-free", "priority: P3"},
		}, []string{"T-free"}, "1 waiting for dependencies"},
		{"a finished dependency does not hold it", []seedTask{
			{"T-waits", "priority: P0\ndepends_on: [T-base]"},
			{"T-base", "queue: done"},
			{"T-free", "priority: P3"},
		}, []string{"T-waits", "T-free"}, ""},
		{"all the keys at once", []seedTask{
			{"T-oldest", "created: 2026-11-01T00:00:00Z"},
			{"T-urgent", "priority: P0\ncreated: 2026-11-03T00:00:00Z"},
			{"T-later", "created: 2026-11-02T00:00:00Z"},
			{"T-rejected", "queue: rejected\nrejection_count: 1\nlocked_out: [agent-a]\ncreated: 2026-11-04T00:00:00Z"},
			{"T-paused", "queue: needs_continuation\ncreated: 2026-11-04T00:00:00Z"},
		}, []string{"T-rejected", "T-paused", "T-urgent", "T-oldest", "T-later"}, fmt.Sprintf(inUse, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "", tc.tasks...)
			for _, want := range tc.want {
				got, err := w.claim(agentB, ClaimOptions{})
				if err != nil {
					t.Fatalf("claims nothing (%v), want %s", err, want)
				}
				if got != want {
					t.Fatalf("claims %s, want %s", got, want)
				}
				if tk := w.task(got); tk.Queue != taskfile.Claimed || tk.ClaimedBy != "agent-b" || !slices.Contains(tk.WorkedBy, "agent-b") {
					t.Fatalf("%s after the claim: %s, claimed by %q, worked by %v", got, tk.Queue, tk.ClaimedBy, tk.WorkedBy)
				}
			}
			_, err := w.claim(agentB, ClaimOptions{})
			var none *NothingToClaimError
			if !errors.As(err, &none) {
				t.Fatalf("after %v: %v, want nothing to claim", tc.want, err)
			}
			if got := strings.Join(none.Reasons, "; "); tc.left != "" && got != tc.left {
				t.Errorf("nothing to claim: %q, want %q", got, tc.left)
			}
		})
	}
}

// suiteEligibility: who may claim what. Each task is refused to agent-a by
// one rule (whyNot), and a claim of it by name says so; with only those
// left, the next claim counts why, leaving out the claims in use.
func suiteEligibility(t *testing.T, newWorld newRuleWorld) {
	w := newWorld(t, "",
		seedTask{"T-role", "role: reviewer"},
		seedTask{"T-assigned", "assigned_to: agent-b"},
		seedTask{"T-mine", "assigned_to: agent-a\npriority: P3"},
		seedTask{"T-locked", "queue: rejected\nrejection_count: 1\nlocked_out: [agent-a]"},
		seedTask{"T-deps", "depends_on: [T-mine]"},
		seedTask{"T-gone", "depends_on: [T-nowhere]"},
		seedTask{"T-held", heldByB},
		seedTask{"T-ownclaim", "queue: claimed\nclaimed_by: agent-a\nclaimed_at: 2026-11-25T11:00:00Z"},
		seedTask{"T-done", "queue: done"},
		seedTask{"T-broken", ""},
	)
	w.breakFile("T-broken")
	for _, tc := range []struct {
		id, rule string
		claim    string // what a claim of it by name answers: a rule, "illegal" or "conflict"
	}{
		{"T-role", "role", "role"},
		{"T-assigned", "assigned", "assigned"},
		{"T-locked", "lockout", "lockout"},
		{"T-deps", "dependencies", "dependencies"},
		{"T-gone", "dependencies", "dependencies"},
		{"T-held", "claimed", "claimed"},
		{"T-ownclaim", "claimed", "claimed"},
		{"T-done", "queue", "illegal"},        // the transition table refuses first
		{"T-broken", "hand_edit", "conflict"}, // as every verb refuses a broken file
		{"T-mine", "", ""},
	} {
		if got := w.whyNot(agentA, tc.id); got != tc.rule {
			t.Errorf("%s: rule %q, want %q", tc.id, got, tc.rule)
		}
		if tc.claim == "" {
			continue
		}
		_, err := w.claim(agentA, ClaimOptions{Task: tc.id})
		var il *IllegalTransitionError
		var ce *ConflictError
		got := ruleOf(err)
		switch {
		case errors.As(err, &il):
			got = "illegal"
		case errors.As(err, &ce):
			got = "conflict"
		}
		if got != tc.claim {
			t.Errorf("claim of %s: %v, want %s", tc.id, err, tc.claim)
		}
		// What comes next names no actor: an agent is never shown a name
		// to act under (the words are cmd/orch's, and tested there).
		if n, ok := nextOf(err); ok && (n.Advice == "" || n.Agent != "") {
			t.Errorf("claim of %s: next %+v, want an advice that names no actor", tc.id, n)
		}
	}
	if got, err := w.claim(agentA, ClaimOptions{Task: "T-mine"}); err != nil || got != "T-mine" {
		t.Fatalf("claim of T-mine: %s, %v", got, err)
	}
	_, err := w.claim(agentA, ClaimOptions{})
	var none *NothingToClaimError
	want := "1 assigned to someone else; 2 waiting for dependencies; 1 with an uncommitted hand edit; 1 you are locked out; 1 for another role"
	if !errors.As(err, &none) || strings.Join(none.Reasons, "; ") != want {
		t.Errorf("with only those left: %v, want nothing to claim: %s", err, want)
	}
}

// suiteLockout: a rejection locks its author out; the author can no longer
// claim the task, another agent can. review.lockout: false keeps the
// author free.
func suiteLockout(t *testing.T, newWorld newRuleWorld) {
	const cfg = fourImpl + "review:\n  max_rejections: 3\n"
	t.Run("the author is locked out, and another agent takes it", func(t *testing.T) {
		w := newWorld(t, cfg, seedTask{"T-snap", "queue: provisional\nsubmitted_by: agent-a\nworked_by: [agent-a]\nclaimed_by: agent-a"})
		out, err := w.reject(lead, "T-snap")
		if err != nil {
			t.Fatal(err)
		}
		if out.to != taskfile.Rejected || out.escalated != "" || out.inbox != 0 {
			t.Errorf("to %s, escalated %q, %d inbox messages; want rejected, no escalation", out.to, out.escalated, out.inbox)
		}
		if tk := out.task; !slices.Equal(tk.LockedOut, []string{"agent-a"}) || tk.RejectionCount != 1 || tk.ClaimedBy != "" {
			t.Errorf("locked out %v, rejection %d, claimed by %q", tk.LockedOut, tk.RejectionCount, tk.ClaimedBy)
		}
		_, err = w.claim(agentA, ClaimOptions{Task: "T-snap"})
		if n, _ := nextOf(err); ruleOf(err) != "lockout" || n.Advice != AdviseLockedOut {
			t.Errorf("the author claims it again: %v (next %+v)", err, n)
		}
		var none *NothingToClaimError
		if _, err := w.claim(agentA, ClaimOptions{}); !errors.As(err, &none) || strings.Join(none.Reasons, "; ") != "1 you are locked out" {
			t.Errorf("the author's next claim: %v", err)
		}
		if got, err := w.claim(agentB, ClaimOptions{}); err != nil || got != "T-snap" {
			t.Errorf("another agent's next claim: %s, %v", got, err)
		}
	})
	t.Run("a claimant who never submitted is the author", func(t *testing.T) {
		w := newWorld(t, cfg, seedTask{"T-snap", "queue: provisional\nclaimed_by: agent-b\nclaimed_at: 2026-11-25T11:00:00Z"})
		out, err := w.reject(lead, "T-snap")
		if err != nil {
			t.Fatal(err)
		}
		if out.to != taskfile.Rejected || !slices.Equal(out.task.LockedOut, []string{"agent-b"}) || out.task.ClaimedBy != "" {
			t.Errorf("to %s, locked out %v, claimed by %q", out.to, out.task.LockedOut, out.task.ClaimedBy)
		}
	})
	t.Run("lockout: false keeps the author free", func(t *testing.T) {
		w := newWorld(t, fourImpl+"review:\n  lockout: false\n", seedTask{"T-snap", "queue: provisional\nsubmitted_by: agent-a"})
		out, err := w.reject(lead, "T-snap")
		if err != nil {
			t.Fatal(err)
		}
		if out.to != taskfile.Rejected || len(out.task.LockedOut) != 0 {
			t.Errorf("to %s, locked out %v", out.to, out.task.LockedOut)
		}
		if got, err := w.claim(agentA, ClaimOptions{}); err != nil || got != "T-snap" {
			t.Errorf("the author's next claim: %s, %v", got, err)
		}
	})
}

// suiteEscalationByCount: lockouts add up, one per author, and the
// rejection that reaches review.max_rejections escalates, with a message
// for the inbox. Four implementers, so that no lockout here deadlocks.
func suiteEscalationByCount(t *testing.T, newWorld newRuleWorld) {
	w := newWorld(t, fourImpl+"review:\n  max_rejections: 3\n", seedTask{"T-snap", "queue: provisional\nsubmitted_by: agent-a\nworked_by: [agent-a]"})
	for i, author := range []string{"agent-a", "agent-b", "agent-c"} {
		if i > 0 {
			w.resubmit("T-snap", who{author, true})
		}
		out, err := w.reject(lead, "T-snap")
		if err != nil {
			t.Fatal(err)
		}
		to, escalated, inbox := taskfile.Rejected, "", 0
		if i == 2 {
			to, escalated, inbox = taskfile.Escalated, "max_rejections", 1
		}
		locked := []string{"agent-a", "agent-b", "agent-c"}[:i+1]
		if out.to != to || out.escalated != escalated || out.inbox != inbox || out.task.RejectionCount != i+1 || !slices.Equal(out.task.LockedOut, locked) {
			t.Fatalf("rejection %d: to %s, escalated %q, %d inbox messages, count %d, locked out %v; want %s, %q, %d, %d, %v",
				i+1, out.to, out.escalated, out.inbox, out.task.RejectionCount, out.task.LockedOut, to, escalated, inbox, i+1, locked)
		}
	}
}

// suiteDeadlock: a rejection that leaves every agent capable of the
// task's role locked out escalates. The capable agents are the roster's;
// without a roster, the agents seen working on tasks of that role (never
// a human).
func suiteDeadlock(t *testing.T, newWorld newRuleWorld) {
	const roster = "review:\n  max_rejections: 9\nagents:\n  - {name: agent-a, roles: [implementer]}\n  - {name: agent-b, roles: [implementer]}\n  - {name: rev, roles: [reviewer]}\n"
	const noRoster = "review:\n  max_rejections: 9\n"
	const lockedA = "queue: provisional\nsubmitted_by: agent-b\nworked_by: [agent-a, agent-b]\nlocked_out: [agent-a]\nrejection_count: 1"
	t.Run("the roster's last implementer locked out", func(t *testing.T) {
		w := newWorld(t, roster, seedTask{"T-snap", "queue: provisional\nsubmitted_by: agent-b\nworked_by: [agent-b]"})
		if out, err := w.reject(lead, "T-snap"); err != nil || out.to != taskfile.Rejected {
			t.Fatalf("agent-a still free: %+v, %v", out, err)
		}
		w.resubmit("T-snap", agentA)
		out, err := w.reject(lead, "T-snap")
		if err != nil || out.to != taskfile.Escalated || out.escalated != "lockout_deadlock" || out.inbox != 1 {
			t.Fatalf("every implementer locked out: %+v, %v", out, err)
		}
	})
	for _, tc := range []struct {
		name   string
		cfg    string
		other  string // the frontmatter of another task
		to     taskfile.Queue
		reason string
	}{
		{"without a roster, an agent seen on another task of the role is free", noRoster, "queue: done\nworked_by: [agent-c]", taskfile.Rejected, ""},
		{"without a roster, an agent seen only on another role is not", noRoster, "queue: done\nrole: docs\nworked_by: [agent-c]", taskfile.Escalated, "lockout_deadlock"},
		{"without a roster, a human is not an agent of the role", "humans: [lead]\n" + noRoster, "queue: done\nworked_by: [lead]", taskfile.Escalated, "lockout_deadlock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.cfg, seedTask{"T-snap", lockedA}, seedTask{"T-other", tc.other})
			out, err := w.reject(lead, "T-snap")
			if err != nil || out.to != tc.to || out.escalated != tc.reason {
				t.Fatalf("%+v, %v; want to %s, escalated %q", out, err, tc.to, tc.reason)
			}
		})
	}
}

// suiteEscalationByNoProgress: structured review rounds in a row that
// resolve no blocking issue escalate at review.max_no_progress; a round
// that resolves one starts the count again.
func suiteEscalationByNoProgress(t *testing.T, newWorld newRuleWorld) {
	const cfg = "review:\n  max_rejections: 9\n  max_no_progress: 2\n  lockout: false\n"
	const submitted = "queue: provisional\nsubmitted_by: agent-a\nworked_by: [agent-a]"
	type round struct {
		in         *ReviewInput
		to         taskfile.Queue
		noProgress int
		progress   bool
		escalated  string
	}
	issue := func(title string) *ReviewInput {
		return &ReviewInput{Issues: []ReviewIssue{{Severity: "HIGH", Title: title}}}
	}
	for _, tc := range []struct {
		name   string
		rounds []round
	}{
		{"two rounds in a row without progress", []round{
			{issue("Stale entries after update"), taskfile.Rejected, 0, false, ""},
			{&ReviewInput{Reopen: []string{"R1.1"}}, taskfile.Rejected, 1, false, ""},
			{&ReviewInput{Reopen: []string{"R1.1"}}, taskfile.Escalated, 2, false, "no_progress"},
		}},
		{"progress starts the count again", []round{
			{issue("First"), taskfile.Rejected, 0, false, ""},
			{&ReviewInput{Reopen: []string{"R1.1"}}, taskfile.Rejected, 1, false, ""},
			{issue("Second"), taskfile.Rejected, 0, true, ""}, // R1.1 resolved
			{&ReviewInput{Reopen: []string{"R3.1"}}, taskfile.Rejected, 1, false, ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, cfg, seedTask{"T-cache", submitted})
			for i, r := range tc.rounds {
				if i > 0 {
					w.resubmit("T-cache", agentA)
				}
				out, err := w.review(lead, "T-cache", r.in)
				if err != nil {
					t.Fatalf("round %d: %v", i+1, err)
				}
				if out.to != r.to || out.noProgress != r.noProgress || out.progress != r.progress || out.escalated != r.escalated {
					t.Fatalf("round %d: to %s, no progress %d, progress %v, escalated %q; want %s, %d, %v, %q",
						i+1, out.to, out.noProgress, out.progress, out.escalated, r.to, r.noProgress, r.progress, r.escalated)
				}
			}
		})
	}
}

// suiteAuthority: who may review (review.reviewers, scoped reviewers;
// never one's own work; a human always may) and who may use a human's
// verb. No refusal's hint suggests acting under another name.
func suiteAuthority(t *testing.T, newWorld newRuleWorld) {
	const submitted = "queue: provisional\nsubmitted_by: agent-a\nworked_by: [agent-a, rev-a]"
	const reviewers = "review:\n  reviewers:\n    - rev-a\n"
	const scoped = "review:\n  reviewers:\n    - {name: qa, labels: [tests]}\n"
	for _, tc := range []struct {
		name string
		by   who
		cfg  string
		fm   string
		rule string // "" when the approval goes through
	}{
		{"a human always may", lead, reviewers, submitted, ""},
		{"an agent not among review.reviewers", agentB, reviewers, submitted, "reviewer"},
		{"a reviewer who worked on it", who{"rev-a", true}, reviewers, submitted, "self_review"},
		{"no reviewers list: not the author", agentA, "", submitted, "self_review"},
		{"no reviewers list: another agent", agentB, "", submitted, ""},
		{"a named human", lead, "humans: [lead]\n", submitted, ""},
		{"a human does not review their own work either", lead, "humans: [lead]\n", "queue: provisional\nsubmitted_by: lead", "self_review"},
		{"a scoped reviewer outside its scope", who{"qa", true}, scoped, submitted, "reviewer_scope"},
		{"a scoped reviewer within its scope", who{"qa", true}, scoped, submitted + "\nlabels: [tests]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.cfg, seedTask{"T-snap", tc.fm})
			err := w.approve(tc.by, "T-snap")
			if got := ruleOf(err); got != tc.rule || (tc.rule == "" && err != nil) {
				t.Fatalf("%s approves: %v, want rule %q", tc.by.name, err, tc.rule)
			}
			if n, _ := nextOf(err); tc.rule != "" && n.Advice != reviewerAdvice[tc.rule] {
				t.Errorf("next %+v, want %s", n, reviewerAdvice[tc.rule])
			}
			want := taskfile.Done
			if tc.rule != "" {
				want = taskfile.Provisional // a refusal changes nothing
			}
			if q := w.task("T-snap").Queue; q != want {
				t.Errorf("after it: %s, want %s", q, want)
			}
		})
	}
	t.Run("human verbs", func(t *testing.T) {
		w := newWorld(t, "humans: [lead]\n", seedTask{"T-snap", "queue: rejected\nrejection_count: 1\nlocked_out: [agent-a]"})
		for _, verb := range []string{"requeue", "unlock"} {
			err := w.humanVerb(agentA, verb, "T-snap")
			if n, _ := nextOf(err); ruleOf(err) != "authority" || n.Advice != AdviseAskHuman || n.Task != "T-snap" {
				t.Errorf("an agent's %s: %v (next %+v)", verb, err, n)
			}
			if err := w.humanVerb(lead, verb, "T-snap"); err != nil {
				t.Errorf("a human's %s: %v", verb, err)
			}
		}
	})
}

// nextOf is what a refusal by rule says comes next (ok: err is one).
func nextOf(err error) (Next, bool) {
	var re *RuleError
	if errors.As(err, &re) {
		return re.Next, true
	}
	return Next{}, false
}

// reviewerAdvice is what each refusal of review authority tells the
// refused: who reviews instead, and what else to do (never how to become
// a reviewer).
var reviewerAdvice = map[string]Advice{
	"reviewer":       AdviseNotReviewer,
	"self_review":    AdviseSelfReview,
	"reviewer_scope": AdviseOutsideScope,
}

// TestClaimQueueMatchesSort: the heap a claim walks must give exactly the
// order sortClaimOrder (orch list) gives, ties (same priority and time)
// included. The suite checks the order a claim takes; this, over random
// lists, that the two implementations of it agree.
func TestClaimQueueMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	queues := []taskfile.Queue{taskfile.Incoming, taskfile.Rejected, taskfile.NeedsContinuation}
	prios := []string{"P0", "P1", "P2", "P3"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := 0; round < 50; round++ {
		n := rng.Intn(300)
		var sums []*gitstore.Summary
		var heads []*gitstore.SummaryHeader
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("T-%06d", rng.Intn(50))
			created := time.Time{}
			if rng.Intn(4) > 0 {
				created = base.Add(time.Duration(rng.Intn(5)) * time.Hour)
			}
			q, p := queues[rng.Intn(len(queues))], prios[rng.Intn(len(prios))]
			path := fmt.Sprintf("tasks/%s-%d.md", id, i)
			sums = append(sums, &gitstore.Summary{Path: path, Task: taskfile.Task{ID: id, Queue: q, Priority: p, Created: created}})
			heads = append(heads, &gitstore.SummaryHeader{Path: path, ID: id, Queue: q, Priority: p, Created: gitstore.CreatedKey(created)})
		}
		sortClaimOrder(sums, false)
		order := newClaimQueue(heads)
		for i, s := range sums {
			h := order.next()
			if h == nil || h.Path != s.Path {
				t.Fatalf("round %d, place %d: heap gives %+v, sort gives %s", round, i, h, s.Path)
			}
		}
		if h := order.next(); h != nil {
			t.Fatalf("round %d: heap gives an extra %s", round, h.Path)
		}
	}
}
