package ghreview_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/orch-tool/orch/ghreview"
	"github.com/orch-tool/orch/taskfile"
)

// The seed corpora are testdata/fuzz/FuzzParseReviews/ and
// testdata/fuzz/FuzzParseComments/: every fixture of testdata/ (saved,
// paginated and slurped shapes), and hostile variants.

const fuzzTask = "---\nid: T-fuzz00\ntitle: Fuzz\nqueue: provisional\npr_number: 7\n---\n# Fuzz\n\nThe task.\n"

// fuzzParseError checks the error contract of the readers: a *ParseError
// that says what was read, with one line of message.
func fuzzParseError(t *testing.T, err error, what string) {
	t.Helper()
	var pe *ghreview.ParseError
	if !errors.As(err, &pe) || pe.What != what || pe.Msg == "" {
		t.Fatalf("error %T %v, want a *ParseError about %s", err, err, what)
	}
}

// sameJSON: a and b marshal to the same JSON (time zones compare by
// instant and offset, not by *time.Location).
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// checkImport decides on reviews and comments for a task file and, when
// there is feedback, writes it as orch does (a rejection round) and checks
// that it reads back: one issue per imported comment, the blocking count,
// and the marker that keeps the review from being imported twice.
func checkImport(t *testing.T, reviews []ghreview.Review, comments []ghreview.Comment) {
	t.Helper()
	f, err := taskfile.Parse("tasks/T-fuzz00.md", []byte(fuzzTask))
	if err != nil {
		t.Fatal(err)
	}
	fb, outcome := ghreview.Decide(reviews, comments, ghreview.ImportedIn(f.Src), 1)
	if fb == nil {
		if outcome == ghreview.ChangesRequested {
			t.Fatal("changes requested without feedback")
		}
		return
	}
	if outcome != ghreview.ChangesRequested || len(fb.Sources) == 0 {
		t.Fatalf("feedback with outcome %q and %d sources", outcome, len(fb.Sources))
	}
	out, err := f.AddRound(taskfile.Round{Number: 1, Verdict: "CHANGES_REQUESTED", Sources: fb.Sources})
	if err != nil {
		if errors.Is(err, taskfile.ErrTooLarge) {
			return // too large for a task file: refused, not mangled
		}
		t.Fatalf("AddRound: %v", err)
	}
	if problems := out.Validate(); len(problems) > 0 {
		t.Fatalf("the import made the file invalid: %v\n%s", taskfile.Problems(problems), out.Src)
	}
	if !slices.Contains(fb.Included, fb.Review.ID) {
		t.Fatalf("review %d imported but not among the included %v", fb.Review.ID, fb.Included)
	}
	if again, outcome := ghreview.Decide(reviews, comments, ghreview.ImportedIn(out.Src, fb.Included...), 2); again != nil || outcome != ghreview.AlreadyImported {
		t.Fatalf("the same review imported twice (outcome %q)", outcome)
	}
	rounds := out.FeedbackRounds()
	if len(rounds) != 1 || len(rounds[0].Sources) != len(fb.Sources) {
		t.Fatalf("want one round with %d sources, got %d rounds\n%s", len(fb.Sources), len(rounds), out.Src)
	}
	var issues []taskfile.Issue
	for _, src := range rounds[0].Sources {
		issues = append(issues, src.Issues...)
	}
	blocking := 0
	for _, is := range issues {
		if is.Blocking {
			blocking++
		}
	}
	if len(issues) != fb.Comments || blocking != fb.Blocking {
		t.Fatalf("imported %d comments (%d blocking), read back %d issues (%d blocking)\n%s", fb.Comments, fb.Blocking, len(issues), blocking, out.Src)
	}
}

// FuzzParseReviews: ParseReviews either fails with a *ParseError, or
// returns reviews that each have an id and a state, that survive a JSON
// round trip, and whose import (with no line comments) reads back.
func FuzzParseReviews(f *testing.F) {
	f.Add([]byte(`[{"id":1,"user":{"login":"a"},"body":"fix","state":"CHANGES_REQUESTED","submitted_at":"2026-02-06T16:30:00Z"}]`))
	f.Add([]byte(`[][{"id":2,"state":"APPROVED"}]`))
	f.Add([]byte(`[[{"id":3,"state":"COMMENTED"}],[]]`))
	f.Add([]byte(`{"message":"Not Found"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ghreview.ParseReviews(data)
		if err != nil {
			fuzzParseError(t, err, "reviews")
			return
		}
		for i, r := range rs {
			if r.ID == 0 || r.State == "" {
				t.Fatalf("review %d accepted without id or state: %+v", i+1, r)
			}
		}
		rs = append([]ghreview.Review{}, rs...) // [] rather than null
		b, err := json.Marshal(rs)
		if err != nil {
			return // a time outside what JSON can write: nothing to compare
		}
		again, err := ghreview.ParseReviews(b)
		if err != nil || !sameJSON(t, rs, append([]ghreview.Review{}, again...)) {
			t.Fatalf("round trip: %v", err)
		}
		checkImport(t, rs, nil)
	})
}

// FuzzParseComments: ParseComments either fails with a *ParseError, or
// returns comments that each have an id and a path or a review (a comment
// without a path is kept without a location), that survive a JSON
// round trip, and that, under a changes-requested review, import as one
// issue each.
func FuzzParseComments(f *testing.F) {
	f.Add([]byte(`[{"id":1,"pull_request_review_id":9,"path":"a.go","line":3,"body":"BLOCKING: no"}]`))
	f.Add([]byte(`[{"id":1,"pull_request_review_id":9,"path":"a\nb.go","original_line":-1,"body":"x"}]`))
	f.Add([]byte(`[][{"id":2,"path":"b.go","in_reply_to_id":1,"body":"ok"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := ghreview.ParseComments(data)
		if err != nil {
			fuzzParseError(t, err, "comments")
			return
		}
		for i, c := range cs {
			if c.ID == 0 || c.Path == "" && c.ReviewID == 0 {
				t.Fatalf("comment %d accepted without id, or without both path and review: %+v", i+1, c)
			}
		}
		cs = append([]ghreview.Comment{}, cs...)
		b, err := json.Marshal(cs)
		if err != nil {
			return
		}
		again, err := ghreview.ParseComments(b)
		if err != nil || !sameJSON(t, cs, append([]ghreview.Comment{}, again...)) {
			t.Fatalf("round trip: %v", err)
		}
		var id int64 = 9
		if len(cs) > 0 && cs[0].ReviewID != 0 {
			id = cs[0].ReviewID
		}
		review := ghreview.Review{ID: id, User: ghreview.User{Login: "alice"}, State: "CHANGES_REQUESTED", Body: "Please fix.",
			SubmittedAt: time.Date(2026, 2, 6, 16, 30, 0, 0, time.UTC)}
		checkImport(t, []ghreview.Review{review}, cs)
	})
}
