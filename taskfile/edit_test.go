package taskfile

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// replaceLine returns src with the one line old replaced by new, failing
// the test unless old occurs exactly once.
func replaceLine(t *testing.T, src, old, new string) string {
	t.Helper()
	if n := strings.Count(src, "\n"+old+"\n"); n != 1 {
		t.Fatalf("line %q occurs %d times", old, n)
	}
	return strings.Replace(src, "\n"+old+"\n", "\n"+new+"\n", 1)
}

// applyOK applies edits and fails the test on an error.
func applyOK(t *testing.T, f *File, edits ...Edit) *File {
	t.Helper()
	out, err := f.Apply(edits...)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return out
}

// diffLines returns the lines that differ between two texts of the same
// number of lines, or nil when the counts differ.
func diffLines(a, b string) []string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(la) != len(lb) {
		return nil
	}
	var out []string
	for i := range la {
		if la[i] != lb[i] {
			out = append(out, la[i]+" -> "+lb[i])
		}
	}
	return out
}

// TestEditDesignExample: changing one field of the docs/design.md §3 example
// changes exactly that field's line.
func TestEditDesignExample(t *testing.T) {
	f := mustParse(t, designExample)
	for _, c := range []struct {
		edit     Edit
		old, new string
	}{
		{Set(KeyQueue, String("provisional")), "queue: rejected", "queue: provisional"},
		{Set(KeyTitle, String("Snap fork start: like the others")), "title: Snap fork start like the other shapes", `title: "Snap fork start: like the others"`},
		{Set(KeyPriority, String("P0")), "priority: P1", "priority: P0"},
		{Set(KeyPRNumber, Int(49)), "pr_number: 48", "pr_number: 49"},
		{Set(KeyRejectionCount, Int(2)), "rejection_count: 1", "rejection_count: 2"},
		{Set(KeyClaimedBy, String("agent-c")), "claimed_by: agent-b", "claimed_by: agent-c"},
		{Set(KeyClaimedBy, String("")), "claimed_by: agent-b", `claimed_by: ""`},
		{Set(KeyLockedOut, List("agent-a", "agent-b")), "locked_out: [agent-a]", "locked_out: [agent-a, agent-b]"},
		{Set(KeyLockedOut, List()), "locked_out: [agent-a]", "locked_out: []"},
		{Set(KeyLabels, List("sketch", "needs: review")), "labels: [sketch]", `labels: [sketch, "needs: review"]`},
		{Set(KeyCreated, Time(time.Date(2026, 2, 7, 9, 30, 0, 0, time.UTC))), "created: 2026-02-06T10:00:00Z", "created: 2026-02-07T09:30:00Z"},
		{Set(KeyBranch, String("task/T-4k9x2m-v2")), "branch: task/T-4k9x2m-snap-fork-start", "branch: task/T-4k9x2m-v2"},
		{Set("custom_field", String("changed")),
			"custom_field: kept exactly as written   # unknown keys and comments survive every edit",
			"custom_field: changed   # unknown keys and comments survive every edit"},
		{Set("custom_field", Int(7)),
			"custom_field: kept exactly as written   # unknown keys and comments survive every edit",
			"custom_field: 7   # unknown keys and comments survive every edit"},
	} {
		out, err := f.Apply(c.edit)
		if err != nil {
			t.Errorf("%s: %v", describeEdit(c.edit), err)
			continue
		}
		want := replaceLine(t, designExample, c.old, c.new)
		if string(out.Src) != want {
			t.Errorf("%s: changed more than one line: %q", describeEdit(c.edit), diffLines(designExample, string(out.Src)))
		}
		if d := diffLines(designExample, string(out.Src)); len(d) != 1 {
			t.Errorf("%s: diff is %q, want one line", describeEdit(c.edit), d)
		}
	}
}

// TestEditDesignExampleFull spells out the whole expected file once.
func TestEditDesignExampleFull(t *testing.T) {
	f := mustParse(t, designExample)
	out := applyOK(t, f, Set(KeyQueue, String(string(Claimed))), Set(KeyClaimedBy, String("agent-c")))
	want := `---
id: T-4k9x2m
title: Snap fork start like the other shapes
queue: claimed
priority: P1
role: implementer
branch: task/T-4k9x2m-snap-fork-start
pr_number: 48
rejection_count: 1
claimed_by: agent-c
locked_out: [agent-a]
depends_on: [T-2bq7za]
labels: [sketch]
created: 2026-02-06T10:00:00Z
custom_field: kept exactly as written   # unknown keys and comments survive every edit
---
`
	if got := string(out.Src[:out.BodyOffset()]); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if string(out.Body()) != string(f.Body()) {
		t.Error("body changed")
	}
	if out.Task.Queue != Claimed || out.Task.ClaimedBy != "agent-c" || out.Task.PRNumber != 48 {
		t.Errorf("Task = %+v", out.Task)
	}
	if string(f.Src) != designExample {
		t.Error("Apply modified the original file")
	}
}

// handWritten is a task file as a person writes it: comments, odd spacing,
// quotes, blank lines, unknown keys and nested values.
const handWritten = `---
# Task written by hand.
id:   T-abcd12
title: 'Fix the "login" redirect'   # keep quotes
queue:    incoming
priority: "high"

role: implementer
labels:
  - auth   # first
  - web
empty:
spaced_empty:     # nothing yet
custom_field: kept exactly as written   # comment
nested:
  a: 1
  b: [x, y]
---
# Fix the login redirect
`

func TestEditHandWritten(t *testing.T) {
	f := mustParse(t, handWritten)
	for _, c := range []struct {
		name string
		edit Edit
		old  string // lines of handWritten replaced by new ("" for an insertion after after)
		new  string
	}{
		{"odd spacing kept", Set(KeyQueue, String("claimed")), "queue:    incoming\n", "queue:    claimed\n"},
		{"extra spaces after the colon kept", Set(KeyID, String("T-new123")), "id:   T-abcd12\n", "id:   T-new123\n"},
		{"single quotes kept", Set(KeyTitle, String("It's new")), "title: 'Fix the \"login\" redirect'   # keep quotes\n", "title: 'It''s new'   # keep quotes\n"},
		{"single quotes cannot hold a newline", Set(KeyTitle, String("line\nbreak")), "title: 'Fix the \"login\" redirect'   # keep quotes\n", "title: \"line\\nbreak\"   # keep quotes\n"},
		{"double quotes kept", Set(KeyPriority, String("P0")), "priority: \"high\"\n", "priority: \"P0\"\n"},
		{"block list stays a block list", Set(KeyLabels, List("x", "y: z", "w")), "labels:\n  - auth   # first\n  - web\n", "labels:\n  - x\n  - \"y: z\"\n  - w\n"},
		{"empty block list", Set(KeyLabels, List()), "labels:\n  - auth   # first\n  - web\n", "labels: []\n"},
		{"block list to a value", Set(KeyLabels, String("single")), "labels:\n  - auth   # first\n  - web\n", "labels: single\n"},
		{"block mapping to a value", Set("nested", String("flat")), "nested:\n  a: 1\n  b: [x, y]\n", "nested: flat\n"},
		{"block mapping to a list", Set("nested", List("a", "b")), "nested:\n  a: 1\n  b: [x, y]\n", "nested: [a, b]\n"},
		{"empty value", Set("empty", String("now")), "empty:\n", "empty: now\n"},
		{"empty value with a comment", Set("spaced_empty", List("a")), "spaced_empty:     # nothing yet\n", "spaced_empty: [a]     # nothing yet\n"},
		{"value to a list", Set("custom_field", List("a", "b")), "custom_field: kept exactly as written   # comment\n", "custom_field: [a, b]   # comment\n"},
		{"unknown key with comment", Set("custom_field", String("changed")), "custom_field: kept exactly as written   # comment\n", "custom_field: changed   # comment\n"},
		{"delete a block list", Unset(KeyLabels), "labels:\n  - auth   # first\n  - web\n", ""},
		{"delete after a blank line", Unset(KeyRole), "role: implementer\n", ""},
		{"delete a block mapping", Unset("nested"), "nested:\n  a: 1\n  b: [x, y]\n", ""},
		{"delete the first key", Unset(KeyID), "id:   T-abcd12\n", ""},
		{"delete an unknown key", Unset("custom_field"), "custom_field: kept exactly as written   # comment\n", ""},
		{"delete an empty key", Unset("spaced_empty"), "spaced_empty:     # nothing yet\n", ""},
		// New keys go after the last key that comes before them in
		// KeyOrder.
		{"new key after role", Set(KeyClaimedBy, String("agent-a")), "role: implementer\n", "role: implementer\nclaimed_by: agent-a\n"},
		{"new key after labels", Set(KeyCreated, Time(time.Date(2026, 2, 7, 9, 30, 0, 0, time.UTC))), "  - web\n", "  - web\ncreated: 2026-02-07T09:30:00Z\n"},
		{"new key after priority", Set(KeyBaseBranch, String("main")), "role: implementer\n", "role: implementer\nbase_branch: main\n"},
		{"new unknown key at the end", Set("zzz", Int(3)), "  b: [x, y]\n", "  b: [x, y]\nzzz: 3\n"},
		{"new key that needs quotes", Set(KeyAssignedTo, String("yes")), "role: implementer\n", "role: implementer\nassigned_to: \"yes\"\n"},
	} {
		out, err := f.Apply(c.edit)
		if err != nil {
			t.Errorf("%s: %s: %v", c.name, describeEdit(c.edit), err)
			continue
		}
		if strings.Count(handWritten, c.old) != 1 {
			t.Fatalf("%s: %q is not unique", c.name, c.old)
		}
		want := strings.Replace(handWritten, c.old, c.new, 1)
		if string(out.Src) != want {
			t.Errorf("%s: %s:\ngot\n%s\nwant\n%s", c.name, describeEdit(c.edit), out.Src, want)
		}
	}
}

func TestEditInsertPlacement(t *testing.T) {
	for _, c := range []struct {
		name, src string
		edit      Edit
		want      string
	}{
		{"first in KeyOrder goes first", "---\ntitle: x\nqueue: done\n---\n", Set(KeyID, String("T-abcd12")),
			"---\nid: T-abcd12\ntitle: x\nqueue: done\n---\n"},
		{"before a comment about the next key", "---\nid: x\n# the queue:\nqueue: done\n---\n", Set(KeyTitle, String("T")),
			"---\nid: x\ntitle: T\n# the queue:\nqueue: done\n---\n"},
		{"after a block list", "---\nid: x\nlabels:\n  - a\n---\n", Set(KeyCreated, String("2026-02-06")),
			"---\nid: x\nlabels:\n  - a\ncreated: \"2026-02-06\"\n---\n"},
		{"unknown keys do not move it", "---\nid: x\nzz: 1\nqueue: q\n---\n", Set(KeyTitle, String("T")),
			"---\nid: x\ntitle: T\nzz: 1\nqueue: q\n---\n"},
		{"only unknown keys: first", "---\nzz: 1\n---\n", Set(KeyQueue, String("q")),
			"---\nqueue: q\nzz: 1\n---\n"},
		{"empty frontmatter", "---\n---\nbody\n", Set(KeyQueue, String("incoming")),
			"---\nqueue: incoming\n---\nbody\n"},
		{"comment-only frontmatter", "---\n# later\n---\nbody\n", Set(KeyQueue, String("incoming")),
			"---\n# later\nqueue: incoming\n---\nbody\n"},
		{"no frontmatter", "# Title\n\nbody\n", Set(KeyID, String("T-abcd12")),
			"---\nid: T-abcd12\n---\n# Title\n\nbody\n"},
		{"empty file", "", Set(KeyQueue, String("incoming")),
			"---\nqueue: incoming\n---\n"},
		{"crlf", "---\r\nid: x\r\nqueue: q\r\n---\r\nbody\r\n", Set(KeyTitle, String("T")),
			"---\r\nid: x\r\ntitle: T\r\nqueue: q\r\n---\r\nbody\r\n"},
		{"indented mapping", "---\n  id: x\n  queue: q\n---\n", Set(KeyTitle, String("T")),
			"---\n  id: x\n  title: T\n  queue: q\n---\n"},
		{"explicit first key", "---\n? id\n: x\ntitle: y\n---\n", Set("zz", String("z")),
			"---\n? id\n: x\ntitle: y\nzz: z\n---\n"},
		{"no newline before the closing line", "---\nid: x\n---", Set(KeyTitle, String("T")),
			"---\nid: x\ntitle: T\n---"},
		{"after a |+ block scalar, below the blank lines it keeps", "---\nnotes: |+\n  kept\n\n---\n", Set("zz", String("z")),
			"---\nnotes: |+\n  kept\n\nzz: z\n---\n"},
		{"after a | block scalar, above a blank line", "---\nnotes: |\n  text\n\nlast: 1\n---\n", Set(KeyTitle, String("T")),
			"---\ntitle: T\nnotes: |\n  text\n\nlast: 1\n---\n"},
	} {
		f := mustParse(t, c.src)
		out, err := f.Apply(c.edit)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(out.Src) != c.want {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, out.Src, c.want)
		}
	}
}

// TestEditRendering: values that YAML would read differently are quoted;
// everything else stays plain. Each result reads back as the value set.
func TestEditRendering(t *testing.T) {
	for _, c := range []struct {
		value, plain, single, double string // written into a plain, a '...' and a "..." value
	}{
		{"simple words", "simple words", "'simple words'", `"simple words"`},
		{"a#b", "a#b", "'a#b'", `"a#b"`},
		{"it's", "it's", "'it''s'", `"it's"`},
		{"a: b", `"a: b"`, "'a: b'", `"a: b"`},
		{"a #b", `"a #b"`, "'a #b'", `"a #b"`},
		{"x:", `"x:"`, "'x:'", `"x:"`},
		{"yes", `"yes"`, "'yes'", `"yes"`},
		{"No", `"No"`, "'No'", `"No"`},
		{"on", `"on"`, "'on'", `"on"`},
		{"y", `"y"`, "'y'", `"y"`},
		{"yesterday", "yesterday", "'yesterday'", `"yesterday"`},
		{"true", `"true"`, "'true'", `"true"`},
		{"null", `"null"`, "'null'", `"null"`},
		{"~", `"~"`, "'~'", `"~"`},
		{"", `""`, "''", `""`},
		{"123", `"123"`, "'123'", `"123"`},
		{"1.5", `"1.5"`, "'1.5'", `"1.5"`},
		{"0x10", `"0x10"`, "'0x10'", `"0x10"`},
		{"2026-02-06", `"2026-02-06"`, "'2026-02-06'", `"2026-02-06"`},
		{"-leading dash", `"-leading dash"`, "'-leading dash'", `"-leading dash"`},
		{"- x", `"- x"`, "'- x'", `"- x"`},
		{"#hash", `"#hash"`, "'#hash'", `"#hash"`},
		{"[x]", `"[x]"`, "'[x]'", `"[x]"`},
		{"*alias", `"*alias"`, "'*alias'", `"*alias"`},
		{"&anchor", `"&anchor"`, "'&anchor'", `"&anchor"`},
		{"!tag", `"!tag"`, "'!tag'", `"!tag"`},
		{"|", `"|"`, "'|'", `"|"`},
		{" lead", `" lead"`, "' lead'", `" lead"`},
		{"trail ", `"trail "`, "'trail '", `"trail "`},
		{"line\nbreak", `"line\nbreak"`, `"line\nbreak"`, `"line\nbreak"`},
		{"tab\there", `"tab\there"`, `"tab\there"`, `"tab\there"`},
		{`back\slash "q"`, `back\slash "q"`, `'back\slash "q"'`, `"back\\slash \"q\""`},
		{"ü ñ 日本", "ü ñ 日本", "'ü ñ 日本'", `"ü ñ 日本"`},
		{"del\x7f", `"del\u007F"`, `"del\u007F"`, `"del\u007F"`},
		{"nel\u0085", `"nel\u0085"`, `"nel\u0085"`, `"nel\u0085"`},
		{"ls\u2028", `"ls\u2028"`, `"ls\u2028"`, `"ls\u2028"`},
	} {
		src := "---\nplain: x\nsingle: 'x'\ndouble: \"x\"\n---\n"
		f := mustParse(t, src)
		for _, k := range []struct{ key, want string }{{"plain", c.plain}, {"single", c.single}, {"double", c.double}} {
			out, err := f.Apply(Set(k.key, String(c.value)))
			if err != nil {
				t.Errorf("%q into %s: %v", c.value, k.key, err)
				continue
			}
			if got, _ := out.Raw(k.key); got != k.want {
				t.Errorf("%q into %s: written %s, want %s", c.value, k.key, got, k.want)
			}
			if got := out.Node(k.key).Value; got != c.value || out.Node(k.key).ShortTag() != "!!str" {
				t.Errorf("%q into %s: reads back as %q (%s)", c.value, k.key, got, out.Node(k.key).ShortTag())
			}
		}
	}
	// List items are quoted where a flow list needs it.
	f := mustParse(t, "---\nlabels: []\n---\n")
	out := applyOK(t, f, Set(KeyLabels, List("a", "b, c", "[d]", "yes", "", "e f", "a?", "x:y")))
	if got, _ := out.Raw(KeyLabels); got != `[a, "b, c", "[d]", "yes", "", e f, "a?", x:y]` {
		t.Errorf("list written %s", got)
	}
	if !reflect.DeepEqual(out.Task.Labels, []string{"a", "b, c", "[d]", "yes", "e f", "a?", "x:y"}) {
		t.Errorf("labels read back %q", out.Task.Labels)
	}
}

// TestEditNoop: setting a value that is already there returns the same
// bytes: a file orch only reads is never rewritten.
func TestEditNoop(t *testing.T) {
	for _, c := range []struct {
		src  string
		edit Edit
	}{
		{designExample, Set(KeyQueue, String("rejected"))},
		{designExample, Set(KeyPRNumber, Int(48))},
		{designExample, Set(KeyLabels, List("sketch"))},
		{designExample, Set(KeyCreated, Time(time.Date(2026, 2, 6, 11, 0, 0, 0, time.FixedZone("CET", 3600))))},
		{designExample, Set("custom_field", String("kept exactly as written"))},
		{designExample, Unset("not_there")},
		{handWritten, Set(KeyTitle, String(`Fix the "login" redirect`))},
		{handWritten, Set(KeyPriority, String("high"))},
		{handWritten, Set(KeyLabels, List("auth", "web"))},
		{"---\ncreated: 2026-02-06\n---\n", Set(KeyCreated, Time(time.Date(2026, 2, 6, 0, 0, 0, 0, time.UTC)))},
		{"---\ncreated: '2026-02-06T10:00:00Z'\n---\n", Set(KeyCreated, Time(time.Date(2026, 2, 6, 10, 0, 0, 0, time.UTC)))},
		{"---\nx: &a v\ny: *a\n---\n", Set("y", String("v"))},
		{"---\nrejection_count: 007\npr_number: +12\n---\n", Set(KeyRejectionCount, Int(7))},
		{"---\nrejection_count: 007\npr_number: +12\n---\n", Set(KeyPRNumber, Int(12))},
	} {
		f := mustParse(t, c.src)
		out := applyOK(t, f, c.edit)
		if string(out.Src) != c.src {
			t.Errorf("%s rewrote the file:\n%s", describeEdit(c.edit), out.Src)
		}
	}
	// No edits at all.
	f := mustParse(t, designExample)
	if out := applyOK(t, f); out != f {
		t.Error("Apply() returned a new file")
	}
}

func TestEditTypedValues(t *testing.T) {
	f := mustParse(t, "---\nid: T-abcd12\ncreated: '2026-02-06T10:00:00Z'\nclaimed_at: \"2026-01-01T00:00:00Z\"\n---\n")
	tm := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	out := applyOK(t, f, Set(KeyCreated, Time(tm)), Set(KeyClaimedAt, Time(tm)), Set(KeyPRNumber, Int(12)), Set(KeyRejectionCount, Int(0)))
	want := "---\nid: T-abcd12\npr_number: 12\nrejection_count: 0\ncreated: '2026-03-01T08:00:00Z'\nclaimed_at: \"2026-03-01T08:00:00Z\"\n---\n"
	if string(out.Src) != want {
		t.Errorf("got\n%s\nwant\n%s", out.Src, want)
	}
	if !out.Task.Created.Equal(tm) || !out.Task.ClaimedAt.Equal(tm) || out.Task.PRNumber != 12 {
		t.Errorf("Task = %+v", out.Task)
	}
}

// TestEditCRLF: a CRLF file stays CRLF.
func TestEditCRLF(t *testing.T) {
	src := "---\r\nid: T-abcd12\r\nlabels:\r\n  - a\r\nqueue: incoming # c\r\n---\r\n# T\r\n"
	f := mustParse(t, src)
	out := applyOK(t, f, Set(KeyQueue, String("claimed")), Set(KeyLabels, List("a", "b")), Set(KeyClaimedBy, String("agent-a")))
	want := "---\r\nid: T-abcd12\r\nlabels:\r\n  - a\r\n  - b\r\nqueue: claimed # c\r\nclaimed_by: agent-a\r\n---\r\n# T\r\n"
	if string(out.Src) != want {
		t.Errorf("got  %q\nwant %q", out.Src, want)
	}
	out = applyOK(t, f, Set(KeyLabels, List()))
	if want := "---\r\nid: T-abcd12\r\nlabels: []\r\nqueue: incoming # c\r\n---\r\n# T\r\n"; string(out.Src) != want {
		t.Errorf("got  %q\nwant %q", out.Src, want)
	}
	out = applyOK(t, f, Unset(KeyLabels))
	if want := "---\r\nid: T-abcd12\r\nqueue: incoming # c\r\n---\r\n# T\r\n"; string(out.Src) != want {
		t.Errorf("got  %q\nwant %q", out.Src, want)
	}
}

// TestEditErrors: edits that cannot be made without changing other keys,
// or that would make the file unreadable, fail with *EditError and leave
// the file alone.
func TestEditErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		src  string
		edit Edit
	}{
		{"anchored value used elsewhere", "---\nid: &x T-abcd12\nbranch: *x\n---\n", Set(KeyID, String("T-other1"))},
		{"delete an anchor in use", "---\nid: &x T-abcd12\nbranch: *x\n---\n", Unset(KeyID)},
		{"merge key source", "---\nbase: &b {queue: done}\n<<: *b\n---\n", Set("base", String("x"))},
		{"number key given text", designExample, Set(KeyPRNumber, String("abc"))},
		{"time key given text", designExample, Set(KeyCreated, String("yesterday"))},
		{"text key given a list", designExample, Set(KeyTitle, List("a"))},
		{"negative number", designExample, Set(KeyRejectionCount, Int(-1))},
	} {
		f := mustParse(t, c.src)
		out, err := f.Apply(c.edit)
		var ee *EditError
		if !errors.As(err, &ee) || out != nil {
			t.Errorf("%s: %s = %v; want an *EditError", c.name, describeEdit(c.edit), err)
			continue
		}
		if ee.Key != c.edit.Key || ee.Path != f.Path {
			t.Errorf("%s: EditError %+v", c.name, ee)
		}
		if string(f.Src) != c.src {
			t.Errorf("%s: the original changed", c.name)
		}
	}
	// A failing edit in a list of edits fails them all.
	f := mustParse(t, designExample)
	if out, err := f.Apply(Set(KeyQueue, String("done")), Set(KeyPRNumber, String("x"))); err == nil || out != nil {
		t.Errorf("Apply with a bad edit = %v, %v", out, err)
	}
}

// TestEditAliases: keys that hold an alias can be changed (the alias is
// replaced by the value), and the anchor's own key too when nothing else
// uses it.
func TestEditAliases(t *testing.T) {
	src := "---\nid: &x T-abcd12\nbranch: *x\n---\n"
	f := mustParse(t, src)
	out := applyOK(t, f, Set(KeyBranch, String("main")))
	if want := "---\nid: &x T-abcd12\nbranch: main\n---\n"; string(out.Src) != want {
		t.Errorf("got %q", out.Src)
	}
	out = applyOK(t, out, Set(KeyID, String("T-efgh34")))
	if out.Task.ID != "T-efgh34" || out.Task.Branch != "main" {
		t.Errorf("Task = %+v\n%s", out.Task, out.Src)
	}
}
