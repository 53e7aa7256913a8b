package web

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/refusal"
	"github.com/orch-tool/orch/workflow"
)

func TestBoardPage(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))

	code, body := ts.get(t, nil, "/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	// The open queues, in board order, each task as a card with its ID,
	// title, priority, role, who holds it, rejections and age.
	mustContain(t, "board", body,
		`aria-label="incoming"`, `aria-label="claimed"`, `aria-label="escalated"`,
		`data-id="T-7hd3kq"`, "Add keyboard shortcuts for shape tools",
		`data-id="T-3vfp8e"`, "@agent-b", // claimed by agent-b
		`data-id="T-4k9x2m"`, "rej 1", `class="role">implementer`,
		`class="card escalated`, // T-1qzk7w
	)
	if i, j := strings.Index(body, `aria-label="incoming"`), strings.Index(body, `aria-label="escalated"`); i < 0 || j < i {
		t.Errorf("columns out of board order")
	}
	// Closed queues only with all=1.
	mustNotContain(t, "board", body, `data-id="T-2bq7za"`, `aria-label="done"`)
	_, all := ts.get(t, nil, "/?all=1")
	mustContain(t, "board ?all=1", all, `aria-label="done"`, `data-id="T-2bq7za"`, `aria-label="superseded"`)
	// An archived task is still a card of its finished column, and its
	// page opens.
	as(t, ts.dir, "lead", func(e *workflow.Engine) error { _, err := e.Archive("T-2bq7za"); return err })
	_, all = ts.get(t, nil, "/?all=1")
	mustContain(t, "board ?all=1 after archive", all, `data-id="T-2bq7za"`)
	if code, page := ts.get(t, nil, "/task/T-2bq7za"); code != http.StatusOK || !strings.Contains(page, "T-2bq7za") {
		t.Errorf("GET /task/T-2bq7za (archived): %d", code)
	}

	// One queue; a limit, with the count of the cards left out.
	_, one := ts.get(t, nil, "/?queue=incoming&limit=1")
	mustContain(t, "board ?queue=incoming&limit=1", one, `aria-label="incoming"`, "1 more")
	mustNotContain(t, "board ?queue=incoming", one, `aria-label="claimed"`)
	if n := strings.Count(one, `<article class="card`); n != 1 {
		t.Errorf("limit=1 shows %d cards", n)
	}
	for _, bad := range []string{"/?queue=nowhere", "/?limit=-1", "/?limit=x"} {
		if code, _ := ts.get(t, nil, bad); code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", bad, code)
		}
	}
	if code, _ := ts.get(t, nil, "/nothing-here"); code != http.StatusNotFound {
		t.Errorf("GET /nothing-here: %d", code)
	}
}

func TestTaskPage(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))

	code, body := ts.get(t, nil, "/task/T-4k9x2m")
	if code != http.StatusOK {
		t.Fatalf("GET /task/T-4k9x2m: %d\n%s", code, body)
	}
	mustContain(t, "task", body,
		// The frontmatter as a table, unknown keys and orch's fields too.
		"<th>custom_field</th>", "kept exactly as written", `title="set by orch's verbs"><th>rejection_count</th><td>1</td>`,
		// The review round, issue by issue, with severities.
		"Rejection #1", "From GitHub PR review by alice", "<b>R1.1</b>", `class="sev sev-blocking">BLOCKING`,
		`<code>src/components/SketchView2D.tsx:1709</code>`, "Fork start uses raw svgPos", "no answer yet",
		`class="sev sev-suggestion">suggestion`, "From lead via orch reject",
		// The body, rendered.
		"<h2>Acceptance Criteria</h2>", `type="checkbox"`,
		// Branch, pull request, dependency, history.
		"<code>task/T-4k9x2m-snap-fork-start</code>", "PR #48",
		`<ol class="history">`,
	)
	// The review round is shown once, structured, not again in the body.
	if n := strings.Count(body, "Fork start uses raw svgPos"); n != 2 { // the issue, and the file as written
		t.Errorf("the issue's text is on the page %d times, want 2 (issue and raw file)", n)
	}

	// A prefix, or the random part, finds the task; a wrong one is 404.
	if code, b := ts.get(t, nil, "/task/4k9x"); code != http.StatusOK || !strings.Contains(b, "Snap fork start") {
		t.Errorf("GET /task/4k9x: %d", code)
	}
	if code, _ := ts.get(t, nil, "/task/T-zzzzzz"); code != http.StatusNotFound {
		t.Errorf("GET /task/T-zzzzzz: %d, want 404", code)
	}
	if code, _ := ts.get(t, nil, "/task/T-"); code != http.StatusNotFound {
		t.Errorf("GET /task/T- (ambiguous): %d, want 404", code)
	}

	// The history is the task's commits on the state branch (orch log).
	as(t, dir, "agent-a", func(e *workflow.Engine) error {
		_, err := e.Claim(workflow.ClaimOptions{Task: "T-7hd3kq"})
		return err
	})
	_, body = ts.get(t, nil, "/task/T-7hd3kq")
	mustContain(t, "claimed task", body, "<b>claim</b> incoming→claimed", "agent-a", "<th>claimed_by</th><td>agent-a</td>", "task/T-7hd3kq-")
}

// refuseAs claims a task as agent and refuses it with a valid BLOCKER
// refusal.
func refuseAs(t *testing.T, dir, agent, id string) {
	t.Helper()
	as(t, dir, agent, func(e *workflow.Engine) error {
		if _, err := e.Claim(workflow.ClaimOptions{Task: id}); err != nil {
			return err
		}
		_, err := e.Refuse(id, &refusal.Record{
			ReasonType:    refusal.Blocker,
			ReasonSummary: "Staging auth API is down",
			ReasonDetail:  "Every call to the staging auth API fails.",
			WhatAttempted: []string{
				"Ran go test ./auth/... - 12 failures in session_test.go",
				"Searched the repository for the OAuth client configuration - not found",
			},
			BlockingFactor:       "The staging auth API returns 503 for every request",
			SuggestedAlternative: "Have ops restart the staging auth service, then rerun the login tests",
			Evidence:             []refusal.Evidence{{Type: "error_log", Data: "ConnectionError: API endpoint returned 503", Source: "attempt to call auth API"}},
		})
		return err
	})
}

func TestInboxPage(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	refuseAs(t, dir, "agent-a", "T-7hd3kq")
	// An agent's refused attempt: approving is a reviewer's.
	e, err := workflow.Open(workflow.Options{Dir: dir, Actor: "agent-a", Signals: workflow.ActorSignals{EnvAgent: "agent-a"}, Verb: "approve"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Approve("T-5ncg1r", ""); err == nil {
		t.Fatal("agent-a approved")
	}
	e.Close()

	code, body := ts.get(t, nil, "/inbox")
	if code != http.StatusOK {
		t.Fatalf("GET /inbox: %d\n%s", code, body)
	}
	mustContain(t, "inbox", body,
		// The escalation, with the reason and the message's why.
		`aria-label="escalations"`, "T-1qzk7w", "max_rejections", "Rejection #3 reached review.max_rejections",
		// The refusal, whole: everything needed to decide.
		`aria-label="refusals"`, "refused by agent-a", "BLOCKER: Staging auth API is down",
		"Blocking factor: The staging auth API returns 503", "Ran go test ./auth/...", "ConnectionError: API endpoint returned 503",
		"Have ops restart the staging auth service", "The protocol's default: <b>defer</b>",
		// The refused attempt.
		`aria-label="refused attempts"`, "agent-a tried orch approve",
	)
	// The task's page has the refusal too, and the decision's form for a
	// browser that may act.
	c := ts.client(t)
	ts.login(t, c, "test-token-0123456789")
	_, task := ts.get(t, c, "/task/T-7hd3kq")
	mustContain(t, "refused task", task, "Refused by agent-a", `action="/task/T-7hd3kq/decide"`, `<option value="override"`)
}

func TestStatsPage(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	// Some history: a claim, a submission, a rejection, an approval and a
	// refusal.
	refuseAs(t, dir, "agent-a", "T-7hd3kq")
	as(t, dir, "agent-b", func(e *workflow.Engine) error {
		_, err := e.Submit("T-3vfp8e", workflow.SubmitOptions{})
		return err
	})
	as(t, dir, "lead", func(e *workflow.Engine) error {
		if _, err := e.Reject("T-3vfp8e", "The settings migration drops the theme."); err != nil {
			return err
		}
		_, err := e.Approve("T-5ncg1r", "")
		return err
	})

	code, body := ts.get(t, nil, "/stats")
	if code != http.StatusOK {
		t.Fatalf("GET /stats: %d\n%s", code, body)
	}
	if n := strings.Count(body, `<svg class="chart"`); n != 5 {
		t.Errorf("%d charts, want 5", n)
	}
	mustContain(t, "stats", body,
		`aria-label="tasks per queue over time"`, `class="area q-incoming"`, `class="area q-blocked"`,
		`aria-label="tasks by number of rejections"`, `aria-label="approvals by review rounds"`,
		`aria-label="refusals by reason"`, "BLOCKER", "SCOPE_CREEP", "UNCLEAR_REQUIREMENTS",
		`aria-label="time from first claim to approval"`,
		"1 valid, 0 invalid", "1 approvals",
	)
	// The timeline ends at the board as it stands: blocked holds the
	// example's task and the one just refused.
	if !regexp.MustCompile(`blocked: 2 now`).MatchString(body) {
		t.Errorf("the timeline does not end at 2 blocked tasks")
	}
}

// TestPagesCommitNothing: a page reads the state branch and commits
// nothing, not even a hand edit waiting in the view (the reconcile of the
// next orch command commits it, and then the page shows it).
func TestPagesCommitNothing(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	tip := git(t, dir, "rev-parse", "orch")
	p := filepath.Join(dir, ".orchestrator", "tasks", "T-9mwq4c-write-the-export-to-svg-command.md")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "title: Write the export-to-SVG command", "title: Export to SVG, edited by hand", 1)
	if err := os.WriteFile(p, []byte(edited), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/?all=1", "/task/T-9mwq4c", "/inbox", "/stats"} {
		if code, _ := ts.get(t, nil, path); code != http.StatusOK {
			t.Errorf("GET %s: %d", path, code)
		}
	}
	if now := git(t, dir, "rev-parse", "orch"); now != tip {
		t.Errorf("a page moved the state branch: %s -> %s", tip, now)
	}
	if got, _ := os.ReadFile(p); string(got) != edited {
		t.Errorf("a page changed the view's file")
	}
	_, body := ts.get(t, nil, "/")
	mustNotContain(t, "board before the reconcile", body, "edited by hand")
	as(t, dir, "lead", func(e *workflow.Engine) error { return nil }) // any command reconciles
	_, body = ts.get(t, nil, "/")
	mustContain(t, "board after the reconcile", body, "Export to SVG, edited by hand")
}

// TestReadsDoNotWaitForWriters: while a writer holds the lock, pages of the
// tip already read are served at once; a page of a moved tip waits only
// for the snapshot read.
func TestReadsDoNotWaitForWriters(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	if code, _ := ts.get(t, nil, "/"); code != http.StatusOK {
		t.Fatal(code)
	}
	w, err := workflow.Open(workflow.Options{Dir: dir, Actor: "lead"}) // holds the lock until Close
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	start := time.Now()
	for _, path := range []string{"/", "/task/T-4k9x2m", "/inbox", "/stats"} {
		if code, _ := ts.get(t, nil, path); code != http.StatusOK {
			t.Errorf("GET %s: %d", path, code)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("pages took %s while a writer held the lock", d)
	}
}
