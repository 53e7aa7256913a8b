package taskfile

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDesignExample(t *testing.T) {
	f := mustParse(t, designExample)
	want := Task{
		ID:             "T-4k9x2m",
		Title:          "Snap fork start like the other shapes",
		Queue:          Rejected,
		Priority:       "P1",
		Role:           "implementer",
		Branch:         "task/T-4k9x2m-snap-fork-start",
		PRNumber:       48,
		RejectionCount: 1,
		ClaimedBy:      "agent-b",
		LockedOut:      []string{"agent-a"},
		DependsOn:      []string{"T-2bq7za"},
		Labels:         []string{"sketch"},
		Created:        time.Date(2026, 2, 6, 10, 0, 0, 0, time.UTC),
	}
	if !reflect.DeepEqual(f.Task, want) {
		t.Errorf("Task =\n%+v\nwant\n%+v", f.Task, want)
	}
	if !f.HasFrontmatter() {
		t.Error("HasFrontmatter = false")
	}
	wantKeys := []string{"id", "title", "queue", "priority", "role", "branch", "pr_number", "rejection_count",
		"claimed_by", "locked_out", "depends_on", "labels", "created", "custom_field"}
	if got := f.Keys(); !reflect.DeepEqual(got, wantKeys) {
		t.Errorf("Keys = %q, want %q", got, wantKeys)
	}
	for i, k := range wantKeys {
		if got := f.Line(k); got != i+2 {
			t.Errorf("Line(%q) = %d, want %d", k, got, i+2)
		}
	}
	if f.Line("nope") != 0 || f.Has("nope") || f.Node("nope") != nil {
		t.Error("an absent key has a line, a node or Has")
	}
	raws := map[string]string{
		"custom_field": "kept exactly as written",
		"locked_out":   "[agent-a]",
		"created":      "2026-02-06T10:00:00Z",
	}
	for k, want := range raws {
		if got, ok := f.Raw(k); !ok || got != want {
			t.Errorf("Raw(%q) = %q, %v; want %q", k, got, ok, want)
		}
	}
	if _, ok := f.Raw("nope"); ok {
		t.Error("Raw of an absent key is ok")
	}
	if !strings.HasPrefix(string(f.Body()), "# Snap fork start like the other shapes\n\n## Review Feedback") {
		t.Errorf("Body starts %q", f.Body()[:40])
	}
	if got := string(f.Src[:f.BodyOffset()]); !strings.HasSuffix(got, "survive every edit\n---\n") {
		t.Errorf("frontmatter ends %q", got[len(got)-30:])
	}
}

func TestParsePriority(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"priority: P0", "P0"},
		{"priority: P1", "P1"},
		{"priority: p2", "P2"},
		{"priority: P3", "P3"},
		{"priority: critical", "P0"},
		{"priority: high", "P1"},
		{"priority: High", "P1"},
		{"priority: medium", "P2"},
		{"priority: low", "P3"},
		{"priority: 'low'", "P3"},
		{"priority: 1", "P1"},
		{"priority:", "P2"},
		{"", "P2"}, // absent: the default
		{"priority: urgent", "urgent"},
	} {
		f := mustParse(t, lines("---", "id: T-abcd12", c.line, "---"))
		if f.Task.Priority != c.want {
			t.Errorf("%q: Priority = %q, want %q", c.line, f.Task.Priority, c.want)
		}
	}
}

func TestParseLists(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"flow", "labels: [a, b]", []string{"a", "b"}},
		{"flow quoted", `labels: ["a, b", 'c', "d:e"]`, []string{"a, b", "c", "d:e"}},
		{"flow empty", "labels: []", []string{}},
		{"flow multi-line", "labels: [a,\n  b]", []string{"a", "b"}},
		{"block", "labels:\n  - a\n  - b", []string{"a", "b"}},
		{"block flush", "labels:\n- a\n- b", []string{"a", "b"}},
		{"block comments", "labels: # the labels\n  - a # first\n  # between\n  - b", []string{"a", "b"}},
		{"scalar", "labels: sketch", []string{"sketch"}},
		{"quoted scalar", "labels: 'a, b'", []string{"a, b"}},
		{"empty", "labels:", nil},
		{"null", "labels: ~", nil},
		{"empty string", "labels: ''", nil},
		{"null items dropped", "labels: [a, ~, '']", []string{"a"}},
		{"numbers as text", "labels: [1, 2.5, true]", []string{"1", "2.5", "true"}},
		{"alias", "x: &l [p, q]\nlabels: *l", []string{"p", "q"}},
		{"alias items", "x: &v p\nlabels: [*v, q]", []string{"p", "q"}},
	} {
		f, err := Parse("t.md", []byte("---\n"+c.yaml+"\n---\n"))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(f.Task.Labels, c.want) {
			t.Errorf("%s: Labels = %#v, want %#v", c.name, f.Task.Labels, c.want)
		}
	}
	// The three list keys decode the same way.
	f := mustParse(t, lines("---", "locked_out: [a]", "depends_on:", "  - T-aaaa11", "labels: x", "---"))
	if !reflect.DeepEqual(f.Task.LockedOut, []string{"a"}) || !reflect.DeepEqual(f.Task.DependsOn, []string{"T-aaaa11"}) || !reflect.DeepEqual(f.Task.Labels, []string{"x"}) {
		t.Errorf("lists = %q %q %q", f.Task.LockedOut, f.Task.DependsOn, f.Task.Labels)
	}
}

func TestParseTimes(t *testing.T) {
	utc := func(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
	}
	for _, c := range []struct {
		value string
		want  time.Time
	}{
		{"2026-02-06T10:00:00Z", utc(2026, 2, 6, 10, 0, 0, 0)},
		{"2026-02-06T12:00:00+02:00", utc(2026, 2, 6, 10, 0, 0, 0)},
		{"2026-02-06T10:00:00.5Z", utc(2026, 2, 6, 10, 0, 0, 5e8)},
		{"2026-02-06T10:00:00", utc(2026, 2, 6, 10, 0, 0, 0)},
		{"2026-02-06 10:00:00", utc(2026, 2, 6, 10, 0, 0, 0)},
		{"2026-02-06 10:00:00Z", utc(2026, 2, 6, 10, 0, 0, 0)},
		{"2026-02-06T10:00Z", utc(2026, 2, 6, 10, 0, 0, 0)},
		{"2026-02-06", utc(2026, 2, 6, 0, 0, 0, 0)},
		{`"2026-02-06T10:00:00Z"`, utc(2026, 2, 6, 10, 0, 0, 0)},
		{"", time.Time{}},
		{"~", time.Time{}},
	} {
		for _, key := range []string{KeyCreated, KeyClaimedAt, KeySubmittedAt} {
			f, err := Parse("t.md", []byte("---\n"+key+": "+c.value+"\n---\n"))
			if err != nil {
				t.Errorf("%s: %q: %v", key, c.value, err)
				continue
			}
			got := map[string]time.Time{KeyCreated: f.Task.Created, KeyClaimedAt: f.Task.ClaimedAt, KeySubmittedAt: f.Task.SubmittedAt}[key]
			if !got.Equal(c.want) || got.Location() != time.UTC {
				t.Errorf("%s: %q = %v, want %v", key, c.value, got, c.want)
			}
		}
	}
}

func TestParseNumbers(t *testing.T) {
	f := mustParse(t, lines("---", "pr_number: 48", "rejection_count: '2'", "no_progress_count:", "---"))
	if f.Task.PRNumber != 48 || f.Task.RejectionCount != 2 || f.Task.NoProgress != 0 {
		t.Errorf("numbers = %d %d %d", f.Task.PRNumber, f.Task.RejectionCount, f.Task.NoProgress)
	}
}

func TestParseShapes(t *testing.T) {
	for _, c := range []struct {
		name      string
		src       string
		hasFM     bool
		keys      []string
		body      string
		title     string
		bodyStart int
	}{
		{name: "crlf", src: "---\r\nid: T-abcd12\r\nlabels:\r\n  - a\r\n  - b\r\n---\r\n# Windows\r\n\r\nbody\r\n",
			hasFM: true, keys: []string{"id", "labels"}, body: "# Windows\r\n\r\nbody\r\n", title: "Windows"},
		{name: "empty frontmatter", src: "---\n---\n# Title\n", hasFM: true, body: "# Title\n", title: "Title"},
		{name: "blank frontmatter", src: "---\n\n  \n---\nbody\n", hasFM: true, body: "body\n"},
		{name: "comment-only frontmatter", src: "---\n# later\n---\nbody\n", hasFM: true, body: "body\n"},
		{name: "null frontmatter", src: "---\n~\n---\nbody\n", hasFM: true, body: "body\n"},
		{name: "no frontmatter", src: "# Just text\n\nmore\n", body: "# Just text\n\nmore\n", title: "Just text"},
		{name: "empty file", src: ""},
		{name: "blank lines only", src: "\n\n", body: "\n\n"},
		{name: "text before ---", src: "hello\n---\nid: x\n---\n", body: "hello\n---\nid: x\n---\n"},
		{name: "leading blank lines", src: "\n\n---\nid: T-abcd12\n---\nbody\n", hasFM: true, keys: []string{"id"}, body: "body\n"},
		{name: "delimiters with spaces", src: "---  \nid: T-abcd12\n---\t\nbody\n", hasFM: true, keys: []string{"id"}, body: "body\n"},
		{name: "no newline after closing", src: "---\nid: T-abcd12\n---", hasFM: true, keys: []string{"id"}, body: ""},
		{name: "document end marker alone", src: "---\nid: T-abcd12\n...\n# comment\n---\nbody\n", hasFM: true, keys: []string{"id"}, body: "body\n"},
		{name: "--- in body", src: "---\nid: T-abcd12\n---\nabove\n---\nbelow\n", hasFM: true, keys: []string{"id"}, body: "above\n---\nbelow\n"},
		{name: "title key wins", src: "---\ntitle: From key\n---\n# From body\n", hasFM: true, keys: []string{"title"}, body: "# From body\n", title: "From key"},
		{name: "title from closed heading", src: "---\nid: x\n---\n\n#  Spaced  title ##\n", hasFM: true, keys: []string{"id"}, body: "\n#  Spaced  title ##\n", title: "Spaced  title"},
		{name: "no title from level 2", src: "---\nid: x\n---\n## Not a title\n", hasFM: true, keys: []string{"id"}, body: "## Not a title\n"},
		{name: "no title after text", src: "---\nid: x\n---\ntext\n# Late\n", hasFM: true, keys: []string{"id"}, body: "text\n# Late\n"},
	} {
		f, err := Parse("t.md", []byte(c.src))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if f.HasFrontmatter() != c.hasFM {
			t.Errorf("%s: HasFrontmatter = %v", c.name, f.HasFrontmatter())
		}
		if got := f.Keys(); len(got)+len(c.keys) > 0 && !reflect.DeepEqual(got, c.keys) {
			t.Errorf("%s: Keys = %q, want %q", c.name, got, c.keys)
		}
		if string(f.Body()) != c.body {
			t.Errorf("%s: Body = %q, want %q", c.name, f.Body(), c.body)
		}
		if !bytes.Equal(f.Src[f.BodyOffset():], f.Body()) || !bytes.Equal(f.Src, []byte(c.src)) {
			t.Errorf("%s: Src or BodyOffset wrong", c.name)
		}
		if f.Task.Title != c.title {
			t.Errorf("%s: Title = %q, want %q", c.name, f.Task.Title, c.title)
		}
	}
}

// TestParseErrors checks that every file orch cannot read gives a
// *ParseError naming the line a person has to fix.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		src  string
		line int
		msg  string
	}{
		{"no closing", "---\nid: T-abcd12\ntitle: x\n", 1, "no closing --- line"},
		{"no closing after blank lines", "\n\n---\nid: T-abcd12\n", 3, "no closing --- line"},
		{"only an opening line", "---", 1, "no closing --- line"},
		{"NUL", "---\nid: T-abcd12\ntitle: a\x00b\n---\n", 3, "NUL byte"},
		{"NUL in body", "---\nid: T-abcd12\n---\n\nx\x00", 5, "NUL byte"},
		{"invalid UTF-8", "---\nid: T-abcd12\n---\n# T\nbad \xff byte\n", 5, "not valid UTF-8"},
		{"truncated UTF-8", "---\ntitle: caf\xc3\n---\n", 2, "not valid UTF-8"},
		{"duplicate key", "---\nid: T-abcd12\ntitle: a\nqueue: done\nid: T-efgh34\n---\n", 5, `key "id" appears twice (first on line 2)`},
		{"duplicate quoted key", "---\ntitle: a\n'title': b\n---\n", 3, `key "title" appears twice`},
		// A broken YAML line: the line to fix, not where the YAML
		// library noticed.
		{"unclosed flow list", "---\nid: T-abcd12\ntitle: foo\nqueue: [a\nrole: x\n---\n", 4, "did not find expected ',' or ']'"},
		{"unclosed flow map", "---\nid: x\ntitle: y\nqueue: {a\n---\n", 4, ""},
		{"unclosed double quote", "---\nid: x\ntitle: \"foo\nqueue: x\n---\n", 3, ""},
		{"unclosed single quote", "\n\n---\nid: x\ntitle: 'a\n---\n", 5, ""},
		{"quote starting a key", "---\nid: x\ntitle: y\n\"queue: x\n---\n", 4, ""},
		{"over-indented key", "---\nid: x\n  title: y\n---\n", 3, "mapping values are not allowed"},
		{"colon in plain value", "---\nid: x\ntitle: a: b\nqueue: x\n---\n", 3, "mapping values are not allowed"},
		{"missing colon", "---\nid: x\nfoo\ntitle: y\n---\n", 3, "could not find expected ':'"},
		{"tab indentation", "---\nid: x\n\ttitle: y\n---\n", 3, "tab character"},
		{"misaligned list item", "---\nid: x\nlabels:\n  - a\n - b\nqueue: y\n---\n", 5, ""},
		{"block scalar dedent", "---\nid: x\ntitle: y\ndesc: |\n  foo\n bar\n---\n", 6, ""},
		{"unknown alias", "---\nid: x\ntitle: *nope\n---\n", 3, "unknown anchor 'nope'"},
		{"list at top", "---\nid: x\n- a\n---\n", 3, ""},
		{"reserved character", "---\nid: x\ntitle: @foo\n---\n", 3, "cannot start any token"},
		{"error after a multi-line list", "---\nlabels: [a,\n  b]\ntitle: \"unterminated\n---\n", 4, ""},
		{"error after a multi-line string", "---\ntitle: \"multi\n  line\"\nqueue: [a\n---\n", 4, ""},
		{"error after a multi-line single-quoted string", "---\ntitle: a\ndesc: 'x\n  y'\nfoo\n---\n", 5, ""},
		{"crlf", "---\r\nid: x\r\ntitle: [a\r\nqueue: q\r\n---\r\n", 3, ""},
		{"error after a line separator", "---\ncustom: \"a\u2028b\"\ntitle: x\nfoo\n---\n", 4, ""},
		// Keys after the end of the first YAML document would be
		// silently ignored.
		{"second document after ...", "---\nid: x\n...\nqueue: done\n---\n", 3, "a second YAML document starts here"},
		{"second document after --- x", "---\nid: x\n--- done\n---\n", 3, "a second YAML document"},
		{"directive", "---\nid: x\n%YAML 1.2\n---\n", 3, "a second YAML document"},
		{"crlf second document", "---\r\nid: x\r\ntitle: y\r\n...\r\nz: 1\r\n---\r\n", 4, "a second YAML document"},
		// Valid YAML that is not a task file.
		{"not a mapping", "---\n[a, b]\n---\n", 2, "must be a mapping"},
		{"plain text", "---\n\njust text\n---\n", 3, "must be a mapping"},
		{"flow mapping", "---\n{id: x}\n---\n", 2, "block style"},
		{"complex key", "---\nid: x\n? [a]\n: b\n---\n", 3, "plain strings"},
		{"number not a number", "---\nid: x\npr_number: abc\n---\n", 3, `pr_number: must be a whole number ≥ 0, not "abc"`},
		{"negative number", "---\nrejection_count: -1\n---\n", 2, "rejection_count: must be a whole number"},
		{"fraction", "---\nno_progress_count: 1.5\n---\n", 2, "no_progress_count: must be a whole number"},
		{"number as list", "---\npr_number: [1]\n---\n", 2, "pr_number: must be a number"},
		{"bad time", "---\nid: x\ncreated: yesterday\n---\n", 3, `created: must be a time such as 2026-02-06T10:00:00Z, not "yesterday"`},
		{"time as list", "---\nclaimed_at: [1]\n---\n", 2, "claimed_at: must be a time"},
		{"title as list", "---\nid: x\ntitle: [a, b]\n---\n", 3, "title: must be a single value"},
		{"queue as map", "---\nqueue:\n  a: b\n---\n", 2, "queue: must be a single value"},
		{"priority as list", "---\npriority: [P1]\n---\n", 2, "priority: must be a single value"},
		{"labels as map", "---\nid: x\nlabels: {a: b}\n---\n", 3, "labels: must be a list such as [a, b]"},
		{"nested list", "---\nlocked_out: [[a]]\n---\n", 2, "locked_out: must be a list"},
		{"type error after a line separator", "---\ncustom: \"a\u2028b\"\npr_number: x\n---\n", 3, "pr_number"},
		{"type error after NEL", "---\ncustom: 'a\u0085b'\n\nqueue: [x]\n---\n", 4, "queue"},
	} {
		_, err := Parse("tasks/T-x.md", []byte(c.src))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v (%T), want a *ParseError", c.name, err, err)
			continue
		}
		if pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) || pe.Path != "tasks/T-x.md" {
			t.Errorf("%s: got line %d %q, want line %d containing %q", c.name, pe.Line, pe.Msg, c.line, c.msg)
		}
	}
}

func TestParseTooLarge(t *testing.T) {
	src := []byte("---\nid: T-abcd12\n---\n")
	src = append(src, bytes.Repeat([]byte("x"), MaxFileSize+1-len(src))...)
	_, err := Parse("big.md", src)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 0 || !strings.Contains(pe.Msg, "limit") || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want a ParseError about the size limit", err)
	}
	if _, err := Parse("ok.md", src[:MaxFileSize]); err != nil {
		t.Fatalf("a file of exactly MaxFileSize: %v", err)
	}
}

func TestParseErrorString(t *testing.T) {
	for _, c := range []struct {
		err  ParseError
		want string
	}{
		{ParseError{Path: "tasks/a.md", Line: 3, Msg: "bad"}, "tasks/a.md:3: bad"},
		{ParseError{Path: "tasks/a.md", Msg: "bad"}, "tasks/a.md: bad"},
		{ParseError{Line: 2, Msg: "bad"}, "<task>:2: bad"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	ee := &EditError{Path: "a.md", Key: "queue", Msg: "no"}
	if got := ee.Error(); got != `a.md: cannot change "queue": no` {
		t.Errorf("EditError = %q", got)
	}
}

// TestLineNumbers: Line counts lines the way an editor does, also after
// leading blank lines, CRLF and the Unicode line breaks YAML counts.
func TestLineNumbers(t *testing.T) {
	for _, c := range []struct {
		src  string
		key  string
		line int
	}{
		{"\n\n---\nid: x\ntitle: y\n---\n", "title", 5},
		{"---\r\nid: x\r\n\r\ntitle: y\r\n---\r\n", "title", 4},
		{"---\nid: x\nlabels:\n  - a\n  - b\nqueue: done\n---\n", "queue", 6},
		{"---\nnote: |\n  a\n  b\nqueue: done\n---\n", "queue", 5},
		{"---\nnote: \"a\u2028b\u2029c\"\nqueue: done\n---\n", "queue", 3},
		{"---\nnote: 'a\u0085b'\nqueue: done\n---\n", "queue", 3},
	} {
		f := mustParse(t, c.src)
		if got := f.Line(c.key); got != c.line {
			t.Errorf("%q: Line(%q) = %d, want %d", c.src, c.key, got, c.line)
		}
	}
}

func TestParseTime(t *testing.T) {
	if _, err := ParseTime("06/02/2026"); err == nil {
		t.Error("ParseTime accepted a day/month date")
	}
	tm, err := ParseTime("2026-02-06T11:00:00+01:00")
	if err != nil || tm.Location() != time.UTC || FormatTime(tm) != "2026-02-06T10:00:00Z" {
		t.Errorf("ParseTime = %v, %v; FormatTime = %q", tm, err, FormatTime(tm))
	}
	if got := FormatTime(time.Date(2026, 2, 6, 10, 0, 0, 123, time.FixedZone("x", 3600))); got != "2026-02-06T09:00:00Z" {
		t.Errorf("FormatTime = %q", got)
	}
}

// TestParseErrorLongFrontmatter: the line is exact in a long frontmatter
// too, and a huge one still fails fast.
func TestParseErrorLongFrontmatter(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\n")
	for i := 0; i < 500; i++ {
		b.WriteString("key" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "_" + strings.Repeat("y", i/26) + ": value\n")
	}
	long := b.String()
	for _, c := range []struct {
		tail string
		line int
	}{
		{"queue: [a\nrole: x\n", 502},
		{"title: \"x\nrole: y\n", 502},
		{"  bad: indent\n", 502},
		{"ok: 1\nfoo\nbar: 1\n", 503},
	} {
		_, err := Parse("long.md", []byte(long+c.tail+"---\n"))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != c.line {
			t.Errorf("%q: err = %v, want line %d", c.tail, err, c.line)
		}
	}
	// 20000 lines: too long to search for the line, but it fails fast.
	var h strings.Builder
	h.WriteString("---\n")
	for i := 0; i < 20000; i++ {
		h.WriteString("k" + strings.Repeat("z", i%50) + "_" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676)) + ": v\n")
	}
	h.WriteString("bad: [\n---\n")
	_, err := Parse("huge.md", []byte(h.String()))
	if _, ok := err.(*ParseError); !ok {
		t.Errorf("huge frontmatter: %v, want a *ParseError", err)
	}
}

// A byte order mark before the opening delimiter (Notepad and some other
// Windows editors save one) does not hide the frontmatter, and an edit
// keeps it, changing only the edited line.
func TestParseByteOrderMark(t *testing.T) {
	src := "\ufeff---\nid: T-abcd12\ntitle: With a BOM\nqueue: incoming\n---\n# With a BOM\n\nBody.\n"
	f := mustParse(t, src)
	if f.Task.ID != "T-abcd12" || f.Task.Title != "With a BOM" || f.Task.Queue != Incoming {
		t.Fatalf("task %+v", f.Task)
	}
	g, err := f.Apply(Set(KeyQueue, String("claimed")))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(src, "queue: incoming", "queue: claimed", 1); string(g.Src) != want {
		t.Fatalf("after the edit:\n%q\nwant\n%q", g.Src, want)
	}
	if secs := g.Sections(); len(secs) == 0 {
		t.Fatal("no sections in the body")
	}
	// Without a delimiter after it, a BOM is just the start of the body.
	if f := mustParse(t, "\ufeff# Just a heading\n"); f.Task.ID != "" {
		t.Fatalf("task %+v", f.Task)
	}
}
