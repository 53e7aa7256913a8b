package taskfile

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/internal/text"
)

// The review feedback format. Each round of review is a level-2 section
//
//	## Review Feedback (rejection #2)
//
// inserted at the top of the body (newest first), holding one level-3
// subsection per source:
//
//	### From lead via orch review (2026-02-06T16:35:00Z)
//
//	- [ ] **R2.1** HIGH `src/api/users.py:56` — SQL injection
//	  User input is interpolated into the query.
//	  Fix: use a parameterised query.
//	  Why: attackers can run arbitrary SQL.
//	  - Response: FIXED (abc1234) — changed to a parameterised query
//
// Free text (orch reject -m) is kept as written. Structured issues are list
// items with a stable ID R<round>.<n>, a severity (CRITICAL and HIGH block;
// MEDIUM and LOW are suggestions; GitHub comments are BLOCKING or
// suggestion), an optional location, text, optional Fix:/Why: lines and
// response sub-items. People can edit all of it by hand; the parser is
// lenient about spacing and reads back what Render writes.

// Issue is one structured review issue.
type Issue struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Blocking bool   `json:"blocking"`
	Location string `json:"location,omitempty"`
	Title    string `json:"title,omitempty"`
	Problem  string `json:"problem,omitempty"`
	Fix      string `json:"fix,omitempty"`
	Why      string `json:"why,omitempty"`
	// ReviewerIssueID is the reviewer's own name for the issue (the review
	// protocol's "id", such as TL-001), kept beside orch's stable ID so that
	// both sides can find it; "" when the reviewer gave none.
	ReviewerIssueID string `json:"reviewer_issue_id,omitempty"`
	// FixPatch is the unified diff the reviewer suggests as the fix (the
	// protocol's optional fix_patch), shown as a diff code block.
	FixPatch  string     `json:"fix_patch,omitempty"`
	Resolved  bool       `json:"resolved"` // the box is ticked: a later review resolved it
	Responses []Response `json:"responses,omitempty"`
	Line      int        `json:"line,omitempty"` // 1-based line in the file
}

// Response is an implementer's answer to an issue.
type Response struct {
	Status string `json:"status"` // FIXED | DEFERRED | REJECTED
	Commit string `json:"commit,omitempty"`
	Text   string `json:"text"`
}

// Source is one "### From ..." subsection.
type Source struct {
	From   string    `json:"from"` // e.g. "lead via orch reject"
	Time   time.Time `json:"time,omitzero"`
	Text   string    `json:"text,omitempty"` // free text, without the issues
	Issues []Issue   `json:"issues,omitempty"`
}

// Round is one "## Review Feedback (rejection #N)" section, or, for a review
// that approved the work, one "## Review (round N)" section.
type Round struct {
	Number   int    `json:"round"`
	Verdict  string `json:"verdict,omitempty"`
	Approval bool   `json:"approval,omitempty"`
	// Landing: a "## Review Feedback (landing #N)" round: the work could
	// not land (a conflict, a red check), numbered by landing failure.
	Landing bool     `json:"landing,omitempty"`
	Sources []Source `json:"sources"`
	Line    int      `json:"line"`
	start   int
	end     int
}

// Blocking reports whether a severity blocks approval.
func Blocking(severity string) bool {
	switch strings.ToUpper(severity) {
	case "CRITICAL", "HIGH", "BLOCKING":
		return true
	}
	return false
}

// ValidSeverity reports whether s is a severity orch accepts.
func ValidSeverity(s string) bool {
	switch strings.ToUpper(s) {
	case "CRITICAL", "HIGH", "MEDIUM", "LOW", "BLOCKING", "SUGGESTION":
		return true
	}
	return false
}

var (
	roundRE    = lazyregexp.New(`^(?:Review Feedback \(rejection #(\d+)\)|Review \(round (\d+)\)|Review Feedback \((?:landing|check) #(\d+)\))\s*$`)
	sourceRE   = lazyregexp.New(`^From (.+?)(?: \((\S+)\))?\s*$`)
	issueRE    = lazyregexp.New("^- \\[( |x|X)\\] \\*\\*(R\\d+\\.\\d+)\\*\\*\\s+([A-Za-z]+)(?:\\s+`([^`]*)`)?(?:\\s*(?:—|--|-)\\s*(.*))?\\s*$")
	responseRE = lazyregexp.New(`^\s+- Response: ([A-Za-z]+)(?: \(([0-9a-fA-F]{4,40})\))?(?:\s*(?:—|--|-)\s*(.*))?\s*$`)
)

// FeedbackRounds parses every review round of the body, newest first (the
// order they stand in the file).
func (f *File) FeedbackRounds() []Round {
	secs := f.Sections()
	var rounds []Round
	for i, s := range secs {
		if s.Level != 2 {
			continue
		}
		m := roundRE().FindStringSubmatch(s.Title)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1] + m[2] + m[3])
		r := Round{Number: n, Line: s.StartLine, Approval: m[2] != "", Landing: m[3] != "", start: s.Start, end: s.End}
		for _, sub := range secs[i+1:] {
			if sub.Start >= s.End {
				break
			}
			if sub.Level != 3 {
				continue
			}
			sm := sourceRE().FindStringSubmatch(sub.Title)
			if sm == nil {
				continue
			}
			src := Source{From: sm[1]}
			if sm[2] != "" {
				src.Time, _ = ParseTime(sm[2])
			}
			line := sub.StartLine + bytes.Count(f.Src[sub.Start:sub.HeadingEnd], []byte{'\n'})
			src.Text, src.Issues = parseIssues(f.Src, sub.HeadingEnd, sub.End, line)
			r.Sources = append(r.Sources, src)
		}
		if v := verdictOf(f.SectionText(s)); v != "" {
			r.Verdict = v
		}
		rounds = append(rounds, r)
	}
	return rounds
}

var verdictRE = lazyregexp.New(`(?m)^Verdict: ([A-Z_]+)`)

func verdictOf(text string) string {
	if m := verdictRE().FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// parseIssues splits a source's text into structured issues and free text;
// line is the 1-based line of start.
func parseIssues(src []byte, start, end, line int) (string, []Issue) {
	text := string(src[start:end])
	lines := strings.SplitAfter(text, "\n")
	var free strings.Builder
	var issues []Issue
	var cur *Issue
	for i := 0; i < len(lines); i++ {
		raw := lines[i]
		l := strings.TrimRight(raw, "\r\n")
		if m := issueRE().FindStringSubmatch(l); m != nil {
			issues = append(issues, Issue{
				ID: m[2], Severity: strings.ToUpper(m[3]), Location: m[4], Title: strings.TrimSpace(m[5]),
				Resolved: m[1] != " ", Line: line + i,
			})
			cur = &issues[len(issues)-1]
			cur.Blocking = Blocking(cur.Severity)
			if strings.EqualFold(m[3], "suggestion") {
				cur.Severity = "suggestion"
			}
			continue
		}
		if cur != nil && indentedLine(l) {
			if rm := responseRE().FindStringSubmatch(l); rm != nil {
				cur.Responses = append(cur.Responses, Response{Status: strings.ToUpper(rm[1]), Commit: rm[2], Text: strings.TrimSpace(rm[3])})
				continue
			}
			t := strings.TrimSpace(l)
			if fence := patchOpener(lines, i); fence != "" {
				var patch []string
				j := i + 2
				for ; j < len(lines); j++ {
					pl := strings.TrimRight(lines[j], "\r\n")
					if !indentedLine(pl) && strings.TrimSpace(pl) != "" {
						break // the item ended with the fence left open
					}
					if closesFence(pl, fence) {
						j++
						break
					}
					patch = append(patch, unindentPatchLine(pl))
				}
				cur.FixPatch = strings.Join(patch, "\n")
				i = j - 1
				continue
			}
			switch {
			case strings.HasPrefix(t, "Fix:"):
				cur.Fix = strings.TrimSpace(strings.TrimPrefix(t, "Fix:"))
			case strings.HasPrefix(t, "Why:"):
				cur.Why = strings.TrimSpace(strings.TrimPrefix(t, "Why:"))
			case strings.HasPrefix(t, reviewerIDLabel):
				cur.ReviewerIssueID = strings.TrimSpace(strings.TrimPrefix(t, reviewerIDLabel))
			default:
				if cur.Problem != "" {
					cur.Problem += "\n"
				}
				cur.Problem += t
			}
			continue
		}
		if strings.TrimSpace(l) == "" && cur != nil {
			continue
		}
		cur = nil
		free.WriteString(raw)
	}
	return strings.TrimSpace(free.String()), issues
}

// The lines under an issue that carry the reviewer's own ID and the
// suggested patch. The patch is a fenced code block right after its label
// line; the label is what makes it the patch, so that a code block in the
// problem text stays problem text.
const (
	reviewerIDLabel = "Reviewer's ID:"
	patchLabel      = "Patch:"
)

// indentedLine reports whether a line continues a list item.
func indentedLine(l string) bool { return strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "\t") }

// patchOpener returns the fence that opens an issue's patch when lines[i]
// is the patch label and the next line opens a code fence; "" otherwise.
func patchOpener(lines []string, i int) string {
	if strings.TrimSpace(lines[i]) != patchLabel || i+1 >= len(lines) {
		return ""
	}
	next := strings.TrimRight(lines[i+1], "\r\n")
	if !indentedLine(next) {
		return ""
	}
	return fenceMarker(strings.TrimLeft(next, " \t"))
}

// closesFence reports whether line l closes a code block opened by fence.
func closesFence(l, fence string) bool {
	t := strings.TrimLeft(l, " \t")
	n := len(t) - len(strings.TrimLeft(t, fence[:1]))
	return n >= len(fence) && strings.TrimSpace(t[n:]) == ""
}

// unindentPatchLine removes the list item's indent that RenderIssue puts
// before each line of a patch (hand edits may have less of it).
func unindentPatchLine(l string) string {
	l = strings.TrimRight(l, "\r")
	switch {
	case strings.HasPrefix(l, "  "):
		return l[2:]
	case strings.HasPrefix(l, "\t"):
		return l[1:]
	}
	return strings.TrimLeft(l, " ")
}

// NormalizePatch is the patch as it is kept: line ends as LF, without the
// blank lines around it. A patch of only white space is no patch.
func NormalizePatch(p string) string {
	p = strings.ReplaceAll(strings.ReplaceAll(p, "\r\n", "\n"), "\r", "\n")
	if strings.TrimSpace(p) == "" {
		return ""
	}
	lines := strings.Split(p, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// RenderPatch writes a patch as a diff code block, each line indented:
// whatever the patch holds (headings, HTML, fences, lines like issues or
// responses), it stays code, for the fence is longer than any backtick run
// inside it. "" for a blank patch.
func RenderPatch(patch, indent string) string {
	p := NormalizePatch(patch)
	if p == "" {
		return ""
	}
	fence := patchFence(p)
	var b strings.Builder
	b.WriteString(indent + fence + "diff\n")
	for _, l := range strings.Split(p, "\n") {
		if l != "" {
			b.WriteString(indent + l)
		}
		b.WriteString("\n")
	}
	b.WriteString(indent + fence + "\n")
	return b.String()
}

// patchFence is a backtick fence longer than any run of backticks in the
// patch, so that nothing in the patch can close the block early.
func patchFence(p string) string {
	longest, run := 0, 0
	for i := 0; i < len(p); i++ {
		if p[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// RenderIssue writes one issue as a list item.
func RenderIssue(is Issue) string {
	var b strings.Builder
	box := " "
	if is.Resolved {
		box = "x"
	}
	fmt.Fprintf(&b, "- [%s] **%s** %s", box, is.ID, is.Severity)
	// One line, or the issue line would not read back as an issue at all.
	if loc := text.OneLine(strings.ReplaceAll(is.Location, "`", "'")); loc != "" {
		fmt.Fprintf(&b, " `%s`", loc)
	}
	if is.Title != "" {
		b.WriteString(" — " + text.OneLine(is.Title))
	}
	b.WriteString("\n")
	for _, l := range strings.Split(strings.TrimSpace(is.Problem), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if responseRE().MatchString("  "+l) || l == patchLabel || strings.HasPrefix(l, reviewerIDLabel) {
				l = `\` + l // text, not a response or a patch the file does not hold
			}
			b.WriteString("  " + l + "\n")
		}
	}
	if is.Fix != "" {
		b.WriteString("  Fix: " + text.OneLine(is.Fix) + "\n")
	}
	if is.Why != "" {
		b.WriteString("  Why: " + text.OneLine(is.Why) + "\n")
	}
	if id := text.OneLine(is.ReviewerIssueID); id != "" {
		b.WriteString("  " + reviewerIDLabel + " " + id + "\n")
	}
	if p := RenderPatch(is.FixPatch, "  "); p != "" {
		b.WriteString("  " + patchLabel + "\n" + p)
	}
	for _, r := range is.Responses {
		b.WriteString(RenderResponse(r))
	}
	return b.String()
}

// RenderResponse writes a response sub-item.
func RenderResponse(r Response) string {
	s := "  - Response: " + strings.ToUpper(r.Status)
	if r.Commit != "" {
		s += " (" + r.Commit + ")"
	}
	if t := text.OneLine(r.Text); t != "" {
		s += " — " + t
	}
	return s + "\n"
}

// RenderSource writes a "### From ..." subsection.
func RenderSource(s Source) string {
	var b strings.Builder
	b.WriteString("### From " + text.OneLine(s.From))
	if !s.Time.IsZero() {
		b.WriteString(" (" + FormatTime(s.Time) + ")")
	}
	b.WriteString("\n\n")
	if t := strings.TrimSpace(s.Text); t != "" {
		b.WriteString(escapeIssueLines(SafeText(t)) + "\n")
		if len(s.Issues) > 0 {
			b.WriteString("\n")
		}
	}
	for _, is := range s.Issues {
		b.WriteString(RenderIssue(is))
	}
	return b.String()
}

// SafeText makes free text (a reviewer's notes, a GitHub review body, a
// pause note) safe to insert into a task file: whatever markdown it holds,
// it cannot end the section it is written into, nor swallow the sections
// after it, so reading the file back never depends on it.
//
//   - an ATX heading of level 1 to 3 becomes level 4 (#### ...);
//   - a setext underline (a line of only = or -) is escaped (\---), so the
//     line above it stays a paragraph;
//   - a line starting with < is escaped (\<), so no HTML block (an
//     unclosed <!-- or <script>) runs on to the end of the file;
//   - a code fence left open is closed at the end;
//   - CRLF line ends become LF.
//
// Text inside a code fence is left as written.
func SafeText(t string) string {
	t = strings.ReplaceAll(strings.ReplaceAll(t, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(t, "\n")
	fence := "" // the open fence's marker ("```", "~~~~", ...)
	for i, l := range lines {
		tl := strings.TrimLeft(l, " ")
		indent := len(l) - len(tl)
		if indent > 3 {
			continue // indented code: no block starts here
		}
		if m := fenceMarker(tl); m != "" {
			switch {
			case fence == "":
				fence = m
			case m[0] == fence[0] && len(m) >= len(fence) && strings.TrimSpace(tl[len(m):]) == "":
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		switch {
		case strings.HasPrefix(tl, "#"):
			n := len(tl) - len(strings.TrimLeft(tl, "#"))
			if n >= 1 && n <= 3 && (len(tl) == n || tl[n] == ' ' || tl[n] == '\t') {
				lines[i] = "####" + tl[n:]
			}
		case setextUnderline(tl), strings.HasPrefix(tl, "<"):
			lines[i] = `\` + tl
		}
	}
	if fence != "" {
		lines = append(lines, fence)
	}
	return strings.Join(lines, "\n")
}

// fenceMarker returns the run of ` or ~ (3 or more) a line starts with, ""
// when it opens no code fence.
func fenceMarker(l string) string {
	if len(l) < 3 || (l[0] != '`' && l[0] != '~') {
		return ""
	}
	n := len(l) - len(strings.TrimLeft(l, l[:1]))
	if n < 3 || (l[0] == '`' && strings.Contains(l[n:], "`")) {
		return ""
	}
	return l[:n]
}

// setextUnderline reports whether a line (without its indent) is only =
// or only - characters, with trailing spaces.
func setextUnderline(l string) bool {
	l = strings.TrimRight(l, " \t")
	return l != "" && (strings.Trim(l, "=") == "" || strings.Trim(l, "-") == "")
}

// escapeIssueLines keeps free text (a reviewer's notes, a GitHub review
// body) from reading back as structured issues: a line that looks like one
// gets a backslash, which markdown does not show.
func escapeIssueLines(t string) string {
	if !strings.Contains(t, "**R") {
		return t
	}
	lines := strings.Split(t, "\n")
	for i, l := range lines {
		if issueRE().MatchString(strings.TrimRight(l, "\r")) {
			lines[i] = `\` + l
		}
	}
	return strings.Join(lines, "\n")
}

// RenderRound writes a whole round.
func RenderRound(r Round) string {
	var b strings.Builder
	switch {
	case r.Approval:
		fmt.Fprintf(&b, "## Review (round %d)\n\n", r.Number)
	case r.Landing:
		fmt.Fprintf(&b, "## Review Feedback (landing #%d)\n\n", r.Number)
	default:
		fmt.Fprintf(&b, "## Review Feedback (rejection #%d)\n\n", r.Number)
	}
	if r.Verdict != "" {
		b.WriteString("Verdict: " + r.Verdict + "\n\n")
	}
	for i, s := range r.Sources {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(RenderSource(s))
	}
	return b.String()
}

// AddRound inserts a new round at the top of the body, above older rounds,
// after the "# Title" line.
func (f *File) AddRound(r Round) (*File, error) {
	return f.AddSection(RenderRound(r))
}

// AddToNewestRound adds a source at the end of the newest review round
// (a lead's note on a round imported from GitHub): the round's number and
// everything already in it stay as they are.
func (f *File) AddToNewestRound(s Source) (*File, error) {
	rounds := f.FeedbackRounds()
	if len(rounds) == 0 || rounds[0].Approval {
		return nil, &EditError{Path: f.Path, Key: "body", Msg: "no review round to add to"}
	}
	return f.Insert(rounds[0].end, RenderSource(s))
}

// DescriptionHeading is added above text that stood directly under the
// title when a section is inserted at the top of the body, so that the task's
// description does not become part of the inserted section.
const DescriptionHeading = "## Description"

// AddSection inserts a level-2 section after the title (and after nothing
// else), for notes that the next reader must see first.
func (f *File) AddSection(markdown string) (*File, error) {
	at := f.AfterTitle()
	next := len(f.Src)
	for _, s := range f.Sections() {
		if s.Start >= at && s.Level <= 2 {
			next = s.Start
			break
		}
	}
	if strings.TrimSpace(string(f.Src[at:next])) != "" {
		markdown = strings.TrimRight(markdown, "\n") + "\n\n" + DescriptionHeading + "\n"
	}
	return f.Insert(at, markdown)
}

// SetIssueResponse adds a response under an issue, and returns the new file.
func (f *File) SetIssueResponse(issueID string, r Response) (*File, error) {
	for _, round := range f.FeedbackRounds() {
		for _, s := range round.Sources {
			for _, is := range s.Issues {
				if is.ID != issueID {
					continue
				}
				// Insert after the issue's last line (its last continuation
				// or response line).
				off := issueEnd(f.Src, is.Line)
				return f.Replace(off, off, []byte(RenderResponse(r)))
			}
		}
	}
	return nil, &EditError{Path: f.Path, Key: issueID, Msg: "no such review issue in the file"}
}

// SetIssuesResolved ticks the boxes of the given issues.
func (f *File) SetIssuesResolved(ids map[string]bool) (*File, error) {
	out := f
	for _, round := range f.FeedbackRounds() {
		for _, s := range round.Sources {
			for _, is := range s.Issues {
				if !ids[is.ID] || is.Resolved {
					continue
				}
				start := lineStart(out.Src, is.Line)
				i := strings.Index(string(out.Src[start:]), "- [ ]")
				if i != 0 {
					continue
				}
				var err error
				out, err = out.Replace(start+2, start+5, []byte("[x]"))
				if err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

func lineStart(src []byte, line int) int {
	n := 1
	for i, c := range src {
		if n == line {
			return i
		}
		if c == '\n' {
			n++
		}
	}
	return len(src)
}

// issueEnd is the offset after an issue's last line: its continuation and
// response lines, and the whole of its patch block (blank lines included).
func issueEnd(src []byte, line int) int {
	pos := lineStart(src, line)
	// skip the item line
	for pos < len(src) && src[pos] != '\n' {
		pos++
	}
	if pos < len(src) {
		pos++
	}
	fence, label := "", false
	for pos < len(src) {
		end := pos
		for end < len(src) && src[end] != '\n' {
			end++
		}
		l := strings.TrimRight(string(src[pos:end]), "\r")
		blank := strings.TrimSpace(l) == ""
		switch {
		case fence != "":
			if !indentedLine(l) && !blank {
				return pos // the item ended with the fence left open
			}
			if closesFence(l, fence) {
				fence = ""
			}
		case !indentedLine(l) || blank:
			return pos
		case label:
			fence = fenceMarker(strings.TrimLeft(l, " \t"))
		}
		label = fence == "" && strings.TrimSpace(l) == patchLabel
		pos = end
		if pos < len(src) {
			pos++
		}
	}
	return pos
}

// AllIssues returns every structured issue of every round, newest round
// first.
func (f *File) AllIssues() []Issue {
	var out []Issue
	for _, r := range f.FeedbackRounds() {
		for _, s := range r.Sources {
			out = append(out, s.Issues...)
		}
	}
	return out
}

// SortIssues puts blocking issues before suggestions, keeping file order
// otherwise (prompts show what must be fixed first).
func SortIssues(is []Issue) []Issue {
	out := append([]Issue(nil), is...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Blocking && !out[j].Blocking })
	return out
}
