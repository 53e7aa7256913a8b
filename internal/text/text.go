// Package text holds the two ways orch shortens text for a message, a
// commit subject or a label: every layer uses these, so that a cut never
// falls inside a character.
package text

import "strings"

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
