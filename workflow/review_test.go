package workflow

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/orch-tool/orch/taskfile"
)

func boolp(b bool) *bool { return &b }

// TestReviewProtocolForms: the review protocol's own issue forms are taken
// (older severity names, the blocking flag, its ids, fix_patch); only what
// is missing or contradicts itself is refused, with a message naming the
// issue.
func TestReviewProtocolForms(t *testing.T) {
	for _, c := range []struct {
		name    string
		issue   ReviewIssue
		sev     string // recorded severity, when taken
		blocks  bool
		wantErr string // a part of the usage error, when refused
	}{
		{name: "canonical", issue: ReviewIssue{Severity: "high", Title: "x"}, sev: "HIGH", blocks: true},
		{name: "BLOCKER", issue: ReviewIssue{Severity: "BLOCKER", Title: "x"}, sev: "CRITICAL", blocks: true},
		{name: "IMPORTANT", issue: ReviewIssue{Severity: "Important", Title: "x"}, sev: "HIGH", blocks: true},
		{name: "SUGGESTION", issue: ReviewIssue{Severity: "SUGGESTION", Title: "x"}, sev: "MEDIUM"},
		{name: "MINOR", issue: ReviewIssue{Severity: "minor", Title: "x"}, sev: "LOW"},
		{name: "NIT", issue: ReviewIssue{Severity: " NIT ", Title: "x"}, sev: "LOW"},
		{name: "FYI", issue: ReviewIssue{Severity: "FYI", Title: "x"}, sev: "LOW"},
		{name: "blocking agrees", issue: ReviewIssue{Severity: "CRITICAL", Blocking: boolp(true), Title: "x"}, sev: "CRITICAL", blocks: true},
		{name: "not blocking agrees", issue: ReviewIssue{Severity: "SUGGESTION", Blocking: boolp(false), Title: "x"}, sev: "MEDIUM"},
		{name: "blocking alone", issue: ReviewIssue{Blocking: boolp(true), Title: "x"}, sev: "HIGH", blocks: true},
		{name: "not blocking alone", issue: ReviewIssue{Blocking: boolp(false), Title: "x"}, sev: "MEDIUM"},
		// The protocol's own example writes "blocking": true on a SUGGESTION.
		{name: "suggestion said to block", issue: ReviewIssue{Severity: "SUGGESTION", Blocking: boolp(true), Title: "Consider adding rate limiting"},
			wantErr: `issue 1 ("Consider adding rate limiting"): "blocking": true contradicts its severity SUGGESTION (MEDIUM), which is a suggestion`},
		{name: "critical said not to block", issue: ReviewIssue{Severity: "CRITICAL", Blocking: boolp(false), Title: "SQL"},
			wantErr: `issue 1 ("SQL"): "blocking": false contradicts its severity CRITICAL, which is blocking`},
		{name: "neither", issue: ReviewIssue{Title: "x"}, wantErr: `issue 1: severity "" is not one of CRITICAL, HIGH, MEDIUM, LOW`},
		{name: "unknown", issue: ReviewIssue{Severity: "URGENT", Blocking: boolp(true), Title: "x"}, wantErr: `severity "URGENT" is not one of`},
		{name: "no title", issue: ReviewIssue{Severity: "NIT"}, wantErr: "issue 1 has no title"},
		{name: "id on two lines", issue: ReviewIssue{Severity: "LOW", Title: "x", ID: "TL\n1"}, wantErr: "issue 1: the id is more than one line"},
		{name: "control in patch", issue: ReviewIssue{Severity: "LOW", Title: "x", FixPatch: "a\x1b[31m"}, wantErr: "issue 1: the fix_patch contains control characters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkReviewInput(&ReviewInput{Issues: []ReviewIssue{c.issue}})
			if c.wantErr != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || !strings.Contains(ue.Msg, c.wantErr) {
					t.Fatalf("err = %v, want a usage error with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := reviewIssue(1, 0, c.issue)
			if got.ID != "R1.1" || got.Severity != c.sev || got.Blocking != c.blocks {
				t.Errorf("recorded as %s %s blocking=%v, want %s blocking=%v", got.ID, got.Severity, got.Blocking, c.sev, c.blocks)
			}
		})
	}
}

// TestReviewerIssueIDs: a reviewer's id equal to orch's is the same name
// (not repeated), another R<round>.<n> contradicts orch's, a label is kept
// (spacing folded), and two issues may not share one.
func TestReviewerIssueIDs(t *testing.T) {
	in := &ReviewInput{Issues: []ReviewIssue{
		{ID: "r2.1", Severity: "HIGH", Title: "a"},
		{ID: " TL-AUTH-2-002 ", Severity: "HIGH", Title: "b", FixPatch: "\r\n-x\r\n+y\r\n\r\n"},
		{Severity: "HIGH", Title: "c"},
	}}
	if err := checkReviewInput(in); err != nil {
		t.Fatal(err)
	}
	if err := checkReviewerIDs(2, in); err != nil {
		t.Fatal(err)
	}
	var got []taskfile.Issue
	for i, is := range in.Issues {
		got = append(got, reviewIssue(2, i, is))
	}
	if got[0].ReviewerIssueID != "" || got[1].ReviewerIssueID != "TL-AUTH-2-002" || got[1].FixPatch != "-x\n+y" || got[2].ReviewerIssueID != "" {
		t.Errorf("recorded as %+v", got)
	}
	err := checkReviewerIDs(1, in)
	var ue *UsageError
	if !errors.As(err, &ue) || ue.Msg != `issue 1 ("a"): id r2.1 contradicts the ID orch gives it, R1.1 (the issues of review round 1 are numbered in order)` {
		t.Errorf("round 1: %v", err)
	}
	dup := &ReviewInput{Issues: []ReviewIssue{{ID: "TL-1", Severity: "LOW", Title: "a"}, {ID: "tl-1", Severity: "LOW", Title: "b"}}}
	if err := checkReviewInput(dup); !errors.As(err, &ue) || ue.Msg != `issues 1 and 2 have the same id "tl-1": an id names one issue` {
		t.Errorf("duplicate ids: %v", err)
	}
}

// TestFindIssueRef: orch's ID first, else a reviewer's id that names one
// issue (a re-opened issue's copies are one issue); a label of two issues
// is refused with both IDs.
func TestFindIssueRef(t *testing.T) {
	issues := []taskfile.Issue{ // newest round first, as AllIssues gives them
		{ID: "R2.1", ReviewerIssueID: "TL-2-001"},
		{ID: "R1.2", ReviewerIssueID: "TL-002", Title: "newest copy"},
		{ID: "R1.1", ReviewerIssueID: "TL-001"},
		{ID: "R1.2", ReviewerIssueID: "TL-002", Title: "oldest copy"},
		{ID: "R1.3", ReviewerIssueID: "dup"},
		{ID: "R1.4", ReviewerIssueID: "DUP"},
	}
	for ref, want := range map[string]string{"R2.1": "R2.1", "tl-001": "R1.1", "TL-002": "R1.2", " TL-2-001 ": "R2.1", "TL-9": "", "R9.9": ""} {
		is, err := findIssueRef(issues, ref)
		got := ""
		if is != nil {
			got = is.ID
		}
		if err != nil || got != want {
			t.Errorf("%q = %q, %v; want %q", ref, got, err, want)
		}
		if ref == "TL-002" && is.Title != "newest copy" {
			t.Errorf("TL-002 found the %s", is.Title)
		}
	}
	var ue *UsageError
	if _, err := findIssueRef(issues, "dup"); !errors.As(err, &ue) || !strings.Contains(ue.Msg, "(R1.3, R1.4)") {
		t.Errorf("dup: %v", err)
	}
}

func TestJustificationWords(t *testing.T) {
	for text, want := range map[string]int{
		"no":                                   1,
		"I disagree with this":                 4,
		"won't fix - -- — …":                   2,
		"the handler computes it once already": 6,
		"R1.2: see auth_service.py:13 for validation": 5,
		"  ":  0,
		"…—–": 0,
	} {
		if got := justificationWords(text); got != want {
			t.Errorf("%q: %d words, want %d", text, got, want)
		}
	}
	if justificationWords("the handler computes it once already") < MinJustificationWords {
		t.Error("a terse real reason is refused")
	}
}

// TestSuggestionsAnswered: an open suggestion is adopted when its newest
// copy's newest answer is FIXED, else skipped; blocking issues do not
// count.
func TestSuggestionsAnswered(t *testing.T) {
	earlier := []taskfile.Issue{
		{ID: "R1.3", Responses: []taskfile.Response{{Status: "FIXED"}}}, // the re-opened copy, answered again
		{ID: "R1.1", Blocking: true, Responses: []taskfile.Response{{Status: "REJECTED"}}},
		{ID: "R1.2", Responses: []taskfile.Response{{Status: "FIXED"}, {Status: "DEFERRED"}}},
		{ID: "R1.3"},
		{ID: "R1.4"},
		{ID: "R1.10", Responses: []taskfile.Response{{Status: "fixed"}}},
	}
	open := map[string]taskfile.Issue{}
	for _, is := range earlier {
		open[is.ID] = is // the oldest copy, as reviewChange builds it
	}
	adopted, skipped := suggestionsAnswered(earlier, open)
	if !reflect.DeepEqual(adopted, []string{"R1.3", "R1.10"}) || !reflect.DeepEqual(skipped, []string{"R1.2", "R1.4"}) {
		t.Errorf("adopted %v, skipped %v", adopted, skipped)
	}
}
