package taskfile

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFeedbackRoundsDesignExample(t *testing.T) {
	f := mustParse(t, designExample)
	rounds := f.FeedbackRounds()
	if len(rounds) != 1 {
		t.Fatalf("rounds = %+v", rounds)
	}
	r := rounds[0]
	if r.Number != 1 || r.Approval || r.Line != 19 || len(r.Sources) != 2 {
		t.Fatalf("round = %+v", r)
	}
	alice := r.Sources[0]
	if alice.From != "GitHub PR review by alice" || !alice.Time.Equal(time.Date(2026, 2, 6, 16, 30, 0, 0, time.UTC)) || alice.Text != "" {
		t.Errorf("source = %+v", alice)
	}
	want := []Issue{
		{ID: "R1.1", Severity: "BLOCKING", Blocking: true, Location: "src/components/SketchView2D.tsx:1709",
			Problem: "Fork start uses raw svgPos instead of snapResult. Should snap like polygon/rect/circle.", Line: 23},
		{ID: "R1.2", Severity: "suggestion", Location: "src/components/SketchView2D.tsx:1826",
			Problem: "Snap computation is duplicated 3 times in handleMouseMove. Compute once at the top.", Line: 25},
	}
	if !reflect.DeepEqual(alice.Issues, want) {
		t.Errorf("issues =\n%+v\nwant\n%+v", alice.Issues, want)
	}
	lead := r.Sources[1]
	if lead.From != "lead via orch reject" || lead.Text != "Fix the 3 issues from code review. Do NOT create a new PR — push to existing branch." || len(lead.Issues) != 0 {
		t.Errorf("source = %+v", lead)
	}
	if got := f.AllIssues(); len(got) != 2 || got[0].ID != "R1.1" {
		t.Errorf("AllIssues = %+v", got)
	}
}

// TestFeedbackRoundTrip: what RenderRound writes, FeedbackRounds reads
// back, and the new round stands above the older one.
func TestFeedbackRoundTrip(t *testing.T) {
	f := mustParse(t, designExample)
	round := Round{Number: 2, Verdict: "CHANGES_REQUESTED", Sources: []Source{
		{From: "lead via orch review", Time: time.Date(2026, 2, 7, 9, 0, 0, 0, time.UTC),
			Text: "Overall fine.\n## typed as a heading\n```\n## in a fence\n```",
			Issues: []Issue{
				{ID: "R2.1", Severity: "HIGH", Location: "src/a.go:12", Title: "SQL injection", Problem: "User input\nis interpolated.",
					Fix: "use a parameterised query", Why: "attackers can run SQL", Responses: []Response{{Status: "fixed", Commit: "abc1234", Text: "done"}}},
				{ID: "R2.2", Severity: "LOW", Title: "naming"},
			}},
		{From: "GitHub PR review by bob", Issues: []Issue{{ID: "R2.3", Severity: "suggestion", Location: "x`y.go", Title: "nit"}}},
	}}
	out, err := f.AddRound(round)
	if err != nil {
		t.Fatal(err)
	}
	rounds := out.FeedbackRounds()
	if len(rounds) != 2 || rounds[0].Number != 2 || rounds[1].Number != 1 {
		t.Fatalf("rounds = %+v", rounds)
	}
	got := rounds[0]
	if got.Verdict != "CHANGES_REQUESTED" || len(got.Sources) != 2 {
		t.Fatalf("round = %+v", got)
	}
	s := got.Sources[0]
	if s.From != "lead via orch review" || !s.Time.Equal(round.Sources[0].Time) ||
		s.Text != "Overall fine.\n#### typed as a heading\n```\n## in a fence\n```" {
		t.Errorf("source = %+v", s)
	}
	if len(s.Issues) != 2 {
		t.Fatalf("issues = %+v", s.Issues)
	}
	is := s.Issues[0]
	if is.ID != "R2.1" || is.Severity != "HIGH" || !is.Blocking || is.Location != "src/a.go:12" || is.Title != "SQL injection" ||
		is.Problem != "User input\nis interpolated." || is.Fix != "use a parameterised query" || is.Why != "attackers can run SQL" ||
		!reflect.DeepEqual(is.Responses, []Response{{Status: "FIXED", Commit: "abc1234", Text: "done"}}) {
		t.Errorf("issue = %+v", is)
	}
	if s.Issues[1].Blocking || s.Issues[1].Title != "naming" {
		t.Errorf("issue = %+v", s.Issues[1])
	}
	if b := got.Sources[1].Issues; len(b) != 1 || b[0].Location != "x'y.go" || b[0].Severity != "suggestion" {
		t.Errorf("bob's issues = %+v", b)
	}
	// The frontmatter is untouched and the round sits right after the title.
	if !strings.HasPrefix(string(out.Src), designExample[:f.AfterTitle()]+"\n## Review Feedback (rejection #2)\n") {
		t.Errorf("round not after the title:\n%s", out.Src)
	}
}

func TestIssueEdits(t *testing.T) {
	f := mustParse(t, designExample)
	out, err := f.SetIssueResponse("R1.1", Response{Status: "FIXED", Commit: "def5678", Text: "snaps now"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(designExample, "polygon/rect/circle.\n", "polygon/rect/circle.\n  - Response: FIXED (def5678) — snaps now\n", 1)
	if string(out.Src) != want {
		t.Errorf("SetIssueResponse:\n%s", out.Src)
	}
	if rs := out.AllIssues()[0].Responses; len(rs) != 1 || rs[0].Commit != "def5678" {
		t.Errorf("responses = %+v", rs)
	}
	if _, err := f.SetIssueResponse("R9.9", Response{Status: "FIXED"}); !errors.As(err, new(*EditError)) {
		t.Errorf("unknown issue: %v", err)
	}

	out, err = f.SetIssuesResolved(map[string]bool{"R1.2": true, "R7.7": true})
	if err != nil {
		t.Fatal(err)
	}
	want = strings.Replace(designExample, "- [ ] **R1.2**", "- [x] **R1.2**", 1)
	if string(out.Src) != want {
		t.Errorf("SetIssuesResolved:\n%s", out.Src)
	}
	if is := out.AllIssues(); is[0].Resolved || !is[1].Resolved {
		t.Errorf("resolved = %v %v", is[0].Resolved, is[1].Resolved)
	}
}

// TestAddSection: text that stood right under the title gets its own
// heading, so it does not become part of the inserted section.
func TestAddSection(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"---\nid: x\n---\n# T\n\nDescription text.\n\n## Context\nc\n",
			"---\nid: x\n---\n# T\n\n## Note\n\nhello\n\n## Description\n\nDescription text.\n\n## Context\nc\n"},
		{"---\nid: x\n---\n# T\n\n## Context\nc\n",
			"---\nid: x\n---\n# T\n\n## Note\n\nhello\n\n## Context\nc\n"},
		{"---\nid: x\n---\n# T\n",
			"---\nid: x\n---\n# T\n\n## Note\n\nhello\n"},
	} {
		f := mustParse(t, c.src)
		out, err := f.AddSection("## Note\n\nhello\n")
		if err != nil || string(out.Src) != c.want {
			t.Errorf("AddSection(%q) =\n%q, %v\nwant\n%q", c.src, out.Src, err, c.want)
		}
	}
}

func TestSeverities(t *testing.T) {
	for s, blocking := range map[string]bool{"CRITICAL": true, "high": true, "BLOCKING": true, "MEDIUM": false, "low": false, "suggestion": false, "": false} {
		if Blocking(s) != blocking {
			t.Errorf("Blocking(%q) = %v", s, !blocking)
		}
	}
	for s, valid := range map[string]bool{"CRITICAL": true, "medium": true, "Suggestion": true, "urgent": false, "": false} {
		if ValidSeverity(s) != valid {
			t.Errorf("ValidSeverity(%q) = %v", s, !valid)
		}
	}
	in := []Issue{{ID: "a"}, {ID: "b", Blocking: true}, {ID: "c"}, {ID: "d", Blocking: true}}
	var ids []string
	for _, is := range SortIssues(in) {
		ids = append(ids, is.ID)
	}
	if strings.Join(ids, "") != "bdac" || in[0].ID != "a" {
		t.Errorf("SortIssues = %v", ids)
	}
}

// TestIssuePatchAndReviewerID: the reviewer's own ID and a suggested patch
// read back exactly, whatever the patch holds (headings, HTML, fences, blank
// and white-space lines, lines that look like issues or responses), the
// sections after the round survive, and a response lands after the patch.
func TestIssuePatchAndReviewerID(t *testing.T) {
	patches := []string{
		"--- a/src/api/users.py\n+++ b/src/api/users.py\n@@ -56 +56 @@\n-cursor.execute(f\"SELECT * FROM users WHERE id = {user_id}\")\n+cursor.execute(\"SELECT * FROM users WHERE id = ?\", (user_id,))",
		"@@ -1,4 +1,4 @@\n # Title\n \n-## Context\n+## Review Feedback (rejection #9)\n \n\n<!-- open comment\n<script>",
		"```\n````\n+ `x`\n```go",
		"- [ ] **R9.9** CRITICAL — a fake issue\n  - Response: FIXED (abcdef1) — a fake response\n  Patch:\n  ```diff\n\tindented with a tab",
		"~~~\n+x\n~~~~~",
		"line\nPatch:\n```\nnot the end\n```",
	}
	for _, p := range patches {
		f := mustParse(t, designExample)
		round := Round{Number: 2, Verdict: "CHANGES_REQUESTED", Sources: []Source{{From: "lead via orch review", Issues: []Issue{
			{ID: "R2.1", Severity: "HIGH", Title: "SQL injection", Problem: "Input is interpolated.\nPatch:\n```\nnot a patch\n```", Fix: "use a parameter",
				ReviewerIssueID: "TL-AUTH-1-001", FixPatch: "\r\n" + strings.ReplaceAll(p, "\n", "\r\n") + "\r\n\n"},
			{ID: "R2.2", Severity: "LOW", Title: "naming"},
		}}}}
		out, err := f.AddRound(round)
		if err != nil {
			t.Fatal(err)
		}
		if problems := out.Validate(); len(problems) > 0 {
			t.Fatalf("invalid file: %v\n%s", Problems(problems), out.Src)
		}
		rounds := out.FeedbackRounds()
		if len(rounds) != 2 {
			t.Fatalf("rounds = %+v\n%s", rounds, out.Src)
		}
		is := rounds[0].Sources[0].Issues
		if len(is) != 2 || is[0].FixPatch != p || is[0].ReviewerIssueID != "TL-AUTH-1-001" || is[0].Fix != "use a parameter" ||
			is[0].Problem != "Input is interpolated.\n\\Patch:\n```\nnot a patch\n```" || is[1].ID != "R2.2" || is[1].FixPatch != "" {
			t.Fatalf("issues read back as %#v\n%s", is, out.Src)
		}
		var titles []string
		for _, s := range out.Sections() {
			if s.Level <= 2 {
				titles = append(titles, s.Title)
			}
		}
		if want := []string{"Snap fork start like the other shapes", "Review Feedback (rejection #2)", "Review Feedback (rejection #1)", "Context", "Acceptance Criteria"}; !reflect.DeepEqual(titles, want) {
			t.Fatalf("sections = %q, want %q\n%s", titles, want, out.Src)
		}
		// A response goes after the whole patch, blank lines included.
		out2, err := out.SetIssueResponse("R2.1", Response{Status: "FIXED", Commit: "abc1234", Text: "applied the patch"})
		if err != nil {
			t.Fatal(err)
		}
		is = out2.FeedbackRounds()[0].Sources[0].Issues
		if is[0].FixPatch != p || len(is[0].Responses) != 1 || is[0].Responses[0].Text != "applied the patch" || len(is[1].Responses) != 0 {
			t.Fatalf("after the response: %#v\n%s", is, out2.Src)
		}
	}
}

func TestIssuePatchRendering(t *testing.T) {
	got := RenderIssue(Issue{ID: "R1.1", Severity: "HIGH", Title: "t", ReviewerIssueID: " TL-001 ", FixPatch: "-a\n\n+``b``\n"})
	want := "- [ ] **R1.1** HIGH — t\n  Reviewer's ID: TL-001\n  Patch:\n  ```diff\n  -a\n\n  +``b``\n  ```\n"
	if got != want {
		t.Errorf("RenderIssue =\n%s\nwant\n%s", got, want)
	}
	if got := RenderIssue(Issue{ID: "R1.1", Severity: "LOW", FixPatch: "a ``` b"}); !strings.Contains(got, "  ````diff\n  a ``` b\n  ````\n") {
		t.Errorf("fence not longer than the patch's backticks:\n%s", got)
	}
	if got := RenderIssue(Issue{ID: "R1.1", Severity: "LOW", FixPatch: " \n\t\n"}); strings.Contains(got, "Patch") {
		t.Errorf("a blank patch was written:\n%s", got)
	}
}
