package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
)

// Structured reviews: the Tech Lead feedback loop (protocols/
// review-feedback-loop.md). A review lists issues with severities; CRITICAL
// and HIGH block, MEDIUM and LOW are suggestions. Issue IDs R<round>.<n> are
// stable forever. On a re-review the reviewer lists the earlier issues it
// re-opens; the others count as resolved, and only new blocking issues may
// be raised. Escalation is by lack of progress: review.max_no_progress
// rounds in a row that resolved no blocking issue.

// ReviewIssue is one issue as a reviewer writes it: orch's fields, and the
// review protocol's own (id, blocking, fix_patch, and its older severity
// names), so that a review written to the protocol is taken as it is.
type ReviewIssue struct {
	// ID is the reviewer's own name for the issue (the protocol's TL-001).
	// orch numbers issues itself (R<round>.<n>, stable forever); an ID equal
	// to the one orch gives is the same name, any other R<round>.<n> would
	// contradict it, and anything else is kept beside orch's ID.
	ID       string `json:"id,omitempty"`
	Severity string `json:"severity"`
	// Blocking, when given, must agree with the severity; given alone, it
	// decides it (true: HIGH, false: MEDIUM).
	Blocking *bool  `json:"blocking,omitempty"`
	Title    string `json:"title"`
	Location string `json:"location,omitempty"`
	Problem  string `json:"problem,omitempty"`
	Fix      string `json:"fix,omitempty"`
	Why      string `json:"why,omitempty"`
	// FixPatch is a unified diff the reviewer suggests (the protocol's
	// optional fix_patch), written as a diff code block under the issue.
	FixPatch string `json:"fix_patch,omitempty"`
}

// ReviewInput is the JSON of `orch review -F`.
type ReviewInput struct {
	Issues []ReviewIssue `json:"issues"`
	Reopen []string      `json:"reopen"`
	Notes  string        `json:"notes"`
}

// Verdicts of a review.
const (
	VerdictApproved          = "APPROVED"
	VerdictApprovedWithNotes = "APPROVED_WITH_NOTES"
	VerdictChangesRequested  = "CHANGES_REQUESTED"
)

// maxReviewBytes bounds a review document.
const maxReviewBytes = 1 << 20

// ParseReview reads a review document strictly: unknown fields and wrong
// types are errors naming the line and column.
func ParseReview(path string, data []byte) (*ReviewInput, error) {
	if len(data) > maxReviewBytes {
		return nil, &UsageError{Msg: fmt.Sprintf("%s: the review is larger than %d bytes", path, maxReviewBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in ReviewInput
	if err := dec.Decode(&in); err != nil {
		return nil, &UsageError{Msg: jsonErrorAt(path, data, err), Next: Next{Advice: AdviseReviewForm}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &UsageError{Msg: path + ": unexpected data after the review object"}
	}
	return &in, nil
}

// jsonErrorAt names the line and column of a JSON decoding error.
func jsonErrorAt(path string, data []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if off < 0 || off > int64(len(data)) {
		return path + ": " + msg
	}
	line := bytes.Count(data[:off], []byte{'\n'}) + 1
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf("%s:%d:%d: %s", path, line, col, msg)
}

var issueFlagSev = lazyregexp.New(`^[A-Za-z]+$`)

// ParseIssueFlag reads --issue 'SEVERITY|TITLE[|LOCATION[|PROBLEM[|FIX[|WHY]]]]'.
func ParseIssueFlag(s string) (ReviewIssue, error) {
	parts := strings.Split(s, "|")
	if len(parts) < 2 || !issueFlagSev().MatchString(strings.TrimSpace(parts[0])) {
		return ReviewIssue{}, &UsageError{Msg: fmt.Sprintf("--issue %q: want SEVERITY|TITLE[|LOCATION[|PROBLEM[|FIX[|WHY]]]]", printable(s)), Next: Next{Advice: AdviseIssueFlag}}
	}
	for len(parts) < 6 {
		parts = append(parts, "")
	}
	return ReviewIssue{Severity: strings.TrimSpace(parts[0]), Title: strings.TrimSpace(parts[1]), Location: strings.TrimSpace(parts[2]),
		Problem: strings.TrimSpace(parts[3]), Fix: strings.TrimSpace(parts[4]), Why: strings.TrimSpace(parts[5])}, nil
}

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

// severityNames maps every severity a review may name onto orch's four.
// The review protocol (review-feedback-loop.md, "Severity Taxonomy
// Unification") makes CRITICAL/HIGH/MEDIUM/LOW canonical and maps the Tech
// Lead's older terms: BLOCKER -> CRITICAL, IMPORTANT -> HIGH, SUGGESTION ->
// MEDIUM, NIT -> LOW. MINOR is the protocol's rank below SUGGESTION ("fix if
// easy, otherwise skip"; its summary's suggestion/minor counts became
// medium/low), so LOW; FYI, the last term of the same taxonomy, is LOW too.
var severityNames = map[string]string{
	"CRITICAL": "CRITICAL", "HIGH": "HIGH", "MEDIUM": "MEDIUM", "LOW": "LOW",
	"BLOCKER": "CRITICAL", "IMPORTANT": "HIGH", "SUGGESTION": "MEDIUM", "MINOR": "LOW", "NIT": "LOW", "FYI": "LOW",
}

// SeverityAliases is how the protocol's older severity names are recorded,
// for help texts: "BLOCKER=CRITICAL, ...".
const SeverityAliases = "BLOCKER=CRITICAL, IMPORTANT=HIGH, SUGGESTION=MEDIUM, MINOR=LOW, NIT=LOW, FYI=LOW"

// issueSeverity is the severity an issue is recorded with: its own, through
// the aliases; or, when it names none, the one its blocking flag decides
// (HIGH or MEDIUM: the lesser of each kind, since the reviewer said only
// whether it blocks). "" when neither says anything orch knows.
func issueSeverity(is ReviewIssue) string {
	if s := strings.ToUpper(strings.TrimSpace(is.Severity)); s != "" {
		return severityNames[s]
	}
	switch {
	case is.Blocking == nil:
		return ""
	case *is.Blocking:
		return "HIGH"
	}
	return "MEDIUM"
}

// checkReviewInput checks what Review needs of every issue. It refuses only
// what is missing or contradicts itself: an alias, a blocking flag that
// agrees with the severity, a reviewer's own ID and a patch are all taken.
func checkReviewInput(in *ReviewInput) error {
	ids := map[string]int{}
	for i, is := range in.Issues {
		sev := issueSeverity(is)
		if sev == "" {
			return &UsageError{Msg: fmt.Sprintf("issue %d: severity %q is not one of CRITICAL, HIGH, MEDIUM, LOW (or the protocol's %s)", i+1, printable(is.Severity), SeverityAliases),
				Next: Next{Advice: AdviseSeverities}}
		}
		if is.Blocking != nil && *is.Blocking != taskfile.Blocking(sev) {
			kind := "a suggestion"
			if taskfile.Blocking(sev) {
				kind = "blocking"
			}
			name := strings.ToUpper(strings.TrimSpace(is.Severity))
			if name != sev {
				name += " (" + sev + ")"
			}
			return &UsageError{Msg: fmt.Sprintf("issue %d (%q): \"blocking\": %v contradicts its severity %s, which is %s", i+1, clipArg(is.Title), *is.Blocking, name, kind),
				Next: Next{Advice: AdviseSeverityOrFlag}}
		}
		if strings.TrimSpace(is.Title) == "" {
			return &UsageError{Msg: fmt.Sprintf("issue %d has no title", i+1)}
		}
		for _, f := range []struct{ name, val string }{{"severity", is.Severity}, {"title", is.Title}, {"location", is.Location}, {"problem", is.Problem}, {"fix", is.Fix}, {"why", is.Why}, {"id", is.ID}, {"fix_patch", is.FixPatch}} {
			if hasControl(f.val) {
				return &UsageError{Msg: fmt.Sprintf("issue %d: the %s contains control characters", i+1, f.name), Next: Next{Advice: AdviseReviewIsText}}
			}
		}
		if id := reviewerID(is.ID); id != "" {
			if strings.ContainsAny(is.ID, "\r\n") {
				return &UsageError{Msg: fmt.Sprintf("issue %d: the id is more than one line", i+1)}
			}
			if j, dup := ids[strings.ToUpper(id)]; dup {
				return &UsageError{Msg: fmt.Sprintf("issues %d and %d have the same id %q: an id names one issue", j, i+1, clipArg(id))}
			}
			ids[strings.ToUpper(id)] = i + 1
		}
	}
	if hasControl(in.Notes) {
		return &UsageError{Msg: "the notes contain control characters", Next: Next{Advice: AdviseReviewIsText}}
	}
	return nil
}

// reviewerID is a reviewer's issue ID as it is kept: one line, spacing
// folded.
func reviewerID(id string) string { return text.OneLine(id) }

var orchIssueIDRE = lazyregexp.New(`^[Rr]\d+\.\d+$`)

// checkReviewerIDs compares the reviewers' IDs of round n's new issues with
// the IDs orch gives them: the same ID is fine, a different R<round>.<n>
// contradicts it (the developer would answer the wrong issue).
func checkReviewerIDs(n int, in *ReviewInput) error {
	for i, is := range in.Issues {
		id := reviewerID(is.ID)
		want := fmt.Sprintf("R%d.%d", n, i+1)
		if orchIssueIDRE().MatchString(id) && !strings.EqualFold(id, want) {
			return &UsageError{Msg: fmt.Sprintf("issue %d (%q): id %s contradicts the ID orch gives it, %s (the issues of review round %d are numbered in order)", i+1, clipArg(is.Title), id, want, n),
				Next: Next{Advice: AdviseReviewerID, Issue: want}}
		}
	}
	return nil
}

// hasControl reports control characters other than tab and line breaks:
// they cannot go into a task file (NUL) or would reach a terminal raw.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return true
		}
	}
	return false
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
	var text strings.Builder
	if notes := strings.TrimSpace(in.Notes); notes != "" {
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
	src := taskfile.Source{From: e.Actor + " via orch review", Time: e.Now(), Text: strings.TrimSpace(text.String()), Issues: roundIssues}
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

// Response statuses.
var responseStatuses = map[string]string{"fixed": "FIXED", "deferred": "DEFERRED", "rejected": "REJECTED"}

// MinJustificationWords is how long the justification of a REJECTED answer
// must be: a sentence that says why the issue does not apply. The review
// protocol asks for technical reasoning and names "too hard", "takes too
// long" and "I disagree" as weak reasons; a word count cannot judge
// reasoning (the reviewer does, on re-review), but it refuses the answers
// that give none: "no", "won't fix", "I disagree with this". Six words
// admit a terse real reason ("the handler computes it once already").
const MinJustificationWords = 6

// justificationWords counts the words of a text: runs of non-space
// characters with at least one letter or digit, so that punctuation and
// dashes do not count.
func justificationWords(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			n++
		}
	}
	return n
}

// Respond records an implementer's answer to a review issue, under the issue
// in the task file. The issue is named by orch's ID or by the reviewer's own
// ID for it. commit, when given, is any commit-ish of the repository the
// command runs in (HEAD is this worktree's); it must be on the task's branch,
// and its full hash is recorded.
func (e *Engine) Respond(id, issue, status, text, commit string) (*Result, error) {
	if err := checkTexts(namedText{"the response (-m)", &text}); err != nil {
		return nil, err
	}
	st, ok := responseStatuses[strings.ToLower(status)]
	if !ok {
		return nil, &UsageError{Msg: fmt.Sprintf("%q is not a response: use fixed, deferred or rejected", printable(status))}
	}
	text = strings.TrimSpace(text)
	if text == "" {
		if st == "REJECTED" {
			return nil, &UsageError{Msg: "rejecting an issue needs a justification (-m TEXT)", Next: Next{Advice: AdviseJustifyText, Task: id, Issue: issue}}
		}
		return nil, &UsageError{Msg: "a response needs a text (-m TEXT)", Next: Next{Advice: AdviseRespondText, Task: id, Issue: issue, Status: strings.ToLower(st)}}
	}
	var fix plumbing.Hash
	if commit = strings.TrimSpace(commit); commit != "" {
		h, err := e.Store.Repo.ResolveRevision(commit)
		if err != nil {
			return nil, commitError(commit, err)
		}
		fix = h
	}
	return e.transitionAny(id, ActionRespond, func(t *Task) (*change, error) {
		if t.Task.Queue != "claimed" {
			return nil, &RuleError{Rule: "respond_not_claimed", Msg: fmt.Sprintf("%s is %s: responses are written while the task is claimed", id, t.Task.Queue), Next: Next{Advice: AdviseClaimFirst, Task: id}}
		}
		if err := e.requireClaimant(&t.Task, "respond"); err != nil {
			return nil, err
		}
		is, err := findIssueRef(t.File.AllIssues(), issue)
		if err != nil {
			return nil, err
		}
		if is == nil {
			return nil, &NotFoundError{What: "review issue", Ref: printable(issue), Next: Next{Advice: AdviseListIssues, Task: id}}
		}
		ref := is.ID
		if st == "DEFERRED" && is.Blocking {
			return nil, &RuleError{Rule: "defer_blocking", Msg: fmt.Sprintf("%s is blocking (%s): it can be fixed, or rejected with a justification, but not deferred", ref, is.Severity),
				Next: Next{Advice: AdviseRespondFixed, Task: id, Issue: ref}}
		}
		if n := justificationWords(text); st == "REJECTED" && n < MinJustificationWords {
			next := Next{Advice: AdviseJustifyOrDefer, Task: id, Issue: ref}
			if is.Blocking {
				next.Advice = AdviseJustifyBlocking
			}
			return nil, &RuleError{Rule: "weak_justification", Msg: fmt.Sprintf("rejecting %s needs a justification that says why the issue does not apply, in at least %d words; %q has %d", ref, MinJustificationWords, clipArg(text), n),
				Next: next}
		}
		full := ""
		if !fix.IsZero() {
			if err := e.checkOnBranch(t, commit, fix); err != nil {
				return nil, err
			}
			full = fix.String()
		}
		f, err := t.File.SetIssueResponse(ref, taskfile.Response{Status: st, Commit: full, Text: text})
		if err != nil {
			return nil, err
		}
		// An answer is work on the task: it renews the claimant's lease.
		if t.Task.Queue == taskfile.Claimed {
			if f, err = f.Apply(taskfile.Set(taskfile.KeyHeartbeatAt, taskfile.Time(e.Now()))); err != nil {
				return nil, err
			}
		}
		// The round answered (a re-opened issue keeps its ID in later
		// rounds) lets orch stats count each answer once.
		round := t.Task.RejectionCount
		data := &RespondData{Issue: ref, Status: st, Commit: full, Text: text, Blocking: is.Blocking, Severity: is.Severity, Round: &round}
		if ref != issue {
			data.NamedAs = issue
		}
		return &change{file: f, body: fmt.Sprintf("%s: %s by %s.", ref, st, e.Actor),
			data: data, trailers: gitstore.Trailers{{Key: gitstore.TrailerIssue, Value: ref}}}, nil
	})
}

// commitError says why --commit names no commit.
func commitError(commit string, err error) error {
	var nf *gitrepo.ErrRevisionNotFound
	var amb *gitrepo.ErrAmbiguousRevision
	var un *gitrepo.ErrUnsupportedRevision
	switch {
	case errors.As(err, &nf):
		return &UsageError{Msg: fmt.Sprintf("--commit %q names no commit in this repository", printable(commit)), Next: Next{Advice: AdviseFixCommit}}
	case errors.As(err, &amb):
		return &UsageError{Msg: fmt.Sprintf("--commit %q is ambiguous: %d commits start with it", printable(commit), len(amb.Commits)), Next: Next{Advice: AdviseMoreDigits}}
	case errors.As(err, &un):
		return &UsageError{Msg: fmt.Sprintf("--commit %q is not a revision orch reads", printable(commit)), Next: Next{Advice: AdviseRevisionForm}}
	}
	return err
}

// checkOnBranch refuses a fix commit that is not on the task's branch (its
// tip or an ancestor of it): the answer would point the reviewer at work
// the submission does not contain. The branch is the local one, else a
// remote's copy.
func (e *Engine) checkOnBranch(t *Task, commit string, h plumbing.Hash) error {
	id, br := t.Task.ID, t.Task.Branch
	next := Next{Advice: AdviseCommitOnBranch, Task: id}
	if br == "" {
		return &RuleError{Rule: "commit_not_on_branch", Msg: fmt.Sprintf("%s has no branch, so --commit %s cannot be checked against it", id, printable(commit)), Next: Next{Advice: AdviseNoCommitFlag}}
	}
	repo := e.Store.Repo
	tip, err := repo.ReadRef("refs/heads/" + br)
	if err != nil || tip.IsZero() {
		tip, _ = repo.RemoteCopy(br)
	}
	if tip.IsZero() {
		return &RuleError{Rule: "commit_not_on_branch", Msg: fmt.Sprintf("%s's branch %s is not in this repository, so --commit %s cannot be checked against it", id, br, printable(commit)), Next: next}
	}
	// git answers quickly from its commit-graph; a walk of the objects
	// confirms a "no" (and answers when git cannot run).
	if h == tip || repo.IsAncestor(h, tip) || e.Store.Contains(tip, h) {
		return nil
	}
	return &RuleError{Rule: "commit_not_on_branch", Msg: fmt.Sprintf("--commit %s (%s) is not on %s's branch %s", printable(commit), h.String()[:12], id, br), Next: next}
}
