// Package text holds the ways orch shortens and cleans text for a message,
// a note, a commit subject or a label: every layer uses these, so that a
// cut never falls inside a character and no control sequence an agent
// printed reaches a terminal or a prompt.
package text

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// OneLine folds every run of white space, line breaks included, into one
// space, and trims the ends.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Clip cuts s to its first n characters (runes, never bytes), followed by
// "..." when it was longer.
func Clip(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + "..."
		}
		count++
	}
	return s
}

// Visible makes every control character of s visible, so that text that
// came from an agent (its output, a note, a review) cannot drive the
// terminal it is shown on (OSC 52 writes the clipboard, OSC 0 the title)
// or hide text from the person or agent reading it: ESC becomes \x1b, NUL
// \x00, a bare carriage return \r, a C1 control \u009b. Line
// breaks and tabs stay (a CR before a line break is dropped: Windows line
// ends), and so do printable characters; an invalid UTF-8 byte becomes
// \xNN. Text with nothing to change is returned as it is.
func Visible(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			// CRLF: the line break stays, the CR goes.
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0, r == 0x2028, r == 0x2029, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			// C1 controls (0x9b is a one-byte CSI on some terminals), and
			// the line separators and bidirectional overrides that make
			// text read otherwise than it is.
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Lines cuts text into at most max lines (the last ones), each made
// Visible and clipped to width characters: what a note keeps of an agent's
// output, whatever it printed.
func Lines(s string, max, width int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > max {
		lines = lines[len(lines)-max:]
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, Clip(Visible(strings.TrimRight(l, "\r")), width))
	}
	return out
}
