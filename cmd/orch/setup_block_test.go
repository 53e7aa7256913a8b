package main

import (
	"strings"
	"testing"
)

// TestFindBlock: only marker lines outside fenced code blocks (CommonMark's
// rules for opening and closing a fence) are orch's block.
func TestFindBlock(t *testing.T) {
	const b, e = "<!-- BEGIN ORCH -->\n", orchEnd + "\n"
	for _, c := range []struct {
		name, text string
		live       bool   // a block is found
		at         string // the text before it
		errLine    int    // refused, naming this line
	}{
		{"no markers", "# T\n", false, "", 0},
		{"live", "# T\n" + b + "x\n" + e + "after\n", true, "# T\n", 0},
		{"CRLF, blanks after END", "# T\r\n<!-- BEGIN ORCH -->\r\nx\r\n" + orchEnd + " \r\nafter\r\n", true, "# T\r\n", 0},
		{"in backticks", "```md\n" + b + e + "```\n", false, "", 0},
		{"in tildes", "~~~\n" + b + e + "~~~\n", false, "", 0},
		{"a shorter fence does not close", "````\n```\n" + b + e + "````\n", false, "", 0},
		{"the other character does not close", "```\n~~~\n" + b + e + "```\n", false, "", 0},
		{"a closing line with text does not close", "```\n``` x\n" + b + e + "```\n", false, "", 0},
		{"indented 3 is a fence", "   ```\n" + b + e + "   ```\n", false, "", 0},
		{"indented 4 is not a fence", "    ```\n" + b + e, true, "    ```\n", 0},
		{"backticks in a backtick info string: not a fence", "``` a`b\n" + b + e, true, "``` a`b\n", 0},
		{"backticks in a tilde info string: a fence", "~~~ a`b\n" + b + e + "~~~\n", false, "", 0},
		{"live after a fenced example", "```\n" + b + e + "```\n" + b + "x\n" + e, true, "```\n" + b + e + "```\n", 0},
		{"END only in a fence", b + "```\n" + e + "```\n", false, "", 1},
		{"a fence never closed", "# T\n\n```sh\n" + b, false, "", 3},
		{"a fence never closed after the block", b + e + "```\n", true, "", 0},
		{"a marker inside a line", "see `<!-- BEGIN ORCH -->` and `" + orchEnd + "`\n", false, "", 0},
	} {
		got, err := findBlock(c.text)
		switch {
		case c.errLine > 0:
			if err == nil || err.line != c.errLine {
				t.Errorf("%s: got %+v, %+v; want refused at line %d", c.name, got, err, c.errLine)
			}
		case err != nil:
			t.Errorf("%s: %+v", c.name, err)
		case got.ok != c.live || (c.live && (c.text[:got.start] != c.at || !strings.HasSuffix(strings.TrimRight(c.text[got.start:got.end], " \r\n"), orchEnd) || c.text[got.end-1] != '\n')):
			t.Errorf("%s: got %+v", c.name, got)
		}
	}
}
