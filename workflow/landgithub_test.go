package workflow

import (
	"strings"
	"testing"

	"github.com/orch-tool/orch/ghreview"
	"github.com/orch-tool/orch/land"
)

// What GitHub says of a pull request decides what landing records; gh's
// wording never does (docs/design.md §8.5).
func TestPRSays(t *testing.T) {
	oid := &struct {
		Oid string `json:"oid"`
	}{"abc123"}
	c := land.Candidate{Task: "T-1", Tip: "tip"}
	for _, tc := range []struct {
		name    string
		pr      ghreview.PR
		verdict prVerdict
		commit  string
		why     string
	}{
		{"merged", ghreview.PR{Number: 5, State: "MERGED", MergeCommit: oid}, prMerged, "abc123", ""},
		{"merged without a commit waits", ghreview.PR{Number: 5, State: "MERGED"}, prWaits, "", "names no merge commit"},
		{"closed", ghreview.PR{Number: 5, State: "CLOSED", Mergeable: "CONFLICTING"}, prClosed, "", "#5 was closed without being merged"},
		{"conflicting", ghreview.PR{Number: 5, State: "OPEN", Mergeable: "CONFLICTING", BaseRefName: "main"}, prConflicting, "", "#5 conflicts with main"},
		{"mergeable", ghreview.PR{Number: 5, State: "OPEN", Mergeable: "MERGEABLE"}, prWaits, "", "open and not merged yet"},
		{"unknown", ghreview.PR{Number: 5, State: "OPEN", Mergeable: "UNKNOWN"}, prWaits, "", "open and not merged yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := prSays(c, &tc.pr)
			if f.verdict != tc.verdict || f.commit != tc.commit || !strings.Contains(f.why, tc.why) || f.pr != 5 || f.c != c {
				t.Errorf("prSays = %+v, want verdict %d, commit %q, why containing %q", f, tc.verdict, tc.commit, tc.why)
			}
		})
	}
}

// A task without a pull request is never handed to gh.
func TestMergePRWithoutPR(t *testing.T) {
	gh := &ghreview.GH{Bin: "/nonexistent/gh"}
	f := mergePR(gh, "acme/app", land.Candidate{Task: "T-1", Tip: "tip"}, 0, "merge")
	if f.verdict != prMissing || f.ghErr != nil || !strings.Contains(f.why, "no pull request (pr_number)") {
		t.Errorf("mergePR without a PR = %+v", f)
	}
}
