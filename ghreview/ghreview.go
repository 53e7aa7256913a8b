// Package ghreview turns GitHub pull-request reviews into orch review
// feedback. It reads GitHub's REST shapes (from `gh api` or saved files) and
// never writes to GitHub. The gh adapter runs the gh CLI (ORCH_GH names the
// binary); everything else is pure.
package ghreview

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orch-tool/orch/taskfile"
)

// User is a GitHub account.
type User struct {
	Login string `json:"login"`
}

// Review is one entry of GET /repos/{o}/{r}/pulls/{n}/reviews.
type Review struct {
	ID          int64     `json:"id"`
	User        User      `json:"user"`
	Body        string    `json:"body"`
	State       string    `json:"state"` // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING
	SubmittedAt time.Time `json:"submitted_at"`
	CommitID    string    `json:"commit_id"`
	HTMLURL     string    `json:"html_url"`
}

// Comment is one entry of GET /repos/{o}/{r}/pulls/{n}/comments (a line
// comment of a review).
type Comment struct {
	ID           int64     `json:"id"`
	ReviewID     int64     `json:"pull_request_review_id"`
	User         User      `json:"user"`
	Body         string    `json:"body"`
	Path         string    `json:"path"`
	Line         *int      `json:"line"`
	OriginalLine *int      `json:"original_line"`
	InReplyTo    int64     `json:"in_reply_to_id"`
	CreatedAt    time.Time `json:"created_at"`
	HTMLURL      string    `json:"html_url"`
}

// MaxJSON bounds what is read from gh or a file.
const MaxJSON = 32 << 20

// ParseError is JSON that is not GitHub's shape.
type ParseError struct {
	What string
	Msg  string
}

func (e *ParseError) Error() string { return e.What + ": " + e.Msg }

// decodePages reads one JSON array, or several concatenated arrays (what
// `gh api --paginate` prints without --slurp), or an array of arrays (with
// --slurp).
func decodePages[T any](what string, data []byte) ([]T, error) {
	if len(data) > MaxJSON {
		return nil, &ParseError{what, fmt.Sprintf("larger than %d bytes", MaxJSON)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []T
	pages := 0
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &ParseError{what, "not JSON: " + err.Error()}
		}
		pages++
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] != '[' {
			return nil, &ParseError{what, "want a JSON array (GitHub's REST list shape)"}
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, &ParseError{what, err.Error()}
		}
		for i, it := range items {
			it = bytes.TrimSpace(it)
			if len(it) > 0 && it[0] == '[' { // --slurp: an array of pages
				// One level only: recursing re-reads the input once per
				// level of nesting, which is quadratic on hostile input.
				var inner []T
				if err := json.Unmarshal(it, &inner); err != nil {
					return nil, &ParseError{what, fmt.Sprintf("page %d: %v", i+1, err)}
				}
				out = append(out, inner...)
				continue
			}
			var v T
			if err := json.Unmarshal(it, &v); err != nil {
				return nil, &ParseError{what, fmt.Sprintf("item %d: %v", i+1, err)}
			}
			out = append(out, v)
		}
	}
	if pages == 0 {
		return nil, &ParseError{what, "empty"}
	}
	return out, nil
}

// ParseReviews reads the reviews of a pull request.
func ParseReviews(data []byte) ([]Review, error) {
	rs, err := decodePages[Review]("reviews", data)
	if err != nil {
		return nil, err
	}
	for i := range rs {
		r := &rs[i]
		if r.ID == 0 || r.State == "" {
			return nil, &ParseError{"reviews", fmt.Sprintf("item %d has no id or state: not a pull request review", i+1)}
		}
		if err := checkText(r.Body); err != nil {
			return nil, &ParseError{"reviews", fmt.Sprintf("review %d: its body %v", r.ID, err)}
		}
		r.User.Login = CleanLogin(r.User.Login)
		r.State, r.HTMLURL = cleanLine(r.State), cleanLine(r.HTMLURL)
	}
	return rs, nil
}

// checkText refuses text no person wrote in a review: larger than
// taskfile.MaxText (the limit on every text orch writes: a task file is read
// whole by every agent, and no review written by a person is near it), or
// holding control characters (a NUL byte cannot go into a task file; escape
// sequences would reach a terminal raw). Tabs and line ends are text.
func checkText(s string) error {
	if len(s) > taskfile.MaxText {
		return fmt.Errorf("is %d bytes; orch imports at most %d bytes of a review's text", len(s), taskfile.MaxText)
	}
	for i, r := range s {
		if r == '\t' || r == '\n' || r == '\r' {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("holds a control character (%U at byte %d)", r, i)
		}
	}
	return nil
}

// cleanLine makes a one-line string from GitHub safe to print and to write
// into a task file: control characters (line breaks included) become '?',
// and it is cut at 200 bytes.
func cleanLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "")
	}
	return s
}

// CleanText makes a message that may hold text from GitHub (or gh) safe to
// print: control characters other than line breaks and tabs become '?'.
func CleanText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

// CleanLogin returns a GitHub login as orch prints and records it: logins
// are letters, digits and hyphens (bots end in "[bot]"); anything else is
// replaced by '?', so a hostile login cannot break a line, a heading or a
// terminal.
func CleanLogin(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.[]", r)) {
			return r
		}
		return '?'
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// ParseComments reads the review comments of a pull request.
func ParseComments(data []byte) ([]Comment, error) {
	cs, err := decodePages[Comment]("comments", data)
	if err != nil {
		return nil, err
	}
	for i := range cs {
		c := &cs[i]
		if c.ID == 0 || c.Path == "" && c.ReviewID == 0 {
			return nil, &ParseError{"comments", fmt.Sprintf("item %d has no id, or neither path nor pull_request_review_id: not a review comment", i+1)}
		}
		if err := checkText(c.Body); err != nil {
			return nil, &ParseError{"comments", fmt.Sprintf("comment %d: its body %v", c.ID, err)}
		}
		// A comment without a path (on the pull request as a whole, or a
		// path GitHub no longer knows) is kept without a location.
		c.User.Login, c.Path, c.HTMLURL = CleanLogin(c.User.Login), cleanLine(c.Path), cleanLine(c.HTMLURL)
	}
	return cs, nil
}

// Marker is what orch once wrote into imported feedback to remember a
// review. Reviews are now recorded in the task's github_reviews field; a
// task file without that field may still hold markers (LegacyImported).
func Marker(reviewID int64) string { return fmt.Sprintf("<!-- github-review: %d -->", reviewID) }

// LegacyImported reports whether a task file from before github_reviews
// holds a review's marker.
func LegacyImported(src []byte, reviewID int64) bool {
	return bytes.Contains(src, []byte(Marker(reviewID)))
}

// ImportedIn is Decide's imported for a task file from before
// github_reviews, plus the reviews in ids.
func ImportedIn(src []byte, ids ...int64) func(int64) bool {
	return func(id int64) bool { return slices.Contains(ids, id) || LegacyImported(src, id) }
}

// Feedback is what to import for a pull request.
type Feedback struct {
	Review   Review
	Sources  []taskfile.Source // one: the review's body and its line comments
	Blocking int
	Comments int
	Included []int64 // the reviews imported (the decisive one, comment-only ones before it)
}

// Outcome says why nothing is imported.
type Outcome string

// Why a pull request's reviews lead to no rejection.
const (
	NoReviews        Outcome = "no reviews"
	Approved         Outcome = "approved"
	OnlyComments     Outcome = "only comments"
	AlreadyImported  Outcome = "already imported"
	ChangesRequested Outcome = "changes requested"
)

// Decide finds the newest decisive review (APPROVED or CHANGES_REQUESTED;
// dismissed, pending and comment-only reviews do not decide). A newest
// CHANGES_REQUESTED that the task does not hold yet becomes feedback: the
// review's body, then each line comment as path:line, BLOCKING when it comes
// from the changes-requested review or starts with "BLOCKING:", else a
// suggestion. Comment-only reviews made since the previous decisive review
// follow, each under its own reviewer's name with its body and its line
// comments (suggestions, or BLOCKING: when so marked).
func Decide(reviews []Review, comments []Comment, imported func(reviewID int64) bool, round int) (*Feedback, Outcome) {
	if len(reviews) == 0 {
		return nil, NoReviews
	}
	sorted := append([]Review(nil), reviews...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].SubmittedAt.Before(sorted[j].SubmittedAt) })
	var newest *Review
	for i := range sorted {
		switch strings.ToUpper(sorted[i].State) {
		case "APPROVED", "CHANGES_REQUESTED":
			newest = &sorted[i]
		}
	}
	if newest == nil {
		return nil, OnlyComments
	}
	if strings.ToUpper(newest.State) == "APPROVED" {
		return nil, Approved
	}
	if imported(newest.ID) {
		return nil, AlreadyImported
	}
	// The reviews whose comments belong to this import: the newest one and
	// comment-only reviews since the last decisive review before it.
	include := map[int64]bool{newest.ID: true}
	var prevDecisive time.Time
	for _, r := range sorted {
		if r.ID == newest.ID {
			break
		}
		switch strings.ToUpper(r.State) {
		case "APPROVED", "CHANGES_REQUESTED":
			prevDecisive = r.SubmittedAt
		}
	}
	for _, r := range sorted {
		if strings.ToUpper(r.State) == "COMMENTED" && r.SubmittedAt.After(prevDecisive) && !r.SubmittedAt.After(newest.SubmittedAt) && !imported(r.ID) {
			include[r.ID] = true
		}
	}
	fb := &Feedback{Review: *newest}
	cs := append([]Comment(nil), comments...)
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].Path != cs[j].Path {
			return cs[i].Path < cs[j].Path
		}
		return lineOf(cs[i]) < lineOf(cs[j])
	})
	// One source per review, under its own reviewer's name: the deciding
	// review first, then the comment-only reviews in the order they were
	// made, each with its body and its own line comments.
	order := []*Review{newest}
	for i := range sorted {
		if sorted[i].ID != newest.ID && include[sorted[i].ID] {
			order = append(order, &sorted[i])
		}
	}
	n := 0
	for _, r := range order {
		var issues []taskfile.Issue
		for _, c := range cs {
			if c.ReviewID != r.ID || c.InReplyTo != 0 || strings.TrimSpace(c.Body) == "" {
				continue
			}
			body := strings.TrimSpace(c.Body)
			blocking := r.ID == newest.ID
			if rest, ok := cutPrefixFold(body, "BLOCKING:"); ok {
				blocking, body = true, strings.TrimSpace(rest)
			}
			sev := "suggestion"
			if blocking {
				sev = "BLOCKING"
				fb.Blocking++
			}
			n++
			loc := c.Path
			if l := lineOf(c); l > 0 && c.Path != "" {
				loc = fmt.Sprintf("%s:%d", c.Path, l)
			}
			issues = append(issues, taskfile.Issue{ID: fmt.Sprintf("R%d.%d", round, n), Severity: sev, Blocking: blocking, Location: loc, Problem: body})
		}
		// GitHub bodies often end lines with CRLF; the task file must not.
		text := strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(r.Body, "\r\n", "\n"), "\r", "\n"))
		if r.ID == newest.ID && text == "" {
			text = "Changes requested on GitHub."
		}
		if text == "" && len(issues) == 0 {
			continue // a comment-only review with nothing in it
		}
		if r.HTMLURL != "" {
			text = strings.TrimSpace(text + "\n\n" + r.HTMLURL)
		}
		login := r.User.Login
		if login == "" {
			login = "someone"
		}
		from := "GitHub PR review by " + login
		if r.ID != newest.ID {
			from = "GitHub PR comments by " + login
		}
		fb.Sources = append(fb.Sources, taskfile.Source{From: from, Time: r.SubmittedAt, Text: text, Issues: issues})
	}
	fb.Comments = n
	for id := range include {
		fb.Included = append(fb.Included, id)
	}
	sort.Slice(fb.Included, func(i, j int) bool { return fb.Included[i] < fb.Included[j] })
	return fb, ChangesRequested
}

func lineOf(c Comment) int {
	if c.Line != nil {
		return *c.Line
	}
	if c.OriginalLine != nil {
		return *c.OriginalLine
	}
	return 0
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
