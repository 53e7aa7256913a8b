package taskfile

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The seed corpora live in testdata/fuzz/<FuzzName>/ (go test fuzz v1
// files); the f.Add calls below are the few seeds every run starts from even
// without them.

// FuzzParse: Parse never panics, and for a file that parses, nothing that
// reads it (Sections, AfterTitle, Validate, FeedbackRounds) panics either.
func FuzzParse(f *testing.F) {
	f.Add([]byte(designExample))
	f.Add([]byte("---\nid: T-abcd12\n---\n# Title\n\nbody\n"))
	f.Add([]byte("---\r\nid: T-abcd12\r\nlabels:\r\n  - a\r\n---\r\n# T\r\n"))
	f.Add([]byte("no frontmatter at all\n# Heading\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := Parse("fuzz.md", src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error is %T, not *ParseError: %v", err, err)
			}
			if pe.Line < 0 || pe.Line > bytes.Count(src, []byte("\n"))+1 {
				t.Fatalf("ParseError line %d outside the file (%d lines): %v", pe.Line, bytes.Count(src, []byte("\n"))+1, err)
			}
			return
		}
		if !bytes.Equal(file.Src, src) {
			t.Fatalf("Parse changed the source")
		}
		if off := file.BodyOffset(); off < 0 || off > len(src) || !bytes.Equal(file.Body(), src[off:]) {
			t.Fatalf("body offset %d out of range", off)
		}
		secs := file.Sections()
		prev := file.BodyOffset()
		for _, s := range secs {
			if s.Start < prev || s.Start > s.HeadingEnd || s.HeadingEnd > s.End || s.End > len(src) {
				t.Fatalf("bad section offsets %+v (body at %d, len %d)", s, file.BodyOffset(), len(src))
			}
			if s.Level < 1 || s.Level > 6 {
				t.Fatalf("bad section level %+v", s)
			}
			_ = file.SectionText(s)
			prev = s.Start
		}
		at := file.AfterTitle()
		if at < file.BodyOffset() || at > len(src) {
			t.Fatalf("AfterTitle %d outside the body [%d, %d]", at, file.BodyOffset(), len(src))
		}
		for _, e := range file.Validate() {
			if e.Line < 1 || e.Line > bytes.Count(src, []byte("\n"))+1 {
				t.Fatalf("Validate line %d outside the file: %v", e.Line, e)
			}
		}
		for _, k := range file.Keys() {
			if l := file.Line(k); l < 1 {
				t.Fatalf("key %q has line %d", k, l)
			}
			raw, ok := file.Raw(k)
			if !ok || !utf8.ValidString(raw) {
				t.Fatalf("key %q: bad raw value %q", k, raw)
			}
		}
		for _, r := range file.FeedbackRounds() {
			for _, s := range r.Sources {
				for _, is := range s.Issues {
					if is.Line < 1 || is.Line > bytes.Count(src, []byte("\n"))+1 {
						t.Fatalf("issue %s on line %d", is.ID, is.Line)
					}
				}
			}
		}
		_ = file.AllIssues()
		// Inserting a block after the title keeps every byte around it.
		out, err := file.Insert(at, "## Fuzz\n\ntext")
		if err == nil {
			if !bytes.HasPrefix(out.Src, src[:at]) || !bytes.HasSuffix(out.Src, src[at:]) {
				t.Fatalf("Insert changed bytes outside the insertion point")
			}
		}
	})
}

// fuzzKeys are the keys FuzzEdit edits: every key orch knows, and a few it
// does not. The list is fixed (rather than KeyOrder itself) so that the
// committed corpus keeps naming the same keys; keys added to KeyOrder later
// are appended.
var fuzzKeys = func() []string {
	keys := []string{
		"id", "title", "queue", "priority", "role", "branch", "base_branch", "pr_number",
		"rejection_count", "no_progress_count", "claimed_by", "claimed_at", "submitted_by", "submitted_at",
		"assigned_to", "locked_out", "depends_on", "labels", "created", "rejected_at_commit",
		"custom_field", "x", "notes", "<<", "a b",
	}
	for _, k := range KeyOrder {
		if indexOf(keys, k) < 0 {
			keys = append(keys, k)
		}
	}
	return keys
}()

// storeBase is a plain task file that must take any string or list value.
const storeBase = "---\nid: T-abcd12\ntitle: 'single'\nbranch: \"double\"\nnotes: plain # c\nlabels:\n  - a\nqueue: incoming\n---\n# T\n"

// checkStore checks that any valid UTF-8 string, and any list of them, can
// be written into storeBase: into single- and double-quoted and plain values,
// into a block list, and as a new key.
func checkStore(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		return
	}
	file, err := Parse("store.md", []byte(storeBase))
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	if s != "" {
		items = strings.Split(s, ",")
	}
	list := make([]any, len(items))
	for i, it := range items {
		list[i] = it
	}
	for _, e := range []struct {
		edit Edit
		want any
	}{
		{Set("title", String(s)), s},
		{Set("branch", String(s)), s},
		{Set("notes", String(s)), s},
		{Set("custom", String(s)), s},
		{Set("labels", List(items...)), list},
		{Set("locked_out", List(items...)), list},
		{Set("notes", List(items...)), list},
	} {
		if _, err := file.Apply(e.edit); err != nil {
			t.Fatalf("cannot store a value: %s: %v", describeEdit(e.edit), err)
		}
		checkEdit(t, file, e.edit, e.want)
	}
}

// FuzzEdit: an edit either fails with *EditError, or changes only the edited
// key: every other key means the same and is written the same, the body is
// untouched, and the edited key reads back as the value set.
func FuzzEdit(f *testing.F) {
	f.Add([]byte(designExample), uint8(2), uint8(0), "done", int64(0))
	f.Add([]byte(designExample), uint8(7), uint8(1), "", int64(49))
	f.Add([]byte(designExample), uint8(15), uint8(2), "agent-a,agent-c", int64(0))
	f.Add([]byte(designExample), uint8(20), uint8(0), "changed: yes", int64(0))
	f.Add([]byte(designExample), uint8(11), uint8(3), "", int64(0))
	f.Add([]byte("---\nlabels:\n  - a\n  - b\n---\nbody\n"), uint8(17), uint8(2), "", int64(0))
	f.Add([]byte("# no frontmatter\n"), uint8(0), uint8(0), "T-abcd12", int64(0))
	f.Fuzz(func(t *testing.T, src []byte, keyIdx, kind uint8, s string, n int64) {
		checkStore(t, s)
		file, err := Parse("fuzz.md", src)
		if err != nil {
			return
		}
		key := fuzzKeys[int(keyIdx)%len(fuzzKeys)]
		var edit Edit
		var want any
		switch kind % 5 {
		case 0:
			edit, want = Set(key, String(s)), s
		case 1:
			edit, want = Set(key, Int(int(n))), int(n)
		case 2:
			var items []string
			if s != "" {
				items = strings.Split(s, ",")
			}
			edit = Set(key, List(items...))
			list := make([]any, len(items))
			for i, it := range items {
				list[i] = it
			}
			want = list
		case 3:
			edit = Unset(key)
		case 4:
			tm := time.Unix(n%(1<<40), 0).UTC()
			edit, want = Set(key, Time(tm)), tm
		}
		checkEdit(t, file, edit, want)
	})
}

// checkEdit applies one edit to file and checks the surgical-edit contract.
// want is the decoded value the key must read back as (nil for a deletion).
func checkEdit(t *testing.T, file *File, edit Edit, want any) {
	t.Helper()
	out, err := file.Apply(edit)
	if err != nil {
		var ee *EditError
		if !errors.As(err, &ee) {
			t.Fatalf("edit %s: error is %T, not *EditError: %v", describeEdit(edit), err, err)
		}
		return
	}
	key := edit.Key
	re, err := Parse("fuzz.md", out.Src)
	if err != nil {
		t.Fatalf("edit %s: result does not parse: %v\n--- result:\n%s", describeEdit(edit), err, out.Src)
	}
	if !bytes.Equal(re.Body(), file.Body()) {
		t.Fatalf("edit %s changed the body:\n%q\n->\n%q", describeEdit(edit), file.Body(), re.Body())
	}
	// Every other key: same order, same meaning, same bytes.
	var before, after []string
	for _, k := range file.Keys() {
		if k != key {
			before = append(before, k)
		}
	}
	for _, k := range re.Keys() {
		if k != key {
			after = append(after, k)
		}
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("edit %s changed the other keys: %q -> %q\n--- result:\n%s", describeEdit(edit), before, after, out.Src)
	}
	for _, k := range before {
		if bytes.Equal(out.Src, file.Src) {
			break // nothing changed
		}
		if !sameMeaning(file.Node(k), re.Node(k)) {
			t.Fatalf("edit %s changed the meaning of %q\n--- before:\n%s\n--- after:\n%s", describeEdit(edit), k, file.Src, out.Src)
		}
		a, _ := file.Raw(k)
		b, _ := re.Raw(k)
		if a != b {
			t.Fatalf("edit %s rewrote %q: %q -> %q", describeEdit(edit), k, a, b)
		}
	}
	// The edited key reads back as the value set.
	if edit.Delete {
		if re.Has(key) {
			t.Fatalf("edit %s: key still present\n--- result:\n%s", describeEdit(edit), out.Src)
		}
	} else {
		got, err := decodeNode(re.Node(key))
		if err != nil || !sameValue(got, want) {
			t.Fatalf("edit %s: key reads back as %#v (%v), want %#v\n--- result:\n%s", describeEdit(edit), got, err, want, out.Src)
		}
	}
	// A value that is already there is not rewritten.
	if edit.Delete && !file.Has(key) || !edit.Delete && file.Has(key) && func() bool {
		got, err := decodeNode(file.Node(key))
		return err == nil && sameValue(got, want)
	}() {
		if !bytes.Equal(out.Src, file.Src) {
			t.Fatalf("no-op edit %s rewrote the file:\n%s\n->\n%s", describeEdit(edit), file.Src, out.Src)
		}
		return
	}
	// Only the edited field's bytes change: the bytes before the field's
	// first line and after its last line are kept; a new key is a pure
	// insertion.
	if fl := file.field(key); fl != nil {
		if !bytes.HasPrefix(out.Src, file.Src[:fl.start]) || !bytes.HasSuffix(out.Src[fl.start:], file.Src[fl.end:]) {
			t.Fatalf("edit %s changed bytes outside the field %q\n--- before:\n%s\n--- after:\n%s", describeEdit(edit), file.Src[fl.start:fl.end], file.Src, out.Src)
		}
	} else if p, s := commonAffixes(file.Src, out.Src); p+s != len(file.Src) {
		t.Fatalf("edit %s adding a key changed existing bytes\n--- before:\n%s\n--- after:\n%s", describeEdit(edit), file.Src, out.Src)
	}
}

func describeEdit(e Edit) string {
	if e.Delete {
		return fmt.Sprintf("Unset(%q)", e.Key)
	}
	switch e.Value.kind {
	case kindInt:
		return fmt.Sprintf("Set(%q, Int(%d))", e.Key, e.Value.n)
	case kindList:
		return fmt.Sprintf("Set(%q, List(%q))", e.Key, e.Value.list)
	case kindTime:
		return fmt.Sprintf("Set(%q, Time(%s))", e.Key, e.Value.s)
	}
	return fmt.Sprintf("Set(%q, String(%q))", e.Key, e.Value.s)
}

func commonAffixes(a, b []byte) (prefix, suffix int) {
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	return prefix, suffix
}

// decodeNode decodes a value node the way a YAML reader would, independently
// of the package's own comparison.
func decodeNode(n *yaml.Node) (v any, err error) {
	if n == nil {
		return nil, errors.New("no node")
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decode panic: %v", r)
		}
	}()
	err = n.Decode(&v)
	return v, err
}

// sameValue compares a decoded value with what an edit set.
func sameValue(got, want any) bool {
	switch w := want.(type) {
	case time.Time:
		switch g := got.(type) {
		case time.Time:
			return g.Equal(w)
		case string:
			tm, err := ParseTime(g)
			return err == nil && tm.Equal(w)
		}
		return false
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range g {
			if g[i] != w[i] {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}

// sameMeaning compares two value nodes by what they mean: kind, resolved tag
// and scalar text, through aliases. It is written apart from nodeEqual so
// that a bug in one does not hide in the other.
func sameMeaning(a, b *yaml.Node) bool {
	budget := 1 << 17
	var walk func(a, b *yaml.Node, depth int) bool
	walk = func(a, b *yaml.Node, depth int) bool {
		if budget--; depth > 100 || budget < 0 {
			return false // too large to compare: nodeEqual gives up sooner
		}
		for a != nil && a.Kind == yaml.AliasNode {
			a = a.Alias
		}
		for b != nil && b.Kind == yaml.AliasNode {
			b = b.Alias
		}
		if a == nil || b == nil {
			return a == b
		}
		if a.Kind != b.Kind || a.ShortTag() != b.ShortTag() || len(a.Content) != len(b.Content) {
			return false
		}
		if a.Kind == yaml.ScalarNode && a.Value != b.Value {
			return false
		}
		for i := range a.Content {
			if !walk(a.Content[i], b.Content[i], depth+1) {
				return false
			}
		}
		return true
	}
	return walk(a, b, 0)
}

// FuzzMergeText: no panics, and a side that did not change never wins over
// one that did.
func FuzzMergeText(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n", "a\nb\nC\n")
	f.Add("", "x\n", "y\n")
	f.Add("a\nb", "a\nb\nc", "z\na\nb")
	f.Add("a\r\nb\r\n", "a\r\nb\r\nc\r\n", "a\r\n")
	f.Fuzz(func(t *testing.T, b, o, x string) {
		MergeText(b, o, x)
		if got, ok := MergeText(b, b, x); !ok || got != x {
			t.Fatalf("MergeText(b, b, t) = %q, %v; want t = %q", got, ok, x)
		}
		if got, ok := MergeText(b, o, b); !ok || got != o {
			t.Fatalf("MergeText(b, o, b) = %q, %v; want o = %q", got, ok, o)
		}
		if got, ok := MergeText(b, x, x); !ok || got != x {
			t.Fatalf("MergeText(b, x, x) = %q, %v; want x = %q", got, ok, x)
		}
		// Edits on either side of an unchanged separator always merge:
		// base B1+S+B2, ours O+S+B2, theirs B1+S+X gives O+S+X.
		const sep = "\x01=== separator ===\x01\n"
		if strings.Contains(b+o+x, "\x01") {
			return
		}
		line := func(s string) string {
			if s != "" && !strings.HasSuffix(s, "\n") {
				return s + "\n"
			}
			return s
		}
		b1, b2, o1, x2 := line(b), line(b), line(o), line(x)
		got, ok := MergeText(b1+sep+b2, o1+sep+b2, b1+sep+x2)
		if want := o1 + sep + x2; !ok || got != want {
			t.Fatalf("disjoint edits: MergeText = %q, %v; want %q", got, ok, want)
		}
	})
}

// FuzzFeedbackText: whatever markdown a reviewer's notes, an issue's text
// or a response hold (setext and ATX headings of every level, thematic
// breaks, code fences left open, HTML comments and blocks, orch's own
// headings and markers, CRLF), a round added to a task reads back with the
// same structure, and the rounds and sections after it survive.
func FuzzFeedbackText(f *testing.F) {
	for _, s := range []string{
		"Summary\n-------\nThe round ends here?",
		"Summary\n===\n",
		"# Title\n## Review Feedback (rejection #9)\n### From someone (2026-01-01T00:00:00Z)\n",
		"```\nunclosed fence\n## Context",
		"~~~~\n# in a fence\n~~~",
		"<!-- github-review: 32 -->\n<!-- unclosed comment",
		"<script>\nvar x;\n",
		"---\n***\n___\n",
		"- [ ] **R2.9** CRITICAL `x.go:1` — a fake issue\n  - Response: FIXED (abcdef1) — a fake response",
		"Verdict: APPROVED\r\nline\r\n====\r\n",
		"   ## indented heading\n    ## code\n",
	} {
		f.Add(s, "Problem text.\n"+s, "fixed it "+s)
	}
	base := "---\nid: T-fuzz01\ntitle: Fuzz\nqueue: provisional\n---\n# Fuzz\n\n" +
		"## Review Feedback (rejection #1)\n\n### From lead via orch reject (2026-02-06T16:35:00Z)\n\nOld round.\n\n" +
		"## Context\n\nKeep me.\n"
	f.Fuzz(func(t *testing.T, notes, problem, response string) {
		for _, s := range []string{notes, problem, response} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > 4096 {
				return // refused before it gets here (orch review, ghreview)
			}
		}
		file, err := Parse("fuzz.md", []byte(base))
		if err != nil {
			t.Fatal(err)
		}
		when := time.Date(2026, 2, 7, 10, 0, 0, 0, time.UTC)
		round := Round{Number: 2, Verdict: "CHANGES_REQUESTED", Sources: []Source{{
			From: "lead via orch review", Time: when, Text: notes,
			Issues: []Issue{{ID: "R2.1", Severity: "HIGH", Blocking: true, Title: "Checked", Problem: problem,
				Responses: []Response{{Status: "FIXED", Text: response}}}},
		}}}
		out, err := file.AddRound(round)
		if err != nil {
			t.Fatalf("AddRound: %v", err)
		}
		back, err := Parse("fuzz.md", out.Src)
		if err != nil {
			t.Fatalf("the file does not parse after AddRound: %v\n%s", err, out.Src)
		}
		rounds := back.FeedbackRounds()
		if len(rounds) != 2 || rounds[0].Number != 2 || rounds[1].Number != 1 {
			t.Fatalf("rounds read back: %+v\n%s", rounds, out.Src)
		}
		r := rounds[0]
		if r.Verdict != "CHANGES_REQUESTED" || len(r.Sources) != 1 || r.Sources[0].From != "lead via orch review" {
			t.Fatalf("round read back: %+v\n%s", r, out.Src)
		}
		is := r.Sources[0].Issues
		if len(is) != 1 || is[0].ID != "R2.1" || is[0].Severity != "HIGH" || !is[0].Blocking || is[0].Resolved || len(is[0].Responses) != 1 || is[0].Responses[0].Status != "FIXED" {
			t.Fatalf("issues read back: %+v\n%s", is, out.Src)
		}
		if len(rounds[1].Sources) != 1 || rounds[1].Sources[0].Text != "Old round." {
			t.Fatalf("the older round read back: %+v\n%s", rounds[1], out.Src)
		}
		found := false
		for _, sec := range back.Sections() {
			if sec.Level == 2 && sec.Title == "Context" && strings.TrimSpace(back.SectionText(sec)) == "Keep me." {
				found = true
			}
		}
		if !found {
			t.Fatalf("## Context did not survive:\n%s", out.Src)
		}
	})
}
