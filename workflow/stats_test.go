package workflow

import (
	"fmt"
	"reflect"
	"testing"
)

// TestDeveloperFlag: a developer is flagged when it rejected more than half
// of the blocking issues it answered, over at least two; suggestions do not
// count towards it.
func TestDeveloperFlag(t *testing.T) {
	for _, c := range []struct {
		name                                string
		blockingRejected, blockingFixed, sg int
		flagged                             bool
	}{
		{"one of one is too few to judge", 1, 0, 0, false},
		{"two of two", 2, 0, 0, true},
		{"half is not most", 1, 1, 0, false},
		{"two of three", 2, 1, 0, true},
		{"rejected suggestions do not count", 1, 1, 5, false},
		{"nothing rejected", 0, 4, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			answers := map[answerKey]answer{}
			n := 0
			add := func(status string, blocking bool) {
				n++
				answers[answerKey{"dev", "T-aaaaaa", fmt.Sprintf("R1.%d", n), 1}] = answer{time: "2026-01-01T00:00:00Z", status: status, blocking: blocking}
			}
			for i := 0; i < c.blockingRejected; i++ {
				add("REJECTED", true)
			}
			for i := 0; i < c.blockingFixed; i++ {
				add("FIXED", true)
			}
			for i := 0; i < c.sg; i++ {
				add("REJECTED", false)
			}
			d := developerAnswers(answers)["dev"]
			if d.Flagged != c.flagged || d.Rejected != c.blockingRejected+c.sg || d.BlockingRejected != c.blockingRejected || d.BlockingAnswered != c.blockingRejected+c.blockingFixed {
				t.Errorf("got %+v, want flagged=%v", d, c.flagged)
			}
			if w := warnings(&reviewerTally{by: map[string]*ReviewerStats{}}, answers); (len(w) == 1) != c.flagged {
				t.Errorf("warnings = %+v", w)
			}
		})
	}
}

// TestReviewerFlag: a reviewer is flagged when it requested changes in more
// than three quarters of its decisions, over at least four.
func TestReviewerFlag(t *testing.T) {
	for _, c := range []struct {
		changes, approvals int
		flagged            bool
	}{{3, 0, false}, {4, 0, true}, {3, 1, false}, {4, 1, true}, {6, 2, false}, {7, 2, true}} {
		rv := &reviewerTally{by: map[string]*ReviewerStats{}}
		for i := 0; i < c.changes; i++ {
			rv.add(&Event{Action: ActionReview, Actor: "lead", Time: "2026-01-01T00:00:00Z"}, &ReviewData{ReviewFindings: ReviewFindings{Verdict: VerdictChangesRequested}})
		}
		for i := 0; i < c.approvals; i++ {
			rv.add(&Event{Action: ActionApprove, Actor: "lead"}, &ApproveData{})
		}
		s := ReviewStats{ReviewTotals: ReviewTotals{ByVerdict: map[string]int{}, BySeverity: map[string]int{}}}
		s.finish(rv, 10)
		if len(s.ByReviewer) != 1 || s.ByReviewer[0].Flagged != c.flagged || s.ByReviewer[0].Reviews != c.changes+c.approvals {
			t.Errorf("%d changes, %d approvals: %+v, want flagged=%v", c.changes, c.approvals, s.ByReviewer, c.flagged)
		}
		if w := warnings(rv, nil); (len(w) == 1) != c.flagged {
			t.Errorf("%d changes, %d approvals: warnings %+v", c.changes, c.approvals, w)
		}
	}
}

// A GitHub review that requested changes counts for its reviewer, not for
// whoever ran orch pr poll; other events are no review decisions.
func TestReviewerTallyGitHub(t *testing.T) {
	rv := &reviewerTally{by: map[string]*ReviewerStats{}}
	rv.add(&Event{Action: ActionReject, Actor: "scheduler"}, &RejectData{Source: "github", Reviewer: "alice"})
	rv.add(&Event{Action: ActionReject, Actor: "lead"}, &RejectData{})
	rv.add(&Event{Action: ActionRespond, Actor: "agent-b"}, &RespondData{})
	rv.add(&Event{Action: ActionClaim, Actor: "agent-b"}, &ClaimData{})
	var got []string
	for n, r := range rv.by {
		got = append(got, fmt.Sprintf("%s %d/%d", n, r.ChangesRequested, r.Reviews))
	}
	if len(got) != 2 || rv.by["alice"] == nil || rv.by["lead"] == nil || rv.by["scheduler"] != nil {
		t.Errorf("reviewers = %v", got)
	}
}

// The per-review list is newest first, and --top bounds it.
func TestReviewStatsRecent(t *testing.T) {
	rv := &reviewerTally{by: map[string]*ReviewerStats{}}
	for _, ts := range []string{"2026-01-01T10:00:00Z", "2026-01-01T10:00:00.5Z", "2026-01-01T09:00:00Z"} {
		rv.reviews = append(rv.reviews, ReviewCount{Task: ts, Issues: 2, Blocking: 1, Suggestions: 1, Verdict: VerdictChangesRequested, Time: ts})
	}
	s := ReviewStats{ReviewTotals: ReviewTotals{ByVerdict: map[string]int{}, BySeverity: map[string]int{}}}
	s.finish(rv, 2)
	var order []string
	for _, r := range s.Recent {
		order = append(order, r.Time)
	}
	if !reflect.DeepEqual(order, []string{"2026-01-01T10:00:00.5Z", "2026-01-01T10:00:00Z"}) || s.Total != 3 || s.Issues != 6 || s.AvgIssuesPerReview != 2 {
		t.Errorf("recent %v, stats %+v", order, s)
	}
}
