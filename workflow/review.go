package workflow

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// Structured reviews: the Tech Lead feedback loop (protocols/
// review-feedback-loop.md). A review lists issues with severities; CRITICAL
// and HIGH block, MEDIUM and LOW are suggestions. Issue IDs R<round>.<n> are
// stable forever. On a re-review the reviewer lists the earlier issues it
// re-opens; the others count as resolved, and only new blocking issues may
// be raised. Escalation is by lack of progress: review.max_no_progress
// rounds in a row that resolved no blocking issue.

// Verdicts of a review.
const (
	VerdictApproved          = "APPROVED"
	VerdictApprovedWithNotes = "APPROVED_WITH_NOTES"
	VerdictChangesRequested  = "CHANGES_REQUESTED"
)

// ReviewResult reports a review.
type ReviewResult struct {
	Result
	Verdict         string
	Round           int
	NewIssues       []taskfile.Issue
	Resolved        []string
	Reopened        []string
	Progress        bool
	NoProgressCount int
	Escalated       string
	// On a re-review: the open suggestions the developer fixed, those it
	// skipped, and whether it skipped them all (the audit note).
	SuggestionsAdopted    []string
	SuggestionsSkipped    []string
	AllSuggestionsSkipped bool
}

// Review records a structured review of submitted work and moves the task by
// its verdict.
func (e *Engine) Review(id string, in *ReviewInput) (*ReviewResult, error) {
	// A review's text is refused with control characters in it (a
	// reviewer writes it on purpose and can write it again), before
	// checkTexts would make them visible.
	if err := checkReviewInput(in); err != nil {
		return nil, err
	}
	if err := checkTexts(reviewTexts(in)...); err != nil {
		return nil, err
	}
	out := &ReviewResult{}
	res, err := e.transition(id, ActionReview, e.reviewStep(in, out))
	if err != nil {
		return nil, err
	}
	out.Result = *res
	return out, nil
}

// reviewStep is the review's transition: review authority, then the
// verdict. It fills out.
func (e *Engine) reviewStep(in *ReviewInput, out *ReviewResult) func(t *Task) (*change, error) {
	return func(t *Task) (*change, error) {
		ground, err := e.checkReviewer(t, ActionReview)
		if err != nil {
			return nil, err
		}
		c, err := e.reviewChange(t, in, out)
		if c != nil {
			c.ground = ground
		}
		return c, err
	}
}

// reviewIssue is the i-th (0-based) new issue of review round n. A
// reviewer's ID equal to orch's is not repeated beside it.
func reviewIssue(n, i int, is ReviewIssue) taskfile.Issue {
	sev := issueSeverity(is)
	id := fmt.Sprintf("R%d.%d", n, i+1)
	rid := reviewerID(is.ID)
	if strings.EqualFold(rid, id) {
		rid = ""
	}
	return taskfile.Issue{ID: id, Severity: sev, Blocking: taskfile.Blocking(sev), Location: is.Location,
		Title: is.Title, Problem: is.Problem, Fix: is.Fix, Why: is.Why, ReviewerIssueID: rid, FixPatch: taskfile.NormalizePatch(is.FixPatch)}
}

func (e *Engine) reviewChange(t *Task, in *ReviewInput, out *ReviewResult) (*change, error) {
	n := t.Task.RejectionCount + 1
	if err := checkReviewerIDs(n, in); err != nil {
		return nil, err
	}
	earlier := t.File.AllIssues()
	open := map[string]taskfile.Issue{}
	for _, is := range earlier {
		if !is.Resolved {
			open[is.ID] = is
		}
	}
	reopen := map[string]bool{}
	for _, r := range in.Reopen {
		r = strings.TrimSpace(r)
		known, err := findIssueRef(earlier, r)
		if err != nil {
			return nil, err
		}
		if known == nil {
			return nil, &NotFoundError{What: "review issue", Ref: printable(r), Next: Next{Advice: AdviseListIssues, Task: t.Task.ID}}
		}
		if _, ok := open[known.ID]; !ok {
			return nil, &RuleError{Rule: "reopen_resolved", Msg: fmt.Sprintf("%s was resolved in an earlier review and cannot be re-opened; raise a new issue instead", r)}
		}
		reopen[known.ID] = true
	}
	reReview := t.Task.RejectionCount > 0
	var news []taskfile.Issue
	for i, is := range in.Issues {
		ri := reviewIssue(n, i, is) // the severity as recorded: aliases and blocking flags decided
		if reReview && !ri.Blocking {
			return nil, &RuleError{Rule: "new_suggestion_on_rereview", Msg: fmt.Sprintf("issue %d (%s %q): a re-review may not raise new suggestions, only new blocking issues (CRITICAL, HIGH)", i+1, ri.Severity, is.Title),
				Next: Next{Advice: AdviseDropSuggestion}}
		}
		news = append(news, ri)
	}
	// Earlier issues not re-opened are resolved.
	resolved := map[string]bool{}
	progress := false
	for id, is := range open {
		if reopen[id] {
			continue
		}
		resolved[id] = true
		if is.Blocking {
			progress = true
		}
	}
	blocking := false
	for _, is := range news {
		if is.Blocking {
			blocking = true
		}
	}
	for id := range reopen {
		if open[id].Blocking {
			blocking = true
		}
	}
	hadBlocking := false
	for _, is := range open {
		if is.Blocking {
			hadBlocking = true
		}
	}
	adopted, skipped := suggestionsAnswered(earlier, open)
	// The protocol's safeguard against approvals where the developer skips
	// every suggestion (review-feedback-loop.md, "Non-Blocking Approval
	// Safeguard"): a re-review says so, for the audit, without blocking.
	allSkipped := reReview && len(skipped) > 0 && len(adopted) == 0
	noProgress := 0
	if reReview && hadBlocking && !progress {
		noProgress = t.Task.NoProgress + 1
	}
	verdict := VerdictApproved
	switch {
	case blocking:
		verdict = VerdictChangesRequested
	case len(news) > 0 || len(reopen) > 0:
		verdict = VerdictApprovedWithNotes
	}
	f, err := t.File.SetIssuesResolved(resolved)
	if err != nil {
		return nil, err
	}
	resolvedList := sortedKeys(resolved)
	reopenedList := sortedKeys(reopen)
	out.Verdict, out.Round, out.NewIssues, out.Resolved, out.Reopened, out.Progress, out.NoProgressCount = verdict, n, news, resolvedList, reopenedList, progress, noProgress
	src := e.roundSource(in.Notes, news, open, reopenedList, resolvedList, skipped, allSkipped)
	data := &ReviewData{ReviewFindings: ReviewFindings{Verdict: verdict, Round: n, Issues: news, Reopen: reopenedList, Resolved: resolvedList,
		Progress: progress, NoProgressCount: noProgress, ReReview: reReview}}
	if reReview {
		data.Suggestions = &Suggestions{Adopted: nonNilStrings(adopted), Skipped: nonNilStrings(skipped), AllSkipped: allSkipped}
	}
	out.SuggestionsAdopted, out.SuggestionsSkipped, out.AllSuggestionsSkipped = adopted, skipped, allSkipped
	if verdict == VerdictChangesRequested {
		if f, err = f.Apply(taskfile.Set(taskfile.KeyNoProgress, taskfile.Int(noProgress))); err != nil {
			return nil, err
		}
		tt := *t
		tt.File = f
		c, err := e.rejectChange(&tt, rejection{Sources: []taskfile.Source{src}, Verdict: verdict, Data: data, NoProgress: noProgress,
			Summary: fmt.Sprintf("%d new blocking issue(s), %d re-opened", countBlocking(news), len(reopenedList))})
		if err != nil {
			return nil, err
		}
		c.trailers.Add(gitstore.TrailerVerdict, verdict)
		out.Escalated = data.Rejection.Escalated
		return c, nil
	}
	// Approved, with or without notes: the review is recorded in the file.
	if f, err = f.AddSection(taskfile.RenderRound(taskfile.Round{Number: n, Verdict: verdict, Approval: true, Sources: []taskfile.Source{src}})); err != nil {
		return nil, err
	}
	to, f, err := e.approved(&t.Task, f)
	if err != nil {
		return nil, err
	}
	data.Approval = &ReviewApproval{Author: t.Task.SubmittedBy, Rounds: t.Task.RejectionCount}
	body := fmt.Sprintf("%s by %s (round %d): %d suggestion(s).", strings.ReplaceAll(verdict, "_", " "), e.Actor, n, len(news))
	if allSkipped {
		body += " " + AllSuggestionsSkipped + "."
	}
	trailers := append(gitstore.Trailers{{Key: gitstore.TrailerVerdict, Value: verdict}, {Key: gitstore.TrailerRound, Value: fmt.Sprint(n)}}, unlockedTrailer(&t.Task)...)
	if len(t.Task.LockedOut) > 0 {
		data.Approval.Unlocked = t.Task.LockedOut
	}
	return &change{file: f, to: to, data: data,
		body:     body,
		trailers: trailers}, nil
}

// roundSource is a review round's text and issues: the notes, what was
// re-opened and resolved, the audit note when every suggestion was
// skipped, and the new issues with the re-opened ones listed again.
func (e *Engine) roundSource(notes string, news []taskfile.Issue, open map[string]taskfile.Issue, reopenedList, resolvedList, skipped []string, allSkipped bool) taskfile.Source {
	var text strings.Builder
	if notes := strings.TrimSpace(notes); notes != "" {
		text.WriteString(notes + "\n")
	}
	if len(reopenedList) > 0 {
		fmt.Fprintf(&text, "\nRe-opened (still not fixed): %s.\n", strings.Join(reopenedList, ", "))
	}
	if len(resolvedList) > 0 {
		fmt.Fprintf(&text, "\nResolved: %s.\n", strings.Join(resolvedList, ", "))
	}
	if allSkipped {
		fmt.Fprintf(&text, "\n%s: %s (none was answered FIXED). Not blocking; noted for the audit.\n", AllSuggestionsSkipped, strings.Join(skipped, ", "))
	}
	// A re-opened issue is listed again in the new round, under its own ID,
	// so that the next submission must answer it again (the submit guard
	// looks at the newest round) and the prompt shows it with the new work.
	roundIssues := append([]taskfile.Issue(nil), news...)
	for _, id := range reopenedList {
		is := open[id]
		is.Resolved, is.Responses, is.Line = false, nil, 0
		if !strings.HasSuffix(is.Title, "(re-opened)") {
			is.Title = strings.TrimSpace(is.Title + " (re-opened)")
		}
		roundIssues = append(roundIssues, is)
	}
	return taskfile.Source{From: e.Actor + " via orch review", Time: e.Now(), Text: strings.TrimSpace(text.String()), Issues: roundIssues}
}

// AllSuggestionsSkipped is the protocol's audit note on a re-review after
// which the developer fixed none of the open suggestions.
const AllSuggestionsSkipped = "All suggestions skipped"

// suggestionsAnswered sorts the open suggestions (non-blocking issues) of
// earlier rounds into those the developer adopted (the newest answer is
// FIXED) and those skipped (deferred, rejected, or not answered). Answers
// are written under the newest copy of an issue (a re-opened issue is
// listed again in the round that re-opened it), which findIssue finds.
func suggestionsAnswered(earlier []taskfile.Issue, open map[string]taskfile.Issue) (adopted, skipped []string) {
	for id, is := range open {
		if is.Blocking {
			continue
		}
		if latest := findIssue(earlier, id); latest != nil && lastStatus(latest.Responses) == "FIXED" {
			adopted = append(adopted, id)
		} else {
			skipped = append(skipped, id)
		}
	}
	sort.Slice(adopted, func(i, j int) bool { return issueLess(adopted[i], adopted[j]) })
	sort.Slice(skipped, func(i, j int) bool { return issueLess(skipped[i], skipped[j]) })
	return adopted, skipped
}

func lastStatus(rs []taskfile.Response) string {
	if len(rs) == 0 {
		return ""
	}
	return strings.ToUpper(rs[len(rs)-1].Status)
}

func nonNilStrings(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// findIssueRef finds the issue a reference names (newest round first):
// orch's ID, or else a reviewer's own ID (the protocol's TL-001) when it
// names one issue. nil when nothing matches.
func findIssueRef(issues []taskfile.Issue, ref string) (*taskfile.Issue, error) {
	if is := findIssue(issues, ref); is != nil {
		return is, nil
	}
	ref = reviewerID(ref)
	if ref == "" {
		return nil, nil
	}
	var found *taskfile.Issue
	var ids []string
	for i := range issues {
		if !strings.EqualFold(issues[i].ReviewerIssueID, ref) {
			continue
		}
		if found == nil {
			found = &issues[i]
		}
		if !slices.Contains(ids, issues[i].ID) {
			ids = append(ids, issues[i].ID)
		}
	}
	if len(ids) > 1 {
		return nil, &UsageError{Msg: fmt.Sprintf("%q is the reviewer's ID of %d issues (%s)", clipArg(ref), len(ids), strings.Join(ids, ", ")),
			Next: Next{Advice: AdviseNameIssueByID, Issues: ids}}
	}
	return found, nil
}

func findIssue(is []taskfile.Issue, id string) *taskfile.Issue {
	for i := range is {
		if is[i].ID == id {
			return &is[i]
		}
	}
	return nil
}

func countBlocking(is []taskfile.Issue) int {
	n := 0
	for _, x := range is {
		if x.Blocking {
			n++
		}
	}
	return n
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return issueLess(out[i], out[j]) })
	return out
}

// issueLess orders R1.2 before R1.10 before R2.1.
func issueLess(a, b string) bool {
	var ar, an, br, bn int
	fmt.Sscanf(a, "R%d.%d", &ar, &an)
	fmt.Sscanf(b, "R%d.%d", &br, &bn)
	if ar != br {
		return ar < br
	}
	if an != bn {
		return an < bn
	}
	return a < b
}
