package taskfile

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

type sec struct {
	level int
	title string
	line  int
}

func sectionsOf(f *File) []sec {
	var out []sec
	for _, s := range f.Sections() {
		out = append(out, sec{s.Level, s.Title, s.StartLine})
	}
	return out
}

func TestSections(t *testing.T) {
	for _, c := range []struct {
		name string
		src  string
		want []sec
	}{
		{"design example", designExample, []sec{
			{1, "Snap fork start like the other shapes", 17},
			{2, "Review Feedback (rejection #1)", 19},
			{3, "From GitHub PR review by alice (2026-02-06T16:30:00Z)", 21},
			{3, "From lead via orch reject (2026-02-06T16:35:00Z)", 28},
			{2, "Context", 32},
			{2, "Acceptance Criteria", 34},
		}},
		{"headings in code are text", lines("---", "id: x", "---",
			"# Title",
			"```markdown",
			"# not a heading",
			"## nor this",
			"```",
			"~~~",
			"# in a tilde fence",
			"~~~",
			"",
			"    # indented code",
			"",
			"> # in a quote",
			"",
			"- # in a list",
			"",
			"<div>",
			"# in html",
			"</div>",
			"",
			"## Real"), []sec{{1, "Title", 4}, {2, "Real", 23}}},
		{"unclosed fence", lines("---", "id: x", "---", "# T", "```", "# inside", "## inside"), []sec{{1, "T", 4}}},
		{"setext headings", lines("---", "id: x", "---",
			"Title",
			"=====",
			"",
			"Two line",
			"heading",
			"---",
			"",
			"text"), []sec{{1, "Title", 4}, {2, "Two line heading", 7}}},
		{"closing hashes and spacing", lines("---", "id: x", "---", "#   Spaced   #####", "   ## Indented", "#"), []sec{{1, "Spaced", 4}, {2, "Indented", 5}, {1, "", 6}}},
		{"not headings", lines("---", "id: x", "---", "#no space", "####### seven", "\\# escaped"), nil},
		{"no frontmatter", "# A\n\n## B\n", []sec{{1, "A", 1}, {2, "B", 3}}},
		{"crlf", "---\r\nid: x\r\n---\r\n# T\r\n\r\n## A\r\ntext\r\n", []sec{{1, "T", 4}, {2, "A", 6}}},
		{"empty body", "---\nid: x\n---\n", nil},
	} {
		f := mustParse(t, c.src)
		got := sectionsOf(f)
		if len(got)+len(c.want) > 0 && !equalSecs(got, c.want) {
			t.Errorf("%s: Sections =\n%v\nwant\n%v", c.name, got, c.want)
		}
	}
}

func equalSecs(a, b []sec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSectionText: a section runs to the next heading of the same or a
// higher level, and holds its subsections.
func TestSectionText(t *testing.T) {
	f := mustParse(t, designExample)
	secs := f.Sections()
	byTitle := map[string]Section{}
	for _, s := range secs {
		byTitle[s.Title] = s
	}
	fb := byTitle["Review Feedback (rejection #1)"]
	text := f.SectionText(fb)
	if !strings.HasPrefix(text, "\n### From GitHub PR review by alice") || !strings.HasSuffix(text, "push to existing branch.\n\n") {
		t.Errorf("feedback section text = %q", text)
	}
	if text != fb.ContentText {
		t.Error("ContentText differs from SectionText")
	}
	if got := string(f.Src[fb.Start:fb.HeadingEnd]); got != "## Review Feedback (rejection #1)\n" {
		t.Errorf("heading bytes = %q", got)
	}
	ctx := byTitle["Context"]
	if got := f.SectionText(ctx); got != "...\n" {
		t.Errorf("Context text = %q", got)
	}
	last := secs[len(secs)-1]
	if last.End != len(f.Src) || f.SectionText(last) != "- [ ] ...\n" {
		t.Errorf("last section = %+v", last)
	}
	title := secs[0]
	if title.End != len(f.Src) {
		t.Errorf("the level-1 section ends at %d, not the end of the file", title.End)
	}
	// Setext: the underline belongs to the heading.
	f = mustParse(t, "---\nid: x\n---\nTitle\n=====\nbody\n")
	s := f.Sections()[0]
	if got := string(f.Src[s.Start:s.HeadingEnd]); got != "Title\n=====\n" || f.SectionText(s) != "body\n" {
		t.Errorf("setext heading %q, text %q", got, f.SectionText(s))
	}
}

func TestAfterTitle(t *testing.T) {
	for _, c := range []struct {
		name  string
		src   string
		after string // the text before AfterTitle
	}{
		{"title", "---\nid: x\n---\n# T\n\n## A\n", "---\nid: x\n---\n# T\n"},
		{"blank lines first", "---\nid: x\n---\n\n\n# T\nbody\n", "---\nid: x\n---\n\n\n# T\n"},
		{"indented title", "---\nid: x\n---\n   # T\nx\n", "---\nid: x\n---\n   # T\n"},
		{"setext title", "---\nid: x\n---\nT\n===\nbody\n", "---\nid: x\n---\nT\n===\n"},
		{"title without newline", "---\nid: x\n---\n# T", "---\nid: x\n---\n# T"},
		{"crlf", "---\r\nid: x\r\n---\r\n# T\r\nbody\r\n", "---\r\nid: x\r\n---\r\n# T\r\n"},
		{"no frontmatter", "# T\nbody\n", "# T\n"},
		{"no title", "---\nid: x\n---\ntext\n", "---\nid: x\n---\n"},
		{"level 2 first", "---\nid: x\n---\n## A\n# T\n", "---\nid: x\n---\n"},
		{"text before the title", "---\nid: x\n---\ntext\n\n# T\n", "---\nid: x\n---\n"},
		{"title in a fence", "---\nid: x\n---\n```\n# T\n```\n", "---\nid: x\n---\n"},
		{"empty body", "---\nid: x\n---\n", "---\nid: x\n---\n"},
	} {
		f := mustParse(t, c.src)
		if got := string(f.Src[:f.AfterTitle()]); got != c.after {
			t.Errorf("%s: text before AfterTitle = %q, want %q", c.name, got, c.after)
		}
	}
}

// TestInsertFeedback: a new review round goes right after the title line,
// above the older rounds, set off by one blank line; nothing else changes.
func TestInsertFeedback(t *testing.T) {
	f := mustParse(t, designExample)
	round := "## Review Feedback (rejection #2)\n\n### From lead via orch reject (2026-02-07T09:00:00Z)\n\nStill not snapping.\n"
	out, err := f.Insert(f.AfterTitle(), round)
	if err != nil {
		t.Fatal(err)
	}
	title := "# Snap fork start like the other shapes\n"
	want := strings.Replace(designExample, title+"\n", title+"\n"+round+"\n", 1)
	if string(out.Src) != want {
		t.Errorf("got\n%s\nwant\n%s", out.Src, want)
	}
	var titles []string
	for _, s := range out.Sections() {
		titles = append(titles, s.Title)
	}
	if titles[1] != "Review Feedback (rejection #2)" || titles[3] != "Review Feedback (rejection #1)" {
		t.Errorf("sections after insert: %q", titles)
	}
	if !reflect.DeepEqual(out.Task, f.Task) {
		t.Error("frontmatter changed")
	}
}

func TestInsert(t *testing.T) {
	const block = "## New\n\ntext\n"
	for _, c := range []struct {
		name, src, want string
	}{
		{"title then blank line", "---\nid: x\n---\n# T\n\n## Old\n", "---\nid: x\n---\n# T\n\n## New\n\ntext\n\n## Old\n"},
		{"title then heading", "---\nid: x\n---\n# T\n## Old\n", "---\nid: x\n---\n# T\n\n## New\n\ntext\n\n## Old\n"},
		{"title only", "---\nid: x\n---\n# T\n", "---\nid: x\n---\n# T\n\n## New\n\ntext\n"},
		{"title without newline", "---\nid: x\n---\n# T", "---\nid: x\n---\n# T\n\n## New\n\ntext\n"},
		{"no title", "---\nid: x\n---\nSome text.\n", "---\nid: x\n---\n\n## New\n\ntext\n\nSome text.\n"},
		{"empty body", "---\nid: x\n---\n", "---\nid: x\n---\n\n## New\n\ntext\n"},
		{"no frontmatter", "Some text.\n", "## New\n\ntext\n\nSome text.\n"},
		{"empty file", "", "## New\n\ntext\n"},
		{"crlf", "---\r\nid: x\r\n---\r\n# T\r\n\r\n## Old\r\n", "---\r\nid: x\r\n---\r\n# T\r\n\r\n## New\r\n\r\ntext\r\n\r\n## Old\r\n"},
	} {
		f := mustParse(t, c.src)
		out, err := f.Insert(f.AfterTitle(), block)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(out.Src) != c.want {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, out.Src, c.want)
		}
	}
	// Offsets outside the body mean the start of the body.
	f := mustParse(t, "---\nid: x\n---\nbody\n")
	for _, off := range []int{-1, 3, 1000} {
		out, err := f.Insert(off, "X")
		if err != nil || string(out.Src) != "---\nid: x\n---\n\nX\n\nbody\n" {
			t.Errorf("Insert(%d) = %q, %v", off, out.Src, err)
		}
	}
	// At the end of the body.
	out, err := f.Insert(len(f.Src), "X")
	if err != nil || string(out.Src) != "---\nid: x\n---\nbody\n\nX\n" {
		t.Errorf("Insert at the end = %q, %v", out.Src, err)
	}
}

func TestReplaceAndWithBody(t *testing.T) {
	f := mustParse(t, designExample)
	out, err := f.WithBody([]byte("# New\n"))
	if err != nil || string(out.Body()) != "# New\n" || !strings.HasPrefix(string(out.Src), designExample[:f.BodyOffset()]) {
		t.Fatalf("WithBody = %q, %v", out.Src, err)
	}
	if out.Task.Title != f.Task.Title {
		t.Errorf("title changed to %q", out.Task.Title)
	}
	for _, r := range [][2]int{{0, 10}, {f.BodyOffset() - 1, f.BodyOffset()}, {f.BodyOffset(), len(f.Src) + 1}, {f.BodyOffset() + 5, f.BodyOffset() + 2}} {
		_, err := f.Replace(r[0], r[1], []byte("x"))
		var ee *EditError
		if !errors.As(err, &ee) {
			t.Errorf("Replace(%d, %d) = %v, want an EditError", r[0], r[1], err)
		}
	}
	// A body that would end the frontmatter early cannot be written
	// without the file changing meaning, but the result still parses.
	g := mustParse(t, "# no frontmatter\n")
	out, err = g.WithBody([]byte("---\nid: x\n---\n"))
	if err != nil || !out.HasFrontmatter() {
		t.Errorf("WithBody with a frontmatter = %v, %v", out, err)
	}
}

// TestSectionsReadOnce: a File's sections are read once and shared (a
// command asks several times, and a 1 MiB body costs a markdown parse each
// time); an edit makes a new File, whose sections are its own.
func TestSectionsReadOnce(t *testing.T) {
	f := mustParse(t, designExample)
	first, again := f.Sections(), f.Sections()
	if len(first) == 0 || &first[0] != &again[0] {
		t.Fatal("Sections parsed the body again")
	}
	g, err := f.AddSection("## Note\n\nread first\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Sections(); len(got) != len(first)+1 || got[1].Title != "Note" {
		t.Errorf("the edited file's sections = %v, want the new one second", sectionsOf(g))
	}
	if got := f.Sections(); len(got) != len(first) {
		t.Error("editing changed the original's sections")
	}
}
