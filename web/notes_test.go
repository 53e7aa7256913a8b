package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/orch-tool/orch/workflow"
)

// TestTaskNotes: a task's page shows its submit note, on its own and not
// in the body, and every verdict with its note: the approval's notes are
// only in the event log and the commit.
func TestTaskNotes(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	provisionalWithWork(t, dir)
	_, body := ts.get(t, nil, "/task/T-3vfp8e")
	mustContain(t, "provisional task", body, `aria-label="submit notes"`, "agent-b, ", "Look at the &lt;b&gt;settings&lt;/b&gt; migration first.")
	if n := strings.Count(body, "migration first."); n != 2 { // the panel and the file as written
		t.Errorf("the submit note shows %d times, want twice (its panel and the raw file)", n)
	}
	as(t, dir, "lead", func(e *workflow.Engine) error {
		_, err := e.Approve("T-3vfp8e", "Ship it, <i>but</i> watch the theme.")
		return err
	})
	code, body := ts.get(t, nil, "/task/T-3vfp8e")
	if code != http.StatusOK {
		t.Fatalf("GET: %d", code)
	}
	mustContain(t, "approved task", body, `aria-label="verdicts"`, "<b>approve</b> by <span class=\"who\">lead</span>",
		"Ship it, &lt;i&gt;but&lt;/i&gt; watch the theme.")
	// A rejection is a verdict too; its text is in its round.
	as(t, dir, "lead", func(e *workflow.Engine) error {
		_, err := e.Reject("T-5ncg1r", "The cache key misses the locale.")
		return err
	})
	_, body = ts.get(t, nil, "/task/T-5ncg1r")
	mustContain(t, "rejected task", body, `aria-label="verdicts"`, "<b>reject</b> by", "CHANGES_REQUESTED", "its text is under Review feedback",
		"The cache key misses the locale.")
}
