package workflow

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/ghreview"
	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/refusal"
	"github.com/orch-tool/orch/taskfile"
)

// TestCheckTexts: one text is at most taskfile.MaxText bytes of UTF-8 (not
// characters), and the refusal names the text, its size and the limit, as
// a usage error.
func TestCheckTexts(t *testing.T) {
	ptr := func(s string) *string { return &s }
	for _, c := range []struct {
		name  string
		texts []namedText
		field string // the text refused; "" when all are taken
		size  int
	}{
		{name: "none"},
		{name: "empty", texts: []namedText{{"the message (-m)", ptr("")}}},
		{name: "at the limit", texts: []namedText{{"the message (-m)", ptr(strings.Repeat("x", taskfile.MaxText))}}},
		{name: "one byte over", texts: []namedText{{"the message (-m)", ptr(strings.Repeat("x", taskfile.MaxText+1))}}, field: "the message (-m)", size: taskfile.MaxText + 1},
		{name: "at the limit in two-byte characters", texts: []namedText{{"the note (-m)", ptr(strings.Repeat("é", taskfile.MaxText/2))}}},
		{name: "bytes, not characters", texts: []namedText{{"the note (-m)", ptr(strings.Repeat("é", taskfile.MaxText/2+1))}}, field: "the note (-m)", size: taskfile.MaxText + 2},
		{name: "the first too long is named", texts: []namedText{{"a", ptr("ok")}, {"b", ptr(strings.Repeat("x", 5<<20))}, {"c", ptr(strings.Repeat("x", 6<<20))}}, field: "b", size: 5 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkTexts(c.texts...)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var tl *TextTooLongError
			if !errors.As(err, &tl) {
				t.Fatalf("err = %v, want a *TextTooLongError", err)
			}
			if tl.Field != c.field || tl.Size != c.size || tl.Limit != taskfile.MaxText || tl.Next.Advice != AdviseShortenText {
				t.Errorf("got %+v, want field %q, size %d, limit %d and the advice to shorten it", tl, c.field, c.size, taskfile.MaxText)
			}
			if want := c.field + " is "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "the limit is 65536 bytes (64 KiB)") {
				t.Errorf("message %q", err)
			}
			var usage *UsageError
			if !errors.As(err, &usage) || usage.Msg != err.Error() || usage.Next.Advice != tl.Next.Advice {
				t.Errorf("not a usage error: %#v", usage)
			}
		})
	}
}

// TestTextLimitEveryDoor: every Engine method that writes a text given to
// it (into a task file, the messages/ inbox, the event log or a commit
// message) refuses one over taskfile.MaxText, whatever door called it (the
// command line, orch mcp and the board all call these), and changes
// nothing: no ref moves, no file of the view changes, no event is logged.
func TestTextLimitEveryDoor(t *testing.T) {
	dir := rulesRepo(t, rulesTeam)
	// One task in each queue a door acts on.
	prov := mustNew(t, dir, NewTask{Title: "Provisional"})
	work(t, dir, "agent-a", prov)
	rej := mustNew(t, dir, NewTask{Title: "Rejected, then claimed again"})
	work(t, dir, "agent-a", rej)
	as(t, dir, "lead", false, func(e *Engine) {
		if _, err := e.Review(rej, &ReviewInput{Issues: []ReviewIssue{{Severity: "HIGH", Title: "Fork start does not snap"}}}); err != nil {
			t.Fatal(err)
		}
	})
	claimed := mustNew(t, dir, NewTask{Title: "Claimed"})
	blocked := mustNew(t, dir, NewTask{Title: "Blocked"})
	failed := mustNew(t, dir, NewTask{Title: "Failed"})
	as(t, dir, "agent-b", true, func(e *Engine) {
		if _, err := e.Claim(ClaimOptions{Task: rej}); err != nil {
			t.Fatal(err)
		}
	})
	as(t, dir, "agent-c", true, func(e *Engine) {
		if _, err := e.Claim(ClaimOptions{Task: claimed}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Claim(ClaimOptions{Task: blocked}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Refuse(blocked, blockerRefusal()); err != nil {
			t.Fatal(err)
		}
	})
	as(t, dir, "lead", false, func(e *Engine) {
		if _, err := e.Fail(failed, "Not needed any more."); err != nil {
			t.Fatal(err)
		}
	})

	big := strings.Repeat("x", taskfile.MaxText+1)
	withRefusal := func(change func(r *refusal.Record)) *refusal.Record {
		r := blockerRefusal()
		change(r)
		return r
	}
	review := func(is ...ReviewIssue) *ReviewInput { return &ReviewInput{Issues: is} }
	ghReview := ghreview.Review{ID: 7, State: "CHANGES_REQUESTED", User: ghreview.User{Login: "alice"}, Body: "Please fix.", SubmittedAt: time.Date(2026, 2, 6, 16, 30, 0, 0, time.UTC)}
	bigReview := ghReview
	bigReview.Body = big
	line := 3
	bigComment := ghreview.Comment{ID: 8, ReviewID: 7, User: ghreview.User{Login: "alice"}, Path: "a.go", Line: &line, Body: big}

	for _, c := range []struct {
		door  string
		actor string
		agent bool
		field string
		limit int
		run   func(e *Engine) error
	}{
		{"new --body", "lead", false, "the body (--body or -F)", 0, func(e *Engine) error {
			_, err := e.New(NewTask{Title: "Big", Body: big})
			return err
		}},
		{"reject -m", "lead", false, "the feedback (-m or -F)", 0, func(e *Engine) error { _, err := e.Reject(prov, big); return err }},
		{"reject --amend", "lead", false, "the note (-m or -F)", 0, func(e *Engine) error { _, err := e.AmendRejection(rej, big); return err }},
		{"review: an issue's problem", "lead", false, "issue 2's problem", 0, func(e *Engine) error {
			_, err := e.Review(prov, review(ReviewIssue{Severity: "LOW", Title: "Name"}, ReviewIssue{Severity: "HIGH", Title: "Snap", Problem: big}))
			return err
		}},
		{"review: an issue's title", "lead", false, "issue 1's title", 0, func(e *Engine) error {
			_, err := e.Review(prov, review(ReviewIssue{Severity: "HIGH", Title: big}))
			return err
		}},
		{"review: an issue's fix", "lead", false, "issue 1's fix", 0, func(e *Engine) error {
			_, err := e.Review(prov, review(ReviewIssue{Severity: "HIGH", Title: "Snap", Fix: big}))
			return err
		}},
		{"review: an issue's why", "lead", false, "issue 1's why", 0, func(e *Engine) error {
			_, err := e.Review(prov, review(ReviewIssue{Severity: "HIGH", Title: "Snap", Why: big}))
			return err
		}},
		{"review: an issue's fix_patch", "lead", false, "issue 1's fix_patch", 0, func(e *Engine) error {
			_, err := e.Review(prov, review(ReviewIssue{Severity: "HIGH", Title: "Snap", FixPatch: big}))
			return err
		}},
		{"review: the notes", "lead", false, "the review's notes (-m, or notes in -F)", 0, func(e *Engine) error {
			_, err := e.Review(prov, &ReviewInput{Notes: big})
			return err
		}},
		{"approve -m", "lead", false, "the notes (-m)", 0, func(e *Engine) error { _, err := e.Approve(prov, big); return err }},
		{"respond -m", "agent-b", true, "the response (-m)", 0, func(e *Engine) error {
			_, err := e.Respond(rej, "R1.1", "fixed", big, "")
			return err
		}},
		{"pause -m", "agent-c", true, "the note (-m)", 0, func(e *Engine) error { _, err := e.Pause(claimed, big); return err }},
		{"fail -m", "agent-c", true, "the reason (-m)", 0, func(e *Engine) error { _, err := e.Fail(claimed, big); return err }},
		{"escalate -m", "agent-c", true, "the message (-m)", 0, func(e *Engine) error { _, err := e.Escalate(claimed, big); return err }},
		{"submit -m", "agent-c", true, "the note (-m)", 0, func(e *Engine) error {
			_, err := e.Submit(claimed, SubmitOptions{Note: big})
			return err
		}},
		{"submit --create-pr's check", "agent-c", true, "the note (-m)", 0, func(e *Engine) error {
			_, err := e.SubmitCheck(claimed, SubmitOptions{Note: big})
			return err
		}},
		{"refuse: reason_detail", "agent-c", true, "the refusal's reason_detail (--detail)", 0, func(e *Engine) error {
			_, err := e.Refuse(claimed, withRefusal(func(r *refusal.Record) { r.ReasonDetail = big }))
			return err
		}},
		{"refuse: an attempt", "agent-c", true, "the refusal's what_attempted, item 2 (--attempted)", 0, func(e *Engine) error {
			_, err := e.Refuse(claimed, withRefusal(func(r *refusal.Record) { r.WhatAttempted[1] = big }))
			return err
		}},
		{"refuse: evidence data", "agent-c", true, "the refusal's evidence, item 1: data (--evidence)", 0, func(e *Engine) error {
			_, err := e.Refuse(claimed, withRefusal(func(r *refusal.Record) { r.Evidence[0].Data = big }))
			return err
		}},
		{"refuse: an alternative task's scope", "agent-c", true, "the refusal's alternative_tasks, item 1: scope (--alt-task)", 0, func(e *Engine) error {
			_, err := e.Refuse(claimed, withRefusal(func(r *refusal.Record) { r.AlternativeTasks = []refusal.AlternativeTask{{Title: "Part", Scope: big}} }))
			return err
		}},
		{"refuse: an invalid refusal is not logged either", "agent-c", true, "the refusal's blocking_factor (--blocking-factor)", 0, func(e *Engine) error {
			_, err := e.Refuse(claimed, &refusal.Record{ReasonType: refusal.Blocker, BlockingFactor: big})
			return err
		}},
		{"refuse: the texts together", "agent-c", true, "the refusal (its texts together)", refusal.MaxBytes, func(e *Engine) error {
			_, err := e.Refuse(claimed, withRefusal(func(r *refusal.Record) {
				for range 4 {
					r.WhatAttempted = append(r.WhatAttempted, strings.Repeat("Ran the tests. ", taskfile.MaxText/16))
				}
				r.ReasonDetail = strings.Repeat("y", taskfile.MaxText)
			}))
			return err
		}},
		{"reopen -m", "lead", false, "the reason (-m or -F)", 0, func(e *Engine) error { _, err := e.Reopen(failed, big); return err }},
		{"decide -m", "lead", false, "the message (-m)", 0, func(e *Engine) error {
			_, err := e.Decide(blocked, "override", big, false)
			return err
		}},
		{"pr import: a review's body", "lead", false, "GitHub review 7's body", 0, func(e *Engine) error {
			_, err := e.ImportPR(prov, []ghreview.Review{bigReview}, nil)
			return err
		}},
		{"pr import: a comment's body", "lead", false, "GitHub comment 8's body", 0, func(e *Engine) error {
			_, err := e.ImportPR(prov, []ghreview.Review{ghReview}, []ghreview.Comment{bigComment})
			return err
		}},
	} {
		t.Run(c.door, func(t *testing.T) {
			before := repoSnapshot(t, dir)
			as(t, dir, c.actor, c.agent, func(e *Engine) {
				err := c.run(e)
				var tl *TextTooLongError
				if !errors.As(err, &tl) {
					t.Fatalf("err = %v, want a *TextTooLongError", err)
				}
				limit := taskfile.MaxText
				if c.limit != 0 {
					limit = c.limit
				}
				if tl.Field != c.field || tl.Limit != limit || tl.Size <= limit {
					t.Errorf("refused %q (%d bytes, limit %d), want %q", tl.Field, tl.Size, tl.Limit, c.field)
				}
			})
			if after := repoSnapshot(t, dir); after != before {
				t.Errorf("the repository changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}

	// A text at the limit goes through: the whole message is in the inbox.
	exact := strings.Repeat("é", taskfile.MaxText/2)
	as(t, dir, "agent-c", true, func(e *Engine) {
		if _, err := e.Escalate(claimed, exact); err != nil {
			t.Fatalf("a text at the limit: %v", err)
		}
	})
	msgs, _ := filepath.Glob(filepath.Join(dir, ".orchestrator", "messages", "*-"+claimed+".md"))
	if len(msgs) != 1 {
		t.Fatalf("messages: %v", msgs)
	}
	if data, _ := os.ReadFile(msgs[0]); !strings.Contains(string(data), exact) {
		t.Errorf("the message lacks the text")
	}
}

// repoSnapshot is every ref and every file of the view, as text.
func repoSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(testgit.Git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)") + "\n")
	view := filepath.Join(dir, ".orchestrator")
	err := filepath.WalkDir(view, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(view, p)
		fmt.Fprintf(&b, "%s %x\n", rel, sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestCheckTextsCleans: a text's control characters are made visible in
// place before it is measured and written: an agent's note cannot carry a
// terminal's escape sequences into a task file, a prompt or orch show.
func TestCheckTextsCleans(t *testing.T) {
	note := "done\x1b]52;c;ZXZpbA==\x07\x1b]0;title\x07 ok"
	if err := checkTexts(namedText{"the note (-m)", &note}); err != nil {
		t.Fatal(err)
	}
	if want := `done\x1b]52;c;ZXZpbA==\x07\x1b]0;title\x07 ok`; note != want {
		t.Errorf("note = %q, want %q", note, want)
	}
}
