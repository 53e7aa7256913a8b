package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/taskfile"
)

// The seed corpus of FuzzReview is testdata/fuzz/FuzzReview/ (go test fuzz
// v1 files): the review documents of the testscript scripts and of the
// protocol's examples, and hostile variants of them.

var reviewErrAt = regexp.MustCompile(`^review\.json:(\d+):(\d+): `)

// FuzzReview: ParseReview (the reader of `orch review -F`) either refuses
// the document with a *UsageError that names the file (and, for a syntax or
// type error, a line and column inside it), or returns a review that
//   - survives a JSON round trip unchanged,
//   - when it passes Review's checks, is written into a task file as a
//     review round that reads back with the same issues, in order, with the
//     IDs R<round>.<n>, and leaves the file valid.
func FuzzReview(f *testing.F) {
	f.Add([]byte(`{"issues":[{"severity":"HIGH","title":"SQL injection","location":"src/api/users.py:56","problem":"input is interpolated","fix":"use a parameterised query","why":"attackers"}],"reopen":["R1.2"],"notes":"see above"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"issues":[{"severity":"low","title":"nit"}]}` + "\n"))
	f.Add([]byte(`{"issues":[{"severity":"HIGH","title":"x","extra":1}]}`))
	f.Add([]byte("{\"issues\": [\n {\"severity\": 3}\n]}"))
	f.Add([]byte(`{"notes":"a"} {"notes":"b"}`))
	// The review protocol's own forms: its ids, blocking flags, fix_patch and
	// older severity names.
	f.Add([]byte(`{"issues":[{"id":"TL-001","severity":"CRITICAL","blocking":true,"title":"SQL Injection Vulnerability","location":"src/api/users.py:56","problem":"User input directly interpolated into SQL query","fix":"Use parameterized query","why":"Allows attackers to execute arbitrary SQL commands","fix_patch":"--- a/src/api/users.py\n+++ b/src/api/users.py\n@@ -56 +56 @@\n-q = f\"SELECT * FROM users WHERE id = {user_id}\"\n+q = \"SELECT * FROM users WHERE id = ?\"\n"},{"id":"TL-002","severity":"SUGGESTION","blocking":false,"title":"Consider adding rate limiting"}]}`))
	f.Add([]byte(`{"issues":[{"blocking":true,"title":"only the flag"},{"severity":"nit","title":"x","id":"R1.2"}]}`))
	f.Add([]byte(`{"issues":[{"severity":"MINOR","title":"x","fix_patch":"` + "```" + `\n## not a heading\n\n  - Response: FIXED (abcd) — fake\n"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := ParseReview("review.json", data)
		if err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) || in != nil {
				t.Fatalf("ParseReview error %T %v with review %v", err, err, in)
			}
			if !strings.HasPrefix(ue.Msg, "review.json") {
				t.Fatalf("error does not name the file: %q", ue.Msg)
			}
			if m := reviewErrAt.FindStringSubmatch(ue.Msg); m != nil {
				line, _ := strconv.Atoi(m[1])
				col, _ := strconv.Atoi(m[2])
				if line < 1 || line > bytes.Count(data, []byte("\n"))+1 || col < 1 {
					t.Fatalf("error position %d:%d outside the document: %q", line, col, ue.Msg)
				}
			}
			return
		}
		if in == nil {
			t.Fatal("ParseReview returned neither a review nor an error")
		}
		out, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseReview("review.json", out)
		if err != nil || !reflect.DeepEqual(in, again) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, in, again)
		}
		if checkReviewInput(in) != nil {
			return
		}
		checkReviewRendered(t, in)
	})
}

// checkReviewRendered writes the issues of in as the first review round of
// a task file, the way Review does, and reads them back.
func checkReviewRendered(t *testing.T, in *ReviewInput) {
	t.Helper()
	base, err := taskfile.Parse("tasks/T-fuzz00.md", []byte("---\nid: T-fuzz00\ntitle: Fuzz\nqueue: provisional\n---\n# Fuzz\n\nThe task.\n"))
	if err != nil {
		t.Fatal(err)
	}
	var issues []taskfile.Issue
	for i, is := range in.Issues {
		issues = append(issues, reviewIssue(1, i, is))
	}
	src := taskfile.Source{From: "lead via orch review", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Text: strings.TrimSpace(in.Notes), Issues: issues}
	f, err := base.AddRound(taskfile.Round{Number: 1, Verdict: VerdictChangesRequested, Sources: []taskfile.Source{src}})
	if err != nil {
		if errors.Is(err, taskfile.ErrTooLarge) {
			return // too large for a task file: refused, not mangled
		}
		t.Fatalf("AddRound: %v", err)
	}
	if problems := f.Validate(); len(problems) > 0 {
		t.Fatalf("the review made the file invalid: %v\n%s", taskfile.Problems(problems), f.Src)
	}
	rounds := f.FeedbackRounds()
	if len(rounds) != 1 || len(rounds[0].Sources) != 1 {
		t.Fatalf("want one round with one source, got %+v\n%s", rounds, f.Src)
	}
	got := rounds[0].Sources[0].Issues
	if len(got) != len(issues) {
		t.Fatalf("wrote %d issues, read back %d\n%s", len(issues), len(got), f.Src)
	}
	for i, is := range issues {
		g := got[i]
		if g.ID != fmt.Sprintf("R1.%d", i+1) || g.ID != is.ID || g.Severity != is.Severity || g.Blocking != is.Blocking {
			t.Fatalf("issue %d read back as %s %s (blocking %v), want %s %s\n%s", i+1, g.ID, g.Severity, g.Blocking, is.ID, is.Severity, f.Src)
		}
		if want := strings.Join(strings.Fields(strings.ReplaceAll(is.Location, "`", "'")), " "); g.Location != want {
			t.Fatalf("issue %d location %q read back as %q\n%s", i+1, is.Location, g.Location, f.Src)
		}
		if want := strings.Join(strings.Fields(is.Title), " "); g.Title != want {
			t.Fatalf("issue %d title %q read back as %q\n%s", i+1, is.Title, g.Title, f.Src)
		}
		if g.ReviewerIssueID != is.ReviewerIssueID || g.FixPatch != is.FixPatch {
			t.Fatalf("issue %d id %q and patch %q read back as %q and %q\n%s", i+1, is.ReviewerIssueID, is.FixPatch, g.ReviewerIssueID, g.FixPatch, f.Src)
		}
	}
	// An answer to the last issue goes below all of it, patch included.
	if len(issues) > 0 {
		last := issues[len(issues)-1]
		f2, err := f.SetIssueResponse(last.ID, taskfile.Response{Status: "FIXED", Text: "done"})
		if err != nil {
			if errors.Is(err, taskfile.ErrTooLarge) {
				return
			}
			t.Fatalf("SetIssueResponse: %v", err)
		}
		back := f2.FeedbackRounds()[0].Sources[0].Issues
		if len(back) != len(issues) || back[len(back)-1].FixPatch != last.FixPatch || len(back[len(back)-1].Responses) != 1 {
			t.Fatalf("after an answer: %+v\n%s", back, f2.Src)
		}
	}
	if rounds[0].Verdict != VerdictChangesRequested {
		t.Fatalf("verdict %q", rounds[0].Verdict)
	}
}
