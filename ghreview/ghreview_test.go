package ghreview_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/ghreview"
	"github.com/orch-tool/orch/taskfile"
)

// The fixtures under testdata/ are GitHub's REST shapes, field for field:
// GET /repos/{o}/{r}/pulls/{n}/reviews and .../comments, pretty-printed as a
// saved file, compact and concatenated as `gh api --paginate` prints pages,
// and as an array of pages as `gh api --paginate --slurp` prints them.

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func reviews(t *testing.T, name string) []ghreview.Review {
	t.Helper()
	rs, err := ghreview.ParseReviews(fixture(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rs
}

func comments(t *testing.T, name string) []ghreview.Comment {
	t.Helper()
	cs, err := ghreview.ParseComments(fixture(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cs
}

func ptr(i int) *int { return &i }

func TestParseReviewsFields(t *testing.T) {
	rs := reviews(t, "reviews_changes_requested.json")
	if len(rs) != 3 {
		t.Fatalf("got %d reviews, want 3", len(rs))
	}
	want := ghreview.Review{
		ID: 2002, User: ghreview.User{Login: "alice"},
		Body:        "Fork start is not snapped like the other shapes.\r\n\r\nPlease fix before merge.",
		State:       "CHANGES_REQUESTED",
		SubmittedAt: time.Date(2026, 2, 6, 16, 30, 0, 0, time.UTC),
		CommitID:    "6dcb09b5b57875f334f61aebed695e2e4193db5e",
		HTMLURL:     "https://github.com/acme/app/pull/48#pullrequestreview-2002",
	}
	if !reflect.DeepEqual(rs[1], want) {
		t.Errorf("review 2:\n got %+v\nwant %+v", rs[1], want)
	}
	// A pending review has no submitted_at.
	if rs[2].State != "PENDING" || !rs[2].SubmittedAt.IsZero() {
		t.Errorf("pending review: %+v", rs[2])
	}
}

func TestParseCommentsFields(t *testing.T) {
	cs := comments(t, "comments_changes_requested.json")
	if len(cs) != 7 {
		t.Fatalf("got %d comments, want 7", len(cs))
	}
	want := ghreview.Comment{
		ID: 3001, ReviewID: 2002, User: ghreview.User{Login: "alice"},
		Body: "Fork start uses raw svgPos instead of snapResult. Should snap like polygon/rect/circle.",
		Path: "src/components/SketchView2D.tsx", Line: ptr(1709), OriginalLine: ptr(1709),
		CreatedAt: time.Date(2026, 2, 6, 16, 29, 0, 0, time.UTC),
		HTMLURL:   "https://github.com/acme/app/pull/48#discussion_r3001",
	}
	if !reflect.DeepEqual(cs[0], want) {
		t.Errorf("comment 1:\n got %+v\nwant %+v", cs[0], want)
	}
	if cs[3].InReplyTo != 3002 {
		t.Errorf("reply: in_reply_to_id = %d, want 3002", cs[3].InReplyTo)
	}
	if cs[0].InReplyTo != 0 {
		t.Errorf("a comment without in_reply_to_id has InReplyTo %d", cs[0].InReplyTo)
	}
	// Outdated: line null, original_line set.
	if cs[4].Line != nil || cs[4].OriginalLine == nil || *cs[4].OriginalLine != 88 {
		t.Errorf("outdated comment: line %v original_line %v", cs[4].Line, cs[4].OriginalLine)
	}
	// A file comment has neither.
	if cs[5].Line != nil || cs[5].OriginalLine != nil {
		t.Errorf("file comment: line %v original_line %v", cs[5].Line, cs[5].OriginalLine)
	}
}

// Every way gh can print the pages of one list reads the same.
func TestParsePagination(t *testing.T) {
	one := reviews(t, "reviews_changes_requested.json")
	for _, name := range []string{"reviews_paginated.json", "reviews_slurp.json"} {
		if got := reviews(t, name); !reflect.DeepEqual(got, one) {
			t.Errorf("%s differs from the single page:\n got %+v\nwant %+v", name, got, one)
		}
	}
	cone := comments(t, "comments_changes_requested.json")
	for _, name := range []string{"comments_paginated.json", "comments_paginated_nl.json", "comments_slurp.json"} {
		if got := comments(t, name); !reflect.DeepEqual(got, cone) {
			t.Errorf("%s differs from the single page", name)
		}
	}
	// The paginated fixture really is several arrays back to back.
	if b := fixture(t, "comments_paginated.json"); bytes.Count(b, []byte("}][{")) != 2 {
		t.Fatalf("comments_paginated.json is not three concatenated pages")
	}
	// Empty pages are fine, before and after.
	rs, err := ghreview.ParseReviews([]byte("[]\n" + string(fixture(t, "reviews_changes_requested.json")) + "[]"))
	if err != nil || len(rs) != 3 {
		t.Fatalf("empty pages around a page: %d reviews, %v", len(rs), err)
	}
	for _, empty := range []string{"[]", "[]\n", "[][]", "[[]]", "[[],[]]", " \n[]\n"} {
		rs, err := ghreview.ParseReviews([]byte(empty))
		if err != nil || len(rs) != 0 {
			t.Errorf("%q: %v, %d reviews; want none and no error", empty, err, len(rs))
		}
	}
}

func TestParseMalformed(t *testing.T) {
	review := `{"id":1,"user":{"login":"a"},"body":"","state":"APPROVED","submitted_at":"2026-02-06T16:30:00Z"}`
	comment := `{"id":1,"pull_request_review_id":1,"user":{"login":"a"},"body":"x","path":"a.go","line":3}`
	reviewCases := map[string]string{
		"empty":                  "",
		"blank":                  " \n\t",
		"null":                   "null",
		"not an array":           `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/pulls/reviews#list-reviews-for-a-pull-request","status":"404"}`,
		"a string":               `"[]"`,
		"a number":               `48`,
		"garbage":                "<html><body>502 Bad Gateway</body></html>",
		"truncated":              `[` + review + `,{"id":2,`,
		"trailing garbage":       `[` + review + `]garbage`,
		"second page not array":  `[` + review + `]{"id":2}`,
		"id is a string":         `[{"id":"1","state":"APPROVED"}]`,
		"state is a number":      `[{"id":1,"state":3}]`,
		"user is a string":       `[{"id":1,"state":"APPROVED","user":"alice"}]`,
		"submitted_at not time":  `[{"id":1,"state":"APPROVED","submitted_at":"yesterday"}]`,
		"item is a number":       `[1,2,3]`,
		"item is a string":       `["APPROVED"]`,
		"item is null":           `[null]`,
		"no state":               `[{"id":1,"body":"x"}]`,
		"no id":                  `[{"state":"APPROVED"}]`,
		"comments as reviews":    string(fixture(t, "comments_approved.json")),
		"slurp with bad item":    `[[` + review + `],[1]]`,
		"nested page not object": `[[` + review + `],"x"]`,
	}
	for name, in := range reviewCases {
		rs, err := ghreview.ParseReviews([]byte(in))
		var pe *ghreview.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("reviews, %s: got %d reviews, err %v; want a ParseError", name, len(rs), err)
			continue
		}
		if pe.What != "reviews" || pe.Error() == "" {
			t.Errorf("reviews, %s: %#v", name, pe)
		}
	}
	commentCases := map[string]string{
		"not an array":        `{"message":"Bad credentials"}`,
		"garbage":             "\x00\x01\x02",
		"line is a string":    `[{"id":1,"path":"a.go","line":"12"}]`,
		"in_reply_to_id text": `[{"id":1,"path":"a.go","in_reply_to_id":"3"}]`,
		"path is a number":    `[{"id":1,"path":7}]`,
		"no id":               `[{"path":"a.go","body":"x"}]`,
		"item is null":        `[null]`,
		"truncated":           `[` + comment,
		// The reviews of a pull request are not its line comments (a
		// common mistake: the same file passed twice).
		"reviews as comments": string(fixture(t, "reviews_changes_requested.json")),
	}
	for name, in := range commentCases {
		cs, err := ghreview.ParseComments([]byte(in))
		var pe *ghreview.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("comments, %s: got %d comments, err %v; want a ParseError", name, len(cs), err)
			continue
		}
		if pe.What != "comments" {
			t.Errorf("comments, %s: %#v", name, pe)
		}
	}
	// The good ones parse, to show the bad ones fail for their fault only.
	if _, err := ghreview.ParseReviews([]byte("[" + review + "]")); err != nil {
		t.Fatal(err)
	}
	if _, err := ghreview.ParseComments([]byte("[" + comment + "]")); err != nil {
		t.Fatal(err)
	}
}

// Input beyond MaxJSON is refused without being decoded.
func TestParseHugeInputBounded(t *testing.T) {
	huge := make([]byte, ghreview.MaxJSON+1)
	huge[0] = '['
	for i := 1; i < len(huge)-1; i++ {
		huge[i] = ' '
	}
	huge[len(huge)-1] = ']'
	for _, parse := range []func([]byte) error{
		func(b []byte) error { _, err := ghreview.ParseReviews(b); return err },
		func(b []byte) error { _, err := ghreview.ParseComments(b); return err },
	} {
		err := parse(huge)
		var pe *ghreview.ParseError
		if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "larger than") {
			t.Errorf("huge input: %v; want a ParseError saying it is too large", err)
		}
	}
	// An array of pages (--slurp) is one level of nesting; deeper nesting
	// is refused, so the work stays linear in the input (re-reading the
	// input once per level made 1 MB of nested brackets take minutes).
	for _, n := range []int{3, 4, 5000} {
		deep := strings.Repeat("[", n) + strings.Repeat(" ", 1<<20) + strings.Repeat("]", n)
		_, err := ghreview.ParseReviews([]byte(deep))
		var pe *ghreview.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%d levels of nesting: %v; want a ParseError", n, err)
		}
	}
}

func TestMarkerAndImported(t *testing.T) {
	if got := ghreview.Marker(2002); got != "<!-- github-review: 2002 -->" {
		t.Fatalf("Marker = %q", got)
	}
	src := []byte("body\n\n<!-- github-review: 2002 -->\n")
	if !ghreview.LegacyImported(src, 2002) {
		t.Error("2002 not seen as imported")
	}
	for _, id := range []int64{200, 20, 2, 12002, 20021} {
		if ghreview.LegacyImported(src, id) {
			t.Errorf("%d seen as imported in %q", id, src)
		}
	}
}

func sortedIDs(ids []int64) []int64 { slices.Sort(ids); return ids }

// allIssues lists the issues of every source of the feedback, in order.
func allIssues(fb *ghreview.Feedback) []taskfile.Issue {
	var out []taskfile.Issue
	for _, s := range fb.Sources {
		out = append(out, s.Issues...)
	}
	return out
}

func issue(id, sev, loc, problem string) taskfile.Issue {
	return taskfile.Issue{ID: id, Severity: sev, Blocking: sev == "BLOCKING", Location: loc, Problem: problem}
}

const snapTSX = "src/components/SketchView2D.tsx"

// The fixture with a changes-requested review: its body, then each line
// comment by path and line; the changes-requested review's comments and
// "BLOCKING:" comments block, the rest are suggestions; replies and empty
// comments are left out; an outdated comment keeps its original line.
func TestDecideChangesRequested(t *testing.T) {
	for _, pair := range [][2]string{
		{"reviews_changes_requested.json", "comments_changes_requested.json"},
		{"reviews_paginated.json", "comments_paginated.json"},
		{"reviews_slurp.json", "comments_slurp.json"},
	} {
		t.Run(pair[0], func(t *testing.T) {
			fb, out := ghreview.Decide(reviews(t, pair[0]), comments(t, pair[1]), ghreview.ImportedIn([]byte("# A task\n")), 1)
			if out != ghreview.ChangesRequested || fb == nil {
				t.Fatalf("outcome %q, feedback %v", out, fb)
			}
			if fb.Review.ID != 2002 || fb.Blocking != 4 || fb.Comments != 5 {
				t.Errorf("review %d, %d blocking, %d comments; want 2002, 4, 5", fb.Review.ID, fb.Blocking, fb.Comments)
			}
			// alice's deciding review, then bob's comment-only review
			// before it, each under its own name with its own comments.
			if len(fb.Sources) != 2 {
				t.Fatalf("%d sources", len(fb.Sources))
			}
			s := fb.Sources[0]
			if s.From != "GitHub PR review by alice" || !s.Time.Equal(time.Date(2026, 2, 6, 16, 30, 0, 0, time.UTC)) {
				t.Errorf("source %q at %v", s.From, s.Time)
			}
			wantText := "Fork start is not snapped like the other shapes.\n\nPlease fix before merge.\n\n" +
				"https://github.com/acme/app/pull/48#pullrequestreview-2002"
			if s.Text != wantText {
				t.Errorf("text:\n got %q\nwant %q", s.Text, wantText)
			}
			want := []taskfile.Issue{
				issue("R1.1", "BLOCKING", "docs/snap.md", "Document the snapping rules."),
				issue("R1.2", "BLOCKING", snapTSX+":1709", "Fork start uses raw svgPos instead of snapResult. Should snap like polygon/rect/circle."),
				issue("R1.3", "BLOCKING", "src/lib/old.ts:88", "This helper is dead code now."),
			}
			if !reflect.DeepEqual(s.Issues, want) {
				t.Errorf("issues:\n got %+v\nwant %+v", s.Issues, want)
			}
			b := fb.Sources[1]
			if b.From != "GitHub PR comments by bob" || b.Text != "A few notes before alice looks.\n\nhttps://github.com/acme/app/pull/48#pullrequestreview-2001" {
				t.Errorf("second source %q: %q", b.From, b.Text)
			}
			want = []taskfile.Issue{
				issue("R1.4", "suggestion", snapTSX+":1826", "Snap computation is duplicated 3 times in handleMouseMove. Compute once at the top."),
				issue("R1.5", "BLOCKING", "src/lib/snap.ts:12", "snapResult can be null here; this crashes on an empty sketch."),
			}
			if !reflect.DeepEqual(b.Issues, want) {
				t.Errorf("bob's issues:\n got %+v\nwant %+v", b.Issues, want)
			}
		})
	}
}

// What Decide returns renders as feedback that parses back to the same
// issues, and the markers make a second import a no-op.
func TestDecideRendersAndParsesBack(t *testing.T) {
	rs, cs := reviews(t, "reviews_changes_requested.json"), comments(t, "comments_changes_requested.json")
	fb, _ := ghreview.Decide(rs, cs, ghreview.ImportedIn(nil), 1)
	md := taskfile.RenderRound(taskfile.Round{Number: 1, Verdict: "CHANGES_REQUESTED", Sources: fb.Sources})
	if strings.Contains(md, "\r") {
		t.Errorf("rendered feedback holds a carriage return:\n%q", md)
	}
	src := []byte("---\nid: T-abcdef\ntitle: Snap\nqueue: rejected\n---\n# Snap\n\n" + md)
	f, err := taskfile.Parse("tasks/T-abcdef-snap.md", src)
	if err != nil {
		t.Fatal(err)
	}
	rounds := f.FeedbackRounds()
	if len(rounds) != 1 || len(rounds[0].Sources) != len(fb.Sources) {
		t.Fatalf("rounds: %+v\n%s", rounds, md)
	}
	var got []taskfile.Issue
	for _, src := range rounds[0].Sources {
		got = append(got, src.Issues...)
	}
	rendered := allIssues(fb)
	if len(got) != len(rendered) {
		t.Fatalf("parsed %d issues, rendered %d:\n%s", len(got), len(rendered), md)
	}
	for i, is := range got {
		w := rendered[i]
		if is.ID != w.ID || is.Severity != w.Severity || is.Blocking != w.Blocking || is.Location != w.Location || !strings.Contains(is.Problem+is.Title, w.Problem) {
			t.Errorf("issue %d parsed as %+v, rendered from %+v", i, is, w)
		}
	}
	if strings.Contains(md, "<!--") {
		t.Errorf("the feedback holds a marker (reviews are recorded in github_reviews):\n%s", md)
	}
	if fb2, out := ghreview.Decide(rs, cs, ghreview.ImportedIn(src, fb.Included...), 2); fb2 != nil || out != ghreview.AlreadyImported {
		t.Errorf("second import: %q %+v", out, fb2)
	}
}

func TestDecideSecondRound(t *testing.T) {
	rs, cs := reviews(t, "reviews_second_round.json"), comments(t, "comments_second_round.json")
	first, _ := ghreview.Decide(reviews(t, "reviews_changes_requested.json"), comments(t, "comments_changes_requested.json"), ghreview.ImportedIn(nil), 1)
	src := []byte("# T\n\n" + first.Sources[0].Text + "\n")
	fb, out := ghreview.Decide(rs, cs, ghreview.ImportedIn(src, first.Included...), 2)
	if out != ghreview.ChangesRequested || fb.Review.ID != 2005 {
		t.Fatalf("outcome %q, review %+v", out, fb)
	}
	s := fb.Sources[0]
	want := []taskfile.Issue{
		issue("R2.1", "BLOCKING", "src/lib/snap.ts:20", "Still null here."),
		issue("R2.2", "suggestion", "src/lib/snap.ts:14", "suggestion: inline this"),
	}
	if got := allIssues(fb); !reflect.DeepEqual(got, want) {
		t.Errorf("issues:\n got %+v\nwant %+v", s.Issues, want)
	}
	wantText := "Changes requested on GitHub.\n\nhttps://github.com/acme/app/pull/48#pullrequestreview-2005"
	if !slices.Equal(fb.Included, []int64{2004, 2005}) {
		t.Errorf("included %v, want 2004 and 2005", fb.Included)
	}
	if s.Text != wantText {
		t.Errorf("text:\n got %q\nwant %q", s.Text, wantText)
	}
	if fb.Blocking != 1 || fb.Comments != 2 {
		t.Errorf("%d blocking, %d comments", fb.Blocking, fb.Comments)
	}
}

func at(h int) time.Time { return time.Date(2026, 3, 1, h, 0, 0, 0, time.UTC) }

func rv(id int64, login, state string, h int) ghreview.Review {
	r := ghreview.Review{ID: id, User: ghreview.User{Login: login}, State: state, Body: "review " + state}
	if h >= 0 {
		r.SubmittedAt = at(h)
	}
	return r
}

func cm(id, review int64, path string, line int, body string) ghreview.Comment {
	c := ghreview.Comment{ID: id, ReviewID: review, Path: path, Body: body}
	if line > 0 {
		c.Line, c.OriginalLine = ptr(line), ptr(line)
	}
	return c
}

func TestDecideTable(t *testing.T) {
	type want struct {
		out      ghreview.Outcome
		review   int64
		blocking int
		comments int
		issues   []string // "ID SEV LOC PROBLEM"
		markers  []int64
	}
	cases := []struct {
		name     string
		reviews  []ghreview.Review
		comments []ghreview.Comment
		src      string
		round    int
		want     want
	}{
		{name: "no reviews", want: want{out: ghreview.NoReviews}},
		{name: "only comments", reviews: []ghreview.Review{rv(1, "a", "COMMENTED", 1), rv(2, "b", "COMMENTED", 2)},
			comments: []ghreview.Comment{cm(10, 1, "a.go", 1, "BLOCKING: bad")},
			want:     want{out: ghreview.OnlyComments}},
		{name: "pending only", reviews: []ghreview.Review{rv(1, "a", "PENDING", -1)}, want: want{out: ghreview.OnlyComments}},
		{name: "approved", reviews: []ghreview.Review{rv(1, "a", "APPROVED", 1)}, want: want{out: ghreview.Approved}},
		{name: "approved after changes requested", reviews: []ghreview.Review{rv(1, "a", "CHANGES_REQUESTED", 1), rv(2, "a", "APPROVED", 2)},
			want: want{out: ghreview.Approved}},
		{name: "approved after changes requested, out of order", reviews: []ghreview.Review{rv(2, "a", "APPROVED", 2), rv(1, "a", "CHANGES_REQUESTED", 1)},
			want: want{out: ghreview.Approved}},
		{name: "changes requested after approval", reviews: []ghreview.Review{rv(1, "a", "APPROVED", 1), rv(2, "b", "CHANGES_REQUESTED", 2)},
			want: want{out: ghreview.ChangesRequested, review: 2, markers: []int64{2}}},
		{name: "dismissed changes request", reviews: []ghreview.Review{rv(1, "a", "DISMISSED", 1)},
			comments: []ghreview.Comment{cm(10, 1, "a.go", 1, "BLOCKING: wrong")},
			want:     want{out: ghreview.OnlyComments}},
		{name: "dismissed after approval", reviews: []ghreview.Review{rv(1, "a", "APPROVED", 1), rv(2, "b", "DISMISSED", 2)},
			want: want{out: ghreview.Approved}},
		{name: "commented after changes requested", reviews: []ghreview.Review{rv(1, "a", "CHANGES_REQUESTED", 1), rv(2, "b", "COMMENTED", 2)},
			comments: []ghreview.Comment{cm(10, 1, "a.go", 3, "fix"), cm(11, 2, "a.go", 4, "later thought")},
			want:     want{out: ghreview.ChangesRequested, review: 1, blocking: 1, comments: 1, issues: []string{"R1.1 BLOCKING a.go:3 fix"}, markers: []int64{1}}},
		{name: "lower-case state", reviews: []ghreview.Review{rv(1, "a", "changes_requested", 1)},
			want: want{out: ghreview.ChangesRequested, review: 1, markers: []int64{1}}},
		{name: "already imported", reviews: []ghreview.Review{rv(1, "a", "CHANGES_REQUESTED", 1)}, src: "x\n<!-- github-review: 1 -->\n",
			want: want{out: ghreview.AlreadyImported}},
		{name: "another review imported", reviews: []ghreview.Review{rv(11, "a", "CHANGES_REQUESTED", 1)}, src: "<!-- github-review: 1 -->",
			want: want{out: ghreview.ChangesRequested, review: 11, markers: []int64{11}}},
		{name: "blocking prefixes", reviews: []ghreview.Review{rv(1, "b", "COMMENTED", 1), rv(2, "a", "CHANGES_REQUESTED", 2)},
			comments: []ghreview.Comment{
				cm(10, 1, "a.go", 1, "BLOCKING: upper"),
				cm(11, 1, "a.go", 2, "blocking:lower, no space"),
				cm(12, 1, "a.go", 3, "  BLOCKING:   indented"),
				cm(13, 1, "a.go", 4, "BLOCKING without a colon"),
				cm(14, 1, "a.go", 5, "not BLOCKING: in the middle"),
				cm(15, 1, "a.go", 6, "**BLOCKING:** bold is not the prefix"),
				cm(16, 2, "a.go", 7, "BLOCKING: from the blocking review"),
			},
			want: want{out: ghreview.ChangesRequested, review: 2, blocking: 4, comments: 7, markers: []int64{1, 2}, issues: []string{
				"R1.1 BLOCKING a.go:7 from the blocking review",
				"R1.2 BLOCKING a.go:1 upper",
				"R1.3 BLOCKING a.go:2 lower, no space",
				"R1.4 BLOCKING a.go:3 indented",
				"R1.5 suggestion a.go:4 BLOCKING without a colon",
				"R1.6 suggestion a.go:5 not BLOCKING: in the middle",
				"R1.7 suggestion a.go:6 **BLOCKING:** bold is not the prefix",
			}}},
		{name: "replies and empty comments left out", reviews: []ghreview.Review{rv(1, "a", "CHANGES_REQUESTED", 1)},
			comments: []ghreview.Comment{
				cm(10, 1, "a.go", 1, "top"),
				{ID: 11, ReviewID: 1, Path: "a.go", Line: ptr(1), Body: "a reply", InReplyTo: 10},
				cm(12, 1, "a.go", 2, " \n\t "),
			},
			want: want{out: ghreview.ChangesRequested, review: 1, blocking: 1, comments: 1, markers: []int64{1}, issues: []string{"R1.1 BLOCKING a.go:1 top"}}},
		{name: "comments of other reviews left out", reviews: []ghreview.Review{rv(1, "a", "CHANGES_REQUESTED", 1), rv(3, "c", "DISMISSED", 2), rv(4, "d", "PENDING", -1)},
			comments: []ghreview.Comment{cm(10, 1, "a.go", 1, "mine"), cm(11, 3, "a.go", 2, "dismissed"), cm(12, 4, "a.go", 3, "pending"), cm(13, 99, "a.go", 4, "unknown review"), cm(14, 0, "a.go", 5, "no review")},
			want:     want{out: ghreview.ChangesRequested, review: 1, blocking: 1, comments: 1, markers: []int64{1}, issues: []string{"R1.1 BLOCKING a.go:1 mine"}}},
		{name: "comment-only reviews before an earlier decision left out", reviews: []ghreview.Review{
			rv(1, "b", "COMMENTED", 1), rv(2, "a", "CHANGES_REQUESTED", 2), rv(3, "b", "COMMENTED", 3), rv(4, "a", "CHANGES_REQUESTED", 4)},
			comments: []ghreview.Comment{cm(10, 1, "a.go", 1, "old"), cm(11, 2, "a.go", 2, "old blocking"), cm(12, 3, "a.go", 3, "new"), cm(13, 4, "a.go", 4, "new blocking")},
			src:      "<!-- github-review: 1 -->\n<!-- github-review: 2 -->", round: 2,
			want: want{out: ghreview.ChangesRequested, review: 4, blocking: 1, comments: 2, markers: []int64{3, 4}, issues: []string{"R2.1 BLOCKING a.go:4 new blocking", "R2.2 suggestion a.go:3 new"}}},
		{name: "comment-only review imported before is not again", reviews: []ghreview.Review{rv(1, "b", "COMMENTED", 1), rv(2, "a", "CHANGES_REQUESTED", 2)},
			comments: []ghreview.Comment{cm(10, 1, "a.go", 1, "seen"), cm(11, 2, "a.go", 2, "fix")},
			src:      "<!-- github-review: 1 -->",
			want:     want{out: ghreview.ChangesRequested, review: 2, blocking: 1, comments: 1, markers: []int64{2}, issues: []string{"R1.1 BLOCKING a.go:2 fix"}}},
		{name: "order by path then line", reviews: []ghreview.Review{rv(1, "a", "CHANGES_REQUESTED", 1)},
			comments: []ghreview.Comment{cm(10, 1, "b.go", 2, "b2"), cm(11, 1, "a.go", 10, "a10"), cm(12, 1, "a.go", 9, "a9"), cm(13, 1, "a.go", 0, "a file"),
				{ID: 14, ReviewID: 1, Path: "a.go", OriginalLine: ptr(5), Body: "outdated a5"}},
			want: want{out: ghreview.ChangesRequested, review: 1, blocking: 5, comments: 5, markers: []int64{1}, issues: []string{
				"R1.1 BLOCKING a.go a file", "R1.2 BLOCKING a.go:5 outdated a5", "R1.3 BLOCKING a.go:9 a9", "R1.4 BLOCKING a.go:10 a10", "R1.5 BLOCKING b.go:2 b2"}}},
		{name: "round number", reviews: []ghreview.Review{rv(1, "a", "CHANGES_REQUESTED", 1)}, comments: []ghreview.Comment{cm(10, 1, "a.go", 1, "x")}, round: 3,
			want: want{out: ghreview.ChangesRequested, review: 1, blocking: 1, comments: 1, markers: []int64{1}, issues: []string{"R3.1 BLOCKING a.go:1 x"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			round := tc.round
			if round == 0 {
				round = 1
			}
			in := append([]ghreview.Review(nil), tc.reviews...)
			fb, out := ghreview.Decide(tc.reviews, tc.comments, ghreview.ImportedIn([]byte(tc.src)), round)
			if !reflect.DeepEqual(in, tc.reviews) {
				t.Errorf("Decide reordered its input")
			}
			if out != tc.want.out {
				t.Fatalf("outcome %q, want %q", out, tc.want.out)
			}
			if out != ghreview.ChangesRequested {
				if fb != nil {
					t.Fatalf("feedback for %q: %+v", out, fb)
				}
				return
			}
			if fb == nil || len(fb.Sources) == 0 {
				t.Fatalf("feedback %+v", fb)
			}
			if fb.Review.ID != tc.want.review || fb.Blocking != tc.want.blocking || fb.Comments != tc.want.comments {
				t.Errorf("review %d, %d blocking, %d comments; want %d, %d, %d", fb.Review.ID, fb.Blocking, fb.Comments, tc.want.review, tc.want.blocking, tc.want.comments)
			}
			var got []string
			for _, is := range allIssues(fb) {
				if is.Blocking != (is.Severity == "BLOCKING") {
					t.Errorf("%s: severity %s, blocking %v", is.ID, is.Severity, is.Blocking)
				}
				got = append(got, strings.TrimSpace(strings.Join([]string{is.ID, is.Severity, is.Location, is.Problem}, " ")))
			}
			if !reflect.DeepEqual(got, tc.want.issues) {
				t.Errorf("issues:\n got %q\nwant %q", got, tc.want.issues)
			}
			var text string
			for _, src := range fb.Sources {
				text += src.Text + "\n"
			}
			if want := append([]int64(nil), tc.want.markers...); !slices.Equal(fb.Included, sortedIDs(want)) {
				t.Errorf("included %v, want %v", fb.Included, want)
			}
			if strings.Contains(text, "<!-- github-review:") {
				t.Errorf("text holds a marker (reviews are recorded in github_reviews):\n%s", text)
			}
			// Whatever it returns, importing it makes the next Decide a no-op.
			if fb2, out2 := ghreview.Decide(tc.reviews, tc.comments, ghreview.ImportedIn([]byte(tc.src+"\n"+text), fb.Included...), round+1); fb2 != nil || out2 != ghreview.AlreadyImported {
				t.Errorf("after import: %q %+v", out2, fb2)
			}
		})
	}
}

func TestDecideFixtures(t *testing.T) {
	cases := []struct {
		reviews, comments string
		out               ghreview.Outcome
		review            int64
		issues            int
	}{
		{"reviews_approved.json", "comments_approved.json", ghreview.Approved, 0, 0},
		{"reviews_dismissed.json", "comments_dismissed.json", ghreview.OnlyComments, 0, 0},
		{"reviews_commented.json", "comments_commented.json", ghreview.OnlyComments, 0, 0},
		{"reviews_none.json", "comments_commented.json", ghreview.NoReviews, 0, 0},
		{"reviews_dismissed_later.json", "comments_dismissed_later.json", ghreview.ChangesRequested, 2301, 1},
	}
	for _, tc := range cases {
		fb, out := ghreview.Decide(reviews(t, tc.reviews), comments(t, tc.comments), ghreview.ImportedIn(nil), 1)
		if out != tc.out {
			t.Errorf("%s: outcome %q, want %q", tc.reviews, out, tc.out)
			continue
		}
		if tc.review == 0 {
			if fb != nil {
				t.Errorf("%s: feedback %+v", tc.reviews, fb)
			}
			continue
		}
		if fb.Review.ID != tc.review || len(allIssues(fb)) != tc.issues {
			t.Errorf("%s: review %d with %d issues, want %d with %d", tc.reviews, fb.Review.ID, len(allIssues(fb)), tc.review, tc.issues)
		}
	}
}

func TestDecideNoLogin(t *testing.T) {
	fb, _ := ghreview.Decide([]ghreview.Review{{ID: 5, State: "CHANGES_REQUESTED", Body: "  "}}, nil, ghreview.ImportedIn(nil), 1)
	s := fb.Sources[0]
	if s.From != "GitHub PR review by someone" || s.Text != "Changes requested on GitHub." || !slices.Equal(fb.Included, []int64{5}) {
		t.Errorf("source %+v", s)
	}
}

// ---- the gh adapter, against a stand-in gh ----

// standIn writes a gh stand-in that logs its arguments, one per line, to
// $dir/log and runs script; it returns the path.
func standIn(t *testing.T, script string) (bin, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "log")
	bin = filepath.Join(dir, "gh")
	text := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '" + log + "'\necho --- >> '" + log + "'\n" + script + "\n"
	if err := os.WriteFile(bin, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

func readLog(t *testing.T, log string) string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewUsesORCH_GH(t *testing.T) {
	t.Setenv("ORCH_GH", "")
	if g := ghreview.New("/x"); g.Bin != "gh" || g.Dir != "/x" || g.Timeout <= 0 {
		t.Errorf("default: %+v", g)
	}
	t.Setenv("ORCH_GH", "/opt/gh/bin/gh")
	if g := ghreview.New("/x"); g.Bin != "/opt/gh/bin/gh" {
		t.Errorf("ORCH_GH: %+v", g)
	}
}

func TestRunMissing(t *testing.T) {
	for _, bin := range []string{filepath.Join(t.TempDir(), "no-gh"), "orch-test-no-such-gh"} {
		g := &ghreview.GH{Bin: bin, Dir: t.TempDir(), Timeout: time.Minute}
		_, err := g.Reviews("acme/app", 48)
		var ge *ghreview.Error
		if !errors.As(err, &ge) || !ge.Missing {
			t.Fatalf("%s: %v; want a missing-gh Error", bin, err)
		}
		if !strings.Contains(err.Error(), "was not found") || !strings.Contains(err.Error(), bin) {
			t.Errorf("message: %s", err)
		}
	}
}

func TestRunFailure(t *testing.T) {
	bin, _ := standIn(t, `echo 'gh: Not Found (HTTP 404)' >&2; echo '{"message":"Not Found"}'; exit 1`)
	g := &ghreview.GH{Bin: bin, Dir: t.TempDir(), Timeout: time.Minute}
	_, err := g.Comments("acme/app", 48)
	var ge *ghreview.Error
	if !errors.As(err, &ge) || ge.Missing {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(err.Error(), "gh: Not Found (HTTP 404)") || !strings.Contains(err.Error(), "repos/acme/app/pulls/48/comments") {
		t.Errorf("message: %s", err)
	}
	// A long stderr is cut.
	bin, _ = standIn(t, `i=0; while [ $i -lt 300 ]; do printf 'error text ' >&2; i=$((i+1)); done; exit 2`)
	g.Bin = bin
	_, err = g.Run("api", "x")
	if err == nil || len(err.Error()) > 700 || !strings.HasSuffix(err.Error(), "...") {
		t.Errorf("long stderr: %d bytes: %.100s", len(err.Error()), err)
	}
	// Failing without stderr still says why.
	bin, _ = standIn(t, `exit 3`)
	g.Bin = bin
	if _, err = g.Run("api", "x"); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("no stderr: %v", err)
	}
}

func TestRunTimeout(t *testing.T) {
	bin, _ := standIn(t, `exec sleep 60`)
	g := &ghreview.GH{Bin: bin, Dir: t.TempDir(), Timeout: 100 * time.Millisecond}
	_, err := g.Run("api", "x")
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("%v", err)
	}
}

func TestRunOutputBounded(t *testing.T) {
	bin, _ := standIn(t, `head -c 33554433 /dev/zero | tr '\0' ' '`)
	g := &ghreview.GH{Bin: bin, Dir: t.TempDir(), Timeout: time.Minute}
	if _, err := g.Run("api", "x"); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("%v", err)
	}
}

// The adapter asks exactly for the paginated REST lists, in the directory
// given, and reads what gh prints.
func TestReviewsAndCommentsArgs(t *testing.T) {
	dir := t.TempDir()
	data, _ := filepath.Abs("testdata")
	bin, log := standIn(t, `pwd > '`+dir+`/pwd'
case "$3" in
*/reviews*) cat '`+data+`/reviews_paginated.json' ;;
*/comments*) cat '`+data+`/comments_paginated.json' ;;
esac`)
	g := &ghreview.GH{Bin: bin, Dir: dir, Timeout: time.Minute}
	rs, err := g.Reviews("acme/app", 48)
	if err != nil || len(rs) != 3 {
		t.Fatalf("%d reviews, %v", len(rs), err)
	}
	cs, err := g.Comments("acme/app", 48)
	if err != nil || len(cs) != 7 {
		t.Fatalf("%d comments, %v", len(cs), err)
	}
	want := "api\n--paginate\nrepos/acme/app/pulls/48/reviews?per_page=100\n---\napi\n--paginate\nrepos/acme/app/pulls/48/comments?per_page=100\n---\n"
	if got := readLog(t, log); got != want {
		t.Errorf("gh was run as:\n%s\nwant:\n%s", got, want)
	}
	if pwd, _ := os.ReadFile(filepath.Join(dir, "pwd")); strings.TrimSpace(string(pwd)) != dir {
		t.Errorf("gh ran in %q, want %q", pwd, dir)
	}
	// Bad JSON from gh is a ParseError.
	bin, _ = standIn(t, `echo '{"message":"API rate limit exceeded"}'`)
	g.Bin = bin
	var pe *ghreview.ParseError
	if _, err := g.Reviews("acme/app", 48); !errors.As(err, &pe) {
		t.Errorf("bad JSON: %v", err)
	}
}

// A relative ORCH_GH names a file relative to where orch runs, not to the
// repository gh runs in.
func TestRunRelativeBin(t *testing.T) {
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, "bin"), 0o777); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(top, "repo")
	if err := os.MkdirAll(repo, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "bin", "gh"), []byte("#!/bin/sh\necho acme/app\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(top)
	g := &ghreview.GH{Bin: "bin/gh", Dir: repo, Timeout: time.Minute}
	repoName, err := g.Repo("")
	if err != nil || repoName != "acme/app" {
		t.Fatalf("%q, %v", repoName, err)
	}
}

func TestRepo(t *testing.T) {
	bin, log := standIn(t, `echo acme/app`)
	g := &ghreview.GH{Bin: bin, Dir: t.TempDir(), Timeout: time.Minute}
	// Configured: gh is not asked.
	if r, err := g.Repo("octo-org/hello.world_2"); err != nil || r != "octo-org/hello.world_2" {
		t.Errorf("configured: %q %v", r, err)
	}
	if got := readLog(t, log); got != "" {
		t.Errorf("gh was run for a configured repo: %q", got)
	}
	for _, bad := range []string{"acme", "acme/app/x", "../acme", "acme/..", "acme/my app", "acme/app;rm", "acme/app\n", "https://github.com/acme/app"} {
		if _, err := g.Repo(bad); err == nil {
			t.Errorf("configured %q accepted", bad)
		}
	}
	if got := readLog(t, log); got != "" {
		t.Errorf("gh was run for a bad configured repo: %q", got)
	}
	// Not configured: gh repo view.
	if r, err := g.Repo(""); err != nil || r != "acme/app" {
		t.Errorf("gh repo view: %q %v", r, err)
	}
	if got := readLog(t, log); got != "repo\nview\n--json\nnameWithOwner\n--jq\n.nameWithOwner\n---\n" {
		t.Errorf("gh was run as %q", got)
	}
	bin, _ = standIn(t, `echo 'not a repo'`)
	g.Bin = bin
	if _, err := g.Repo(""); err == nil || !strings.Contains(err.Error(), "github.repo") {
		t.Errorf("junk from gh repo view: %v", err)
	}
	bin, _ = standIn(t, `echo 'no git remotes found' >&2; exit 1`)
	g.Bin = bin
	if _, err := g.Repo(""); err == nil || !strings.Contains(err.Error(), "no git remotes found") {
		t.Errorf("gh repo view failing: %v", err)
	}
}

func TestCreatePR(t *testing.T) {
	bin, log := standIn(t, `echo 'Warning: 1 uncommitted change' >&2
echo 'Creating draft pull request for task/T-abc into main in acme/app' >&2
echo https://github.com/acme/app/pull/123`)
	g := &ghreview.GH{Bin: bin, Dir: t.TempDir(), Timeout: time.Minute}
	n, url, err := g.CreatePR("acme/app", "task/T-abc-x", "main", "T-abc: X", "body\nline 2")
	if err != nil || n != 123 || url != "https://github.com/acme/app/pull/123" {
		t.Fatalf("%d %q %v", n, url, err)
	}
	want := "pr\ncreate\n--draft\n--head\ntask/T-abc-x\n--base\nmain\n--title\nT-abc: X\n--body\nbody\nline 2\n--repo\nacme/app\n---\n"
	if got := readLog(t, log); got != want {
		t.Errorf("gh was run as:\n%s\nwant:\n%s", got, want)
	}
	// Without a configured repo gh picks it from the remotes.
	if _, _, err := g.CreatePR("", "b", "main", "t", "b"); err != nil {
		t.Fatal(err)
	}
	if got := readLog(t, log); strings.Contains(got[len(want):], "--repo") {
		t.Errorf("--repo passed without a repo: %q", got[len(want):])
	}
	// gh printing no URL, or failing.
	bin, _ = standIn(t, `echo 'a pull request for branch "b" into branch "main" already exists'`)
	g.Bin = bin
	if _, _, err := g.CreatePR("", "b", "main", "t", "b"); err == nil || !strings.Contains(err.Error(), "did not print a pull request URL") {
		t.Errorf("no URL: %v", err)
	}
	bin, _ = standIn(t, `echo 'pull request create failed: GraphQL: No commits between main and b' >&2; exit 1`)
	g.Bin = bin
	var ge *ghreview.Error
	if _, _, err := g.CreatePR("", "b", "main", "t", "b"); !errors.As(err, &ge) || !strings.Contains(err.Error(), "No commits between") {
		t.Errorf("failing: %v", err)
	}
}

func TestViewAndMergePR(t *testing.T) {
	bin, log := standIn(t, `case "$1 $2" in
"pr view") echo '{"number":7,"state":"MERGED","mergeable":"UNKNOWN","isDraft":false,"headRefOid":"aaa","baseRefName":"main","mergeCommit":{"oid":"bbb"}}' ;;
"pr merge") echo 'X Pull request #7 is not mergeable: the merge commit cannot be cleanly created.' >&2; exit 1 ;;
esac`)
	g := &ghreview.GH{Bin: bin, Dir: t.TempDir(), Timeout: time.Minute}
	p, err := g.ViewPR("acme/app", 7)
	if err != nil || p.Merged() != "bbb" || p.HeadRefOid != "aaa" || p.BaseRefName != "main" {
		t.Fatalf("ViewPR = %+v, %v", p, err)
	}
	if _, err := g.ViewPR("acme/app", 8); err == nil || !strings.Contains(err.Error(), "answered pull request 7") {
		t.Errorf("ViewPR of another number: %v", err)
	}
	err = g.MergePR("acme/app", 7, "squash", "aaa")
	var ge *ghreview.Error
	if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "cannot be cleanly created") {
		t.Errorf("MergePR: %v", err)
	}
	if err := g.ReadyPR("acme/app", 7); err != nil {
		t.Errorf("ReadyPR: %v", err)
	}
	want := "pr\nview\n7\n--repo\nacme/app\n--json\nnumber,state,mergeable,isDraft,headRefOid,baseRefName,mergeCommit\n---\n" +
		"pr\nview\n8\n--repo\nacme/app\n--json\nnumber,state,mergeable,isDraft,headRefOid,baseRefName,mergeCommit\n---\n" +
		"pr\nmerge\n7\n--repo\nacme/app\n--squash\n--match-head-commit\naaa\n---\n" +
		"pr\nready\n7\n--repo\nacme/app\n---\n"
	if got := readLog(t, log); got != want {
		t.Errorf("gh was run as\n%s\nwant\n%s", got, want)
	}
	if (&ghreview.PR{State: "OPEN", MergeCommit: p.MergeCommit}).Merged() != "" {
		t.Error("an open pull request has no merge commit")
	}
}
