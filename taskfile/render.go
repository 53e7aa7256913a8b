package taskfile

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/internal/text"
)

// Render writes a new task file: the frontmatter in KeyOrder (then any extra
// keys in the order given), a "# Title" heading and the body.
func Render(path string, fields []Edit, body string) (*File, error) {
	var b strings.Builder
	b.WriteString("---\n")
	ordered := make([]Edit, 0, len(fields))
	for _, k := range KeyOrder {
		for _, e := range fields {
			if e.Key == k && !e.Delete {
				ordered = append(ordered, e)
			}
		}
	}
	for _, e := range fields {
		if indexOf(KeyOrder, e.Key) < 0 && !e.Delete {
			ordered = append(ordered, e)
		}
	}
	title := ""
	for _, e := range ordered {
		if !validKey(e.Key) {
			return nil, &EditError{Path: path, Key: e.Key, Msg: "not a valid key"}
		}
		fmt.Fprintf(&b, "%s: %s\n", e.Key, renderFlow(e.Value))
		if e.Key == KeyTitle {
			title = e.Value.s
		}
	}
	b.WriteString("---\n")
	if title != "" {
		b.WriteString("# " + text.OneLine(title) + "\n")
	}
	if body = strings.Trim(body, "\n"); body != "" {
		if title != "" {
			b.WriteString("\n")
		}
		b.WriteString(body + "\n")
	}
	return Parse(path, []byte(b.String()))
}

var keyRE = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

func validKey(k string) bool { return keyRE().MatchString(k) }

// Slug turns a title into the lowercase, dash-separated part of a file name.
func Slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			if b.Len() >= 40 {
				break
			}
		} else {
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "task"
	}
	return s
}
