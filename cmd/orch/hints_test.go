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
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// TestAgentHintsNeverLeadAroundARule drives every refusal an agent can meet
// (docs/design.md §5.5) and checks each hint: none tells the agent to act under
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
	testgit.SetHome(t, "tester", "tester@example.com")
}

// TestEveryAdviceHasWords: each advice workflow can give has words here,
// whole (no fmt verb left unfilled), and an advice cmd/orch does not know
// has none.
func TestEveryAdviceHasWords(t *testing.T) {
	facts := workflow.Next{Task: "T-4k9x2m", Agent: "agent-a", Branch: "task/T-4k9x2m-x", Base: "main", Path: ".orchestrator/tasks/T-4k9x2m-x.md",
		Issue: "R1.1", Status: "fixed", Verb: workflow.ActionApprove, Queue: taskfile.Done, PR: 48, NewPR: 49, Issues: []string{"R1.1", "R2.1"}}
	seen := map[string]workflow.Advice{}
	for _, a := range workflow.Advices {
		n := facts
		n.Advice = a
		h := hintFor(n)
		if h == "" || strings.Contains(h, "%!") {
			t.Errorf("%s: hint %q", a, h)
		}
		if b, dup := seen[h]; dup {
			t.Errorf("%s and %s have the same words %q: one advice per wording", a, b, h)
		}
		seen[h] = a
	}
	if h := hintFor(workflow.Next{}); h != "" {
		t.Errorf("no advice: %q", h)
	}
	if h := hintFor(workflow.Next{Advice: "no_such_advice", Task: "T-1"}); h != "" {
		t.Errorf("an unknown advice: %q", h)
	}
}

// TestHintWords: an advice and its facts give these words exactly.
func TestHintWords(t *testing.T) {
	const id = "T-4k9x2m"
	for _, c := range []struct {
		next workflow.Next
		want string
	}{
		{workflow.Next{Advice: workflow.AdviseListTasks}, "orch list shows the tasks"},
		{workflow.Next{Advice: workflow.AdviseAskHuman, Task: id}, `this is for a human: ask one with orch escalate T-4k9x2m -m "what you need and why" (it lands in orch inbox), or take other work with orch claim`},
		{workflow.Next{Advice: workflow.AdviseAskHuman}, `this is for a human: ask one with orch escalate ID -m "what you need and why" (it lands in orch inbox), or take other work with orch claim`},
		{workflow.Next{Advice: workflow.AdviseActAsYourself, Agent: "agent-a"}, `every orch command of this process acts as agent-a; to ask a human for something: orch escalate ID -m "..."`},
		{workflow.Next{Advice: workflow.AdviseLockedOut, Task: id}, `your work on it was rejected, so another agent takes it; orch list --ready shows what you can claim (orch escalate T-4k9x2m -m "..." asks a human)`},
		{workflow.Next{Advice: workflow.AdviseAwaitsReview, Task: id}, `it waits for review: orch reject T-4k9x2m -m "..." or orch approve T-4k9x2m`},
		{workflow.Next{Advice: workflow.AdviseKeepPR, Task: id, Branch: "task/x", PR: 48}, `push your commits to task/x (PR #48 updates itself) and run orch submit T-4k9x2m; if PR #48 cannot be used any more, ask a human with orch escalate T-4k9x2m -m "why"`},
		{workflow.Next{Advice: workflow.AdviseMovePR, Task: id, Branch: "task/x", PR: 48, NewPR: 49}, "run orch submit T-4k9x2m without --pr (PR #48 updates itself when task/x is pushed); to move the task to PR #49, set pr_number: 49 with orch edit T-4k9x2m first"},
		{workflow.Next{Advice: workflow.AdviseJustifyBlocking, Task: id, Issue: "R1.1"}, `say why it does not apply: orch respond T-4k9x2m R1.1 rejected -m "the input is validated upstream in auth.py:13, before it reaches the query"; if the issue is right but hard to fix, fix it, or ask a human: orch escalate T-4k9x2m -m "..."`},
		{workflow.Next{Advice: workflow.AdviseJustifyOrDefer, Task: id, Issue: "R1.2"}, `say why it does not apply: orch respond T-4k9x2m R1.2 rejected -m "the input is validated upstream in auth.py:13, before it reaches the query"; or defer it: orch respond T-4k9x2m R1.2 deferred -m "tracked as ..."`},
		{workflow.Next{Advice: workflow.AdviseRespondText, Task: id, Issue: "R1.1", Status: "deferred"}, `orch respond T-4k9x2m R1.1 deferred -m "what you changed"`},
		{workflow.Next{Advice: workflow.AdviseNameIssueByID, Issues: []string{"R1.1", "R2.3"}}, "name the issue by orch's ID: R1.1 or R2.3"},
		{workflow.Next{Advice: workflow.AdviseEditAgain, Task: id}, "run orch edit T-4k9x2m again"},
		{workflow.Next{Advice: workflow.AdviseEditAgain}, "run orch edit again"},
		{workflow.Next{Advice: workflow.AdviseBaseFromHere, Base: "main", Branch: "trunk"}, "the branch checked out here is trunk: if tasks start from it, set base_branch: trunk in config.yaml (orch edit config); or create main"},
		{workflow.Next{Advice: workflow.AdviseOwnedFields, Steps: []workflow.Next{
			{Advice: workflow.AdviseStepAskToMove, Task: id, Queue: taskfile.Done},
			{Advice: workflow.AdviseStepClaim, Task: id},
			{Advice: workflow.AdviseStepLockout},
		}}, `a reviewer or a human moves it to done (orch escalate T-4k9x2m -m "..." asks one); orch claim --task T-4k9x2m claims it; a human lifts a lockout; edit again leaving those fields as they are`},
		{workflow.Next{Advice: workflow.AdviseOwnedFields, Steps: []workflow.Next{{Advice: workflow.AdviseStepMove, Task: id, Verb: workflow.ActionRequeue, Queue: taskfile.Incoming}}},
			"orch requeue T-4k9x2m moves it to incoming; edit again leaving those fields as they are"},
		{workflow.Next{Advice: workflow.AdviseOwnedFields}, "orch keeps them itself; edit again leaving those fields as they are"},
	} {
		if got := hintFor(c.next); got != c.want {
			t.Errorf("%s: got\n  %s\nwant\n  %s", c.next.Advice, got, c.want)
		}
	}
	// A door outside workflow words its own hint; it wins over Next.
	if got := hintOf("orch serve --addr 127.0.0.1:7420", workflow.Next{Advice: workflow.AdviseListTasks}); got != "orch serve --addr 127.0.0.1:7420" {
		t.Errorf("hintOf: %q", got)
	}
}

// TestAgentAdvicesNeverLeadAroundARule: the advices a refusal of an agent
// carries (authority, review authority, lockout, a lost claim) never tell
// it to act under another name or use a human's verb, whatever their facts
// (TestAgentHintsNeverLeadAroundARule drives the real refusals).
func TestAgentAdvicesNeverLeadAroundARule(t *testing.T) {
	forbidden := regexp.MustCompile(`--agent|ORCH_AGENT|reviewers|agents:|roster|--role|--label|label it|orch (unlock|requeue|decide|archive|sweep|edit( config| [A-Z]+-))\b`)
	for _, a := range []workflow.Advice{
		workflow.AdviseAskHuman, workflow.AdviseActAsYourself, workflow.AdviseEscalate, workflow.AdviseOtherWork,
		workflow.AdviseNotReviewer, workflow.AdviseReviewClaimed, workflow.AdviseSelfReview, workflow.AdviseOutsideScope,
		workflow.AdviseLockedOut, workflow.AdviseClaimLost, workflow.AdviseRunEnded, workflow.AdviseSetRecordAgent,
		workflow.AdviseKeepPR, workflow.AdviseAskForBase, workflow.AdviseJustifyBlocking, workflow.AdviseStepAskToMove,
	} {
		h := hintFor(workflow.Next{Advice: a, Task: "T-4k9x2m", Agent: "agent-a", Branch: "task/x", Base: "main", Issue: "R1.1", PR: 48, Queue: taskfile.Done})
		if m := forbidden.FindString(h); m != "" {
			t.Errorf("%s leads around a rule (%q): %s", a, m, h)
		}
	}
}
