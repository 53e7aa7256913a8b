// Package termboard draws orch board on a terminal: one column per queue,
// in board order, each task a card (ID, priority, rejections, title, who
// holds it), the columns wrapped into bands when they do not fit, with
// ANSI colour when asked. cmd/orch/board.go parses the flags, finds the
// terminal's width, watches the state branch and writes the JSON board.
package termboard

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// Layout: one column per queue, in board order. Columns never get
// narrower than boardMinCol; when they would, the queues wrap into bands
// (rows of columns), and the bands share one column width so that they line
// up.
const (
	boardGap    = 2  // spaces between columns
	boardMinCol = 18 // narrowest column before wrapping into bands
	boardMaxCol = 48 // wider columns only add blank space
	boardTiny   = 12 // the width used when the terminal is narrower still
)

// Column is one queue and its tasks, in claim order.
type Column struct {
	Queue taskfile.Queue
	Tasks []*gitstore.Summary
}

// Group puts tasks (already filtered and sorted by orch list's rules)
// into one column per queue of queues, keeping empty queues.
func Group(queues []taskfile.Queue, tasks []*gitstore.Summary) []Column {
	cols := make([]Column, len(queues))
	at := map[taskfile.Queue]int{}
	for i, q := range queues {
		cols[i].Queue = q
		at[q] = i
	}
	for _, s := range tasks {
		if i, ok := at[s.Task.Queue]; ok {
			cols[i].Tasks = append(cols[i].Tasks, s)
		}
	}
	return cols
}

// layout decides how many columns go in a band and how wide they are
// for n columns in width characters.
func layout(n, width int) (perBand, colW int) {
	if n <= 0 {
		return 0, 0
	}
	fit := func(k int) int { return (width - boardGap*(k-1)) / k }
	perBand = n
	for perBand > 1 && fit(perBand) < boardMinCol {
		perBand--
	}
	// Balance the bands: 7 queues in bands of 5 and 2 read worse than 4
	// and 3, which also leaves wider columns.
	bands := (n + perBand - 1) / perBand
	perBand = (n + bands - 1) / bands
	colW = min(fit(perBand), boardMaxCol)
	if colW < boardTiny {
		colW = boardTiny
	}
	return perBand, colW
}

// ANSI styles (used only when colour is on).
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[1;31m"
	ansiYellow = "\x1b[33m"
)

// ClearScreen moves the cursor home and clears the screen (before each
// board of orch board --watch on a terminal).
const ClearScreen = "\x1b[H\x1b[2J"

// Status is a line of text above the board: clipped to width, and dimmed
// with color.
func Status(text string, width int, color bool) string {
	s := Clip(text, width)
	if color {
		s = ansiDim + s + ansiReset
	}
	return s
}

// seg is a run of text in one style.
type seg struct {
	text  string
	style string
}

// cellLine is one line of a column: segments written left to right and
// clipped to the column width.
type cellLine []seg

// Render lays the columns out in width characters; with color, it
// styles them with ANSI escapes (escalated tasks in bold red). Escalated
// tasks are also marked with "!" before their ID, so plain output shows
// them too.
func Render(cols []Column, width int, color bool) string {
	perBand, colW := layout(len(cols), width)
	var b strings.Builder
	for start := 0; start < len(cols); start += perBand {
		if start > 0 {
			b.WriteByte('\n')
		}
		band := cols[start:min(start+perBand, len(cols))]
		cells := make([][]cellLine, len(band))
		rows := 0
		for i, c := range band {
			cells[i] = columnLines(c, colW, color)
			rows = max(rows, len(cells[i]))
		}
		for r := 0; r < rows; r++ {
			var line strings.Builder
			pad := 0 // spaces owed before the next text
			for i := range cells {
				if i > 0 {
					pad += boardGap
				}
				if r >= len(cells[i]) {
					pad += colW
					continue
				}
				used := writeCell(&line, cells[i][r], colW, color, pad)
				if used > 0 {
					pad = colW - used
				} else {
					pad += colW
				}
			}
			b.WriteString(line.String())
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// writeCell writes the line's segments, after pad spaces, clipped to w
// columns, and returns how many columns of text it wrote (the caller owes
// the rest as padding, so lines carry no trailing spaces).
func writeCell(b *strings.Builder, l cellLine, w int, color bool, pad int) int {
	used := 0
	for _, s := range l {
		if used >= w {
			break
		}
		text := Clip(s.text, w-used)
		if text == "" {
			continue
		}
		if used == 0 && pad > 0 {
			b.WriteString(strings.Repeat(" ", pad))
		}
		if color && s.style != "" && strings.TrimSpace(text) != "" {
			// Leading spaces stay outside the style (an underline or a
			// background would otherwise show).
			trimmed := strings.TrimLeft(text, " ")
			b.WriteString(text[:len(text)-len(trimmed)])
			b.WriteString(s.style)
			b.WriteString(trimmed)
			b.WriteString(ansiReset)
		} else {
			b.WriteString(text)
		}
		used += displayWidth(text)
	}
	return used
}

// columnLines are a column's header and its task cards.
func columnLines(c Column, w int, color bool) []cellLine {
	headStyle := ansiBold
	if c.Queue == taskfile.Escalated && len(c.Tasks) > 0 {
		headStyle = ansiRed
	}
	count := " (" + strconv.Itoa(len(c.Tasks)) + ")"
	name := string(c.Queue)
	if displayWidth(name)+len(count) > w {
		name = Clip(name, max(w-len(count), 1))
	}
	rule := "-"
	if color {
		rule = "─"
	}
	lines := []cellLine{
		{{name + count, headStyle}},
		{{strings.Repeat(rule, w), ansiDim}},
	}
	if len(c.Tasks) == 0 {
		return append(lines, cellLine{{"(none)", ansiDim}})
	}
	for _, s := range c.Tasks {
		lines = append(lines, taskCard(s, w)...)
	}
	return lines
}

// taskCard is one task in a column w wide: "ID PRI rej N" (a "!" before an
// escalated task's ID), then, indented, the title (on up to two lines) and
// who holds it.
func taskCard(s *gitstore.Summary, w int) []cellLine {
	t := s.Task
	escalated := t.Queue == taskfile.Escalated
	id := t.ID
	if id == "" {
		id = "?"
	}
	idStyle := ansiBold
	if escalated {
		id = "!" + id
		idStyle = ansiRed
	}
	head := cellLine{{id, idStyle}}
	if t.Priority != "" {
		head = append(head, seg{" " + t.Priority, ""})
	}
	if t.RejectionCount > 0 {
		head = append(head, seg{" rej " + strconv.Itoa(t.RejectionCount), ansiYellow})
	}
	titleStyle := ""
	if escalated {
		titleStyle = ansiRed
	}
	title := t.Title
	if title == "" {
		title = "(untitled)"
	}
	lines := []cellLine{head}
	for _, l := range wrapText(title, w-2, 2) {
		lines = append(lines, cellLine{{"  " + l, titleStyle}})
	}
	// Who holds it: the claimer, or the submitter while it awaits review;
	// else whom it is kept for.
	switch {
	case t.ClaimedBy != "":
		lines = append(lines, cellLine{{"  @" + t.ClaimedBy, ansiDim}})
	case t.Queue == taskfile.Provisional && t.SubmittedBy != "":
		lines = append(lines, cellLine{{"  @" + t.SubmittedBy, ansiDim}})
	case t.AssignedTo != "":
		lines = append(lines, cellLine{{"  for " + t.AssignedTo, ansiDim}})
	}
	if s.Problem != "" {
		lines = append(lines, cellLine{{"  invalid: " + s.Problem, ansiYellow}})
	}
	return lines
}

// wrapText breaks s at spaces into at most n lines of w columns; a word
// longer than a line is cut, and the last line ends with "…" when text is
// left over.
func wrapText(s string, w, n int) []string {
	s = Clip(s, displayWidth(s)+1) // only make it safe
	words := strings.Fields(s)
	if w < 1 {
		w = 1
	}
	var lines []string
	for len(words) > 0 && len(lines) < n-1 {
		line := ""
		for len(words) > 0 {
			next := words[0]
			if line != "" {
				next = line + " " + next
			}
			if displayWidth(next) > w {
				break
			}
			line, words = next, words[1:]
		}
		if line == "" { // one word wider than the line: cut it
			used := 0
			for i, c := range words[0] {
				if used+runeWidth(c) > w && i > 0 {
					line, words[0] = words[0][:i], words[0][i:]
					break
				}
				used += runeWidth(c)
			}
			if line == "" { // a single character wider than the line
				line, words = words[0], words[1:]
			}
		}
		lines = append(lines, line)
	}
	if len(words) > 0 {
		lines = append(lines, Clip(strings.Join(words, " "), w))
	}
	return lines
}

// Clip makes s safe for a terminal (control characters become "?")
// and cuts it to w display columns, ending with "…" when cut.
func Clip(s string, w int) string {
	if w <= 0 {
		return ""
	}
	clean := true
	for _, c := range s {
		if isControl(c) || c == utf8.RuneError {
			clean = false
			break
		}
	}
	if !clean {
		r := []rune(s)
		for i, c := range r {
			if isControl(c) || c == utf8.RuneError {
				r[i] = '?'
			}
		}
		s = string(r)
	}
	if displayWidth(s) <= w {
		return s
	}
	var b strings.Builder
	used := 0
	for _, c := range s {
		cw := runeWidth(c)
		if used+cw > w-1 {
			break
		}
		b.WriteRune(c)
		used += cw
	}
	b.WriteString("…")
	return b.String()
}

func isControl(c rune) bool {
	return c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)
}

// displayWidth is the number of terminal columns s takes.
func displayWidth(s string) int {
	n := 0
	for _, c := range s {
		n += runeWidth(c)
	}
	return n
}

// runeWidth: combining marks take no column, East Asian wide and fullwidth
// characters (and most emoji) take two, the rest one.
func runeWidth(c rune) int {
	switch {
	case c == 0x200b || unicode.Is(unicode.Mn, c) || unicode.Is(unicode.Me, c):
		return 0
	case c >= 0x1100 && c <= 0x115f, // Hangul Jamo
		c >= 0x2e80 && c <= 0x303e, // CJK radicals, punctuation
		c >= 0x3041 && c <= 0x33ff, // kana, CJK symbols
		c >= 0x3400 && c <= 0x4dbf, // CJK extension A
		c >= 0x4e00 && c <= 0x9fff, // CJK unified
		c >= 0xa000 && c <= 0xa4cf, // Yi
		c >= 0xac00 && c <= 0xd7a3, // Hangul syllables
		c >= 0xf900 && c <= 0xfaff, // CJK compatibility
		c >= 0xfe30 && c <= 0xfe4f, // CJK compatibility forms
		c >= 0xff00 && c <= 0xff60, // fullwidth forms
		c >= 0xffe0 && c <= 0xffe6,
		c >= 0x1f300 && c <= 0x1f64f, // emoji
		c >= 0x1f900 && c <= 0x1f9ff,
		c >= 0x20000 && c <= 0x3fffd: // CJK extensions B and later
		return 2
	}
	return 1
}
