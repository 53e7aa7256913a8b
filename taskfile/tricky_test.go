package taskfile

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// trickyFiles are task files that use YAML and markdown features people
// write by hand and that a careless editor would break. They seed the fuzz
// corpora (see TestWriteFuzzCorpus) and every one of them goes through every
// edit in TestEditContract.
var trickyFiles = map[string]string{
	"design":         designExample,
	"minimal":        "---\nid: T-abcd12\ntitle: Small\nqueue: incoming\n---\n",
	"no-frontmatter": "# Just a heading\n\nSome text.\n",
	"empty-fm":       "---\n---\n# Title\n",
	"comment-only":   "---\n# nothing yet\n---\nbody\n",
	"anchors": lines("---",
		"id: &id T-abcd12",
		"branch: *id",
		"labels: &l [a, b]",
		"locked_out: *l",
		"title: x",
		"---", "body"),
	"merge-key": lines("---",
		"defaults: &d {queue: incoming, priority: P2}",
		"<<: *d",
		"id: T-abcd12",
		"---", "body"),
	"flow-mapping": lines("---",
		"id: T-abcd12",
		"custom: {a: 1, b: [x, y], c: {d: e}}",
		"matrix: [a, {k: v}]",
		"queue: incoming",
		"---"),
	"multiline-plain": lines("---",
		"id: T-abcd12",
		"title: this title",
		"  goes on over",
		"",
		"  several lines",
		"queue: incoming",
		"custom: also",
		"   continued # comment",
		"---", "# Body"),
	"block-scalars": lines("---",
		"id: T-abcd12",
		"notes: |",
		"  line one",
		"  # not a comment",
		"",
		"  line three",
		"folded: >-",
		"  folded",
		"  text",
		"keep: |+",
		"  kept",
		"",
		"title: after blocks",
		"---", "body"),
	"tabs":               "---\nid:\tT-abcd12\ntitle:\tTabbed\t# comment\nlabels: [a,\tb]\nqueue: incoming\t\n---\n\tindented body\n",
	"crlf":               "---\r\nid: T-abcd12\r\ntitle: Windows\r\nlabels:\r\n  - a\r\n  - b\r\nqueue: incoming # c\r\n---\r\n# Windows\r\n\r\nbody\r\n",
	"unicode-separators": "---\nid: T-abcd12\ntitle: 'a\u2028b'\nqueue: incoming\ncustom: 'x\u0085y'\nother: \"p\u2029q\"\nlast: z\n---\nbody\u2028more\n",
	"quoted": lines("---",
		`"id": "T-abcd12"`,
		`'title': 'it''s quoted'`,
		`branch: "task/a\"b"`,
		`role: 'implementer'`,
		`custom: "multi`,
		`  line"`,
		"---"),
	"text-before-delimiter": lines("# A heading first: no frontmatter", "---", "id: T-abcd12", "---", "body"),
	"comments": lines("---",
		"# header comment",
		"id: T-abcd12 # the id",
		"",
		"# between keys",
		"title: Commented   # title comment",
		"labels: # list below",
		"  - a # first",
		"  # inside",
		"  - b",
		"# trailing comment",
		"---", "body"),
	"empty-values": lines("---",
		"id: T-abcd12",
		"labels:",
		"queue:",
		"pr_number:",
		"claimed_by: ~",
		"title: null",
		"created: ''",
		"---", "# From the body"),
	"indented": lines("---",
		"  id: T-abcd12",
		"  title: indented",
		"  labels:",
		"  - a",
		"---"),
	"explicit-key": lines("---",
		"? id",
		": T-abcd12",
		"title: x",
		"---"),
	"tags": lines("---",
		"id: T-abcd12",
		"title: !!str 123",
		"pr_number: !!int 5",
		"custom: !mine value",
		"---"),
	"doc-end": lines("---",
		"id: T-abcd12",
		"title: y",
		"---", "..."),
	"bom":            "\ufeff---\nid: T-abcd12\ntitle: bom\n---\nbody\n",
	"no-final-nl":    "---\nid: T-abcd12\ntitle: x\n---",
	"no-final-nl-fm": "---\nid: T-abcd12\ntitle: x\n---\n# T",
	"leading-blank":  "\n\n---\nid: T-abcd12\n---\nbody\n",
	"delim-spaces":   "---  \nid: T-abcd12\ntitle: x\n---   \nbody\n",
	"cr-only":        "---\rid: T-abcd12\r---\rbody\r",
	"block-list-flush": lines("---",
		"id: T-abcd12",
		"labels:",
		"- a",
		"- b",
		"queue: incoming",
		"---"),
	"nested-lists": lines("---",
		"id: T-abcd12",
		"matrix:",
		"  - [a, b]",
		"  - - c",
		"    - d",
		"depends_on:",
		"  - T-aaaa11",
		"  -   T-bbbb22   # spaced",
		"---"),
	"value-next-line": lines("---",
		"id: T-abcd12",
		"title:",
		"  on the next line",
		"queue:",
		"  incoming",
		"---"),
	"hash-values": lines("---",
		"id: T-abcd12",
		"title: a#b # real comment",
		"branch: fix#1",
		"---"),
	"whitespace-lines": "---\nid: T-abcd12\n   \ntitle: x\n  \t\n---\n",
	"body-tricks": lines("---",
		"id: T-abcd12",
		"title: Body tricks",
		"---",
		"Setext title",
		"============",
		"",
		"```",
		"# not a heading",
		"---",
		"```",
		"",
		"Sub",
		"---",
		"",
		"    # indented code",
		"> # quoted",
		"- # in a list",
		"## Real"),
	"long-line": "---\nid: T-abcd12\ntitle: " + string(make([]byte, 0)) + "a very long title that goes on and on and on and on and on and on and on and on and on and on and on\n---\n",
	"numbers": lines("---",
		"id: 123",
		"title: 1.5",
		"pr_number: 31",
		"hex: 0x1F",
		"rejection_count: 007",
		"custom: .nan",
		"other: 1e3",
		"---"),
	"yaml11-bools": lines("---",
		"id: T-abcd12",
		"title: yes",
		"role: on",
		"custom: no",
		"---"),
	"dash-values": lines("---",
		"id: T-abcd12",
		"title: -leading dash",
		"branch: -x",
		"---"),
	"times": lines("---",
		"id: T-abcd12",
		"created: 2026-02-06",
		"claimed_at: 2026-02-06 10:00:00",
		"submitted_at: \"2026-02-06T10:00:00+02:00\"",
		"---"),
	"colon-in-key": lines("---",
		"id: T-abcd12",
		"\"a: b\": value",
		"'x y': z",
		"url:http: no space",
		"---"),
	"mixed-line-endings": "---\nid: T-abcd12\r\ntitle: mixed\nlabels:\r\n  - a\n---\r\nbody\n",
	"empty-key":          "---\nid: T-abcd12\n\"\": empty key\n---\n",
	"keys-only":          "---\nid:\ntitle:\nqueue:\n---\n",
	"multiline-flow": lines("---",
		"id: T-abcd12",
		"labels: [a,",
		"  b,   # comment inside",
		"  c]",
		"queue: incoming",
		"---"),
	"multiline-quoted": lines("---",
		"id: T-abcd12",
		"title: \"first",
		"  second\"",
		"role: 'one",
		"",
		"  two'",
		"---"),
	"multi-document": "---\nid: T-abcd12\n...\n---\nz: 1\n---\n",
	"deep-nesting":   "---\nid: T-abcd12\nx: " + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "\n---\n",
	"trailing-comment-block": lines("---",
		"id: T-abcd12",
		"labels:",
		"  - a",
		"# about queue",
		"queue: incoming",
		"---"),
}

// The values every key is set to in TestEditContract.
var (
	contractStrings = []string{"", "plain", "T-zzzz99", "P1", "done", "yes", "No", "null", "~", "123", "-1", "1.5", "0x10",
		"a: b", "a #b", "a#b", "-x", "- x", "? x", ": x", "x:", "line\nbreak", "trailing\n", "it's", `say "hi"`,
		" lead", "trail ", "#c", "[x]", "{x}", "*a", "&a", "!t", "%p", "@a", "`b", "|", ">", "2026-01-01",
		"2026-02-06T10:00:00Z", "a\u2028b", "tab\there", "ü ñ 日本", "---", "...", "a, b", "\\back", "\x7f"}
	contractInts  = []int{0, 7, -3, 1 << 40}
	contractLists = [][]string{nil, {"a"}, {"a", "b"}, {"a, b", "c"}, {""}, {"yes", "123"}, {"x: y", "#z"}, {"[q]"}, {"line\nbreak"}}
	contractTimes = []time.Time{time.Date(2026, 2, 7, 9, 30, 0, 0, time.UTC), time.Date(2026, 2, 6, 10, 0, 0, 0, time.UTC)}
)

// TestEditContract applies every edit in the tables above to every tricky
// file and checks the surgical-edit contract (see checkEdit).
func TestEditContract(t *testing.T) {
	for name, src := range trickyFiles {
		file, err := Parse(name+".md", []byte(src))
		if err != nil {
			t.Errorf("%s does not parse, so no edit of it is checked: %v", name, err)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Every key the file has, and some it lacks.
			keys := append(file.Keys(), KeyID, KeyTitle, KeyQueue, KeyPriority, KeyPRNumber, KeyClaimedBy,
				KeyLockedOut, KeyLabels, KeyCreated, KeyRejectedAt, "custom_field", "x", "<<", "a b")
			if testing.Short() {
				keys = append(file.Keys(), KeyQueue, "custom_field")
			}
			for _, key := range keys {
				for _, s := range contractStrings {
					checkEdit(t, file, Set(key, String(s)), s)
				}
				for _, n := range contractInts {
					checkEdit(t, file, Set(key, Int(n)), n)
				}
				for _, l := range contractLists {
					want := make([]any, len(l))
					for i := range l {
						want[i] = l[i]
					}
					checkEdit(t, file, Set(key, List(l...)), want)
				}
				for _, tm := range contractTimes {
					checkEdit(t, file, Set(key, Time(tm)), tm)
				}
				checkEdit(t, file, Unset(key), nil)
			}
		})
	}
}

// TestTrickyFilesParse: every tricky file is a task file orch can read, and
// every broken one gives a *ParseError with a line inside the file.
func TestTrickyFilesParse(t *testing.T) {
	for name, src := range trickyFiles {
		if _, err := Parse(name+".md", []byte(src)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, src := range brokenFiles {
		_, err := Parse(name+".md", []byte(src))
		pe, ok := err.(*ParseError)
		if !ok {
			t.Errorf("%s: err = %v, want a *ParseError", name, err)
			continue
		}
		if n := strings.Count(src, "\n") + 1; pe.Line < 1 || pe.Line > n {
			t.Errorf("%s: line %d outside the file (%d lines): %v", name, pe.Line, n, pe)
		}
	}
}

// aliasBomb is a short file whose last key stands for a list of 2^levels
// items through nested aliases.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("---\nid: T-abcd12\nl0: &l0 [x, x]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d]\n", i, i, i-1, i-1)
	}
	b.WriteString("queue: incoming\n---\n# Bomb\n")
	return b.String()
}

// TestAliasBomb: a few lines of nested aliases must not make an edit or a
// merge take exponential time; the edit may fail instead.
func TestAliasBomb(t *testing.T) {
	f := mustParse(t, aliasBomb(60))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, e := range []Edit{Set(KeyQueue, String("done")), Set(KeyTitle, String("x")), Unset(KeyID), Set("l59", String("x"))} {
			if _, err := f.Apply(e); err != nil {
				if _, ok := err.(*EditError); !ok {
					t.Errorf("%s: %v", describeEdit(e), err)
				}
			}
		}
		if _, _, err := Merge3(f, f, f); err != nil {
			t.Errorf("Merge3: %v", err)
		}
		_ = nodeEqual(f.Node("l59"), f.Node("l59"), 0)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("edits of a file with nested aliases did not finish")
	}
}
