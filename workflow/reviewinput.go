package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
)

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
