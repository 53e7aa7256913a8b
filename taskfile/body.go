package taskfile

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// Section is a heading of the body and the text under it, as byte offsets
// into File.Src. A section ends where the next heading of the same or a
// higher level starts.
type Section struct {
	Level       int    `json:"level"`
	Title       string `json:"title"`
	Start       int    `json:"-"` // start of the heading line
	HeadingEnd  int    `json:"-"` // after the heading line(s)
	End         int    `json:"-"`
	StartLine   int    `json:"line"`
	ContentText string `json:"-"`
}

// blockParser reads the block structure of markdown only. Headings need
// nothing more, and inline parsing (links, emphasis, code spans) is where a
// hostile body costs quadratic time (a long run of "[a](", for one).
var blockParser = parser.NewParser(
	parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
)

// maxNesting bounds the container prefix (quote markers, list markers and
// indentation) of a body line that Sections hands to the markdown parser,
// whose cost grows with the square of the nesting (a long line of ">"). Bodies with deeper lines are read by a line scan instead.
const maxNesting = 256

// Sections lists the top-level headings of the body in order. Headings inside
// code blocks, lists or quotes are text, not sections, which is why this uses
// a markdown parser rather than a line scan (except for pathologically deep
// bodies, see maxNesting). Every caller gets the same slice: read it, do not
// change it.
func (f *File) Sections() []Section {
	f.sectionsOnce.Do(func() { f.sections = f.readSections() })
	return f.sections
}

func (f *File) readSections() []Section {
	body := f.Body()
	if deeplyNested(body) {
		return f.finishSections(scanSections(f, body))
	}
	doc := blockParser.Parse(text.NewReader(body))
	lc := lineCounter{src: f.Src, line: 1}
	var out []Section
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok {
			continue
		}
		pos := h.Pos()
		if pos < 0 || pos > len(body) {
			continue
		}
		start := bytes.LastIndexByte(body[:pos], '\n') + 1
		end := lineEndIn(body, pos)
		var title strings.Builder
		lines := h.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			if i > 0 {
				title.WriteByte(' ')
			}
			title.Write(bytes.TrimSpace(seg.Value(body)))
			if seg.Stop > end {
				end = lineEndIn(body, seg.Stop-1)
			}
		}
		if lines.Len() > 0 && isSetextUnderline(body, end) {
			end = lineEndIn(body, end)
		}
		out = append(out, Section{
			Level:      h.Level,
			Title:      strings.TrimSpace(title.String()),
			Start:      f.bodyStart + start,
			HeadingEnd: f.bodyStart + end,
			StartLine:  lc.at(f.bodyStart + start),
		})
	}
	return f.finishSections(out)
}

// finishSections sets where each section ends and its text.
func (f *File) finishSections(out []Section) []Section {
	for i := range out {
		out[i].End = len(f.Src)
		for j := i + 1; j < len(out); j++ {
			if out[j].Level <= out[i].Level {
				out[i].End = out[j].Start
				break
			}
		}
		out[i].ContentText = string(f.Src[out[i].HeadingEnd:out[i].End])
	}
	return out
}

// deeplyNested reports whether a line of body starts with a container
// prefix longer than maxNesting bytes.
func deeplyNested(body []byte) bool {
	n := 0
	start := true
	for _, c := range body {
		switch {
		case c == '\n':
			n, start = 0, true
		case !start:
		case c == ' ' || c == '\t' || c == '>' || c == '-' || c == '*' || c == '+' || c == '.' || c == ')' || c >= '0' && c <= '9':
			if n++; n > maxNesting {
				return true
			}
		default:
			start = false
		}
	}
	return false
}

// scanSections finds the ATX headings ("## Title") of body that stand
// outside fenced code blocks, line by line: the reading of Sections for
// bodies too deeply nested to parse as markdown.
func scanSections(f *File, body []byte) []Section {
	var out []Section
	var fence []byte
	lc := lineCounter{src: f.Src, line: 1}
	for pos := 0; pos < len(body); {
		end := lineEndIn(body, pos)
		line := bytes.TrimRight(body[pos:end], "\r\n")
		trimmed := bytes.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		switch {
		case indent > 3:
		case fence != nil:
			if bytes.HasPrefix(trimmed, fence) && len(bytes.Trim(trimmed, string(fence[:1])+" \t")) == 0 {
				fence = nil
			}
		case bytes.HasPrefix(trimmed, []byte("```")) || bytes.HasPrefix(trimmed, []byte("~~~")):
			n := len(trimmed) - len(bytes.TrimLeft(trimmed, string(trimmed[:1])))
			fence = trimmed[:n]
		case len(trimmed) > 0 && trimmed[0] == '#':
			level := len(trimmed) - len(bytes.TrimLeft(trimmed, "#"))
			rest := trimmed[level:]
			if level > 6 || len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
				break
			}
			title := bytes.TrimSpace(rest)
			if t := bytes.TrimRight(title, "#"); len(t) == 0 || t[len(t)-1] == ' ' || t[len(t)-1] == '\t' {
				title = bytes.TrimSpace(t)
			}
			out = append(out, Section{Level: level, Title: string(title), Start: f.bodyStart + pos, HeadingEnd: f.bodyStart + end,
				StartLine: lc.at(f.bodyStart + pos)})
		}
		pos = end
	}
	return out
}

// lineCounter gives the 1-based lines of increasing offsets in src in time
// linear in the size of src (lineOf for each would be quadratic).
type lineCounter struct {
	src       []byte
	off, line int
}

func (c *lineCounter) at(off int) int {
	if off < c.off {
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.src[c.off:off], []byte{'\n'})
	c.off = off
	return c.line
}

// SectionText returns the text under a section (without its heading line).
func (f *File) SectionText(s Section) string { return string(f.Src[s.HeadingEnd:s.End]) }

func lineEndIn(b []byte, pos int) int {
	if pos >= len(b) {
		return len(b)
	}
	if i := bytes.IndexByte(b[pos:], '\n'); i >= 0 {
		return pos + i + 1
	}
	return len(b)
}

func isSetextUnderline(b []byte, pos int) bool {
	if pos >= len(b) {
		return false
	}
	line := bytes.TrimSpace(b[pos:lineEndIn(b, pos)])
	if len(line) == 0 {
		return false
	}
	c := line[0]
	return (c == '=' || c == '-') && len(bytes.Trim(line, string(c))) == 0
}

// AfterTitle is the offset just after the body's leading "# Title" heading,
// or the start of the body when it does not start with one. New review
// feedback goes here, so that agents and people read it first.
func (f *File) AfterTitle() int {
	secs := f.Sections()
	body := f.Body()
	first := bytes.TrimLeft(body, " \t\r\n")
	// The start of the first non-blank line: a heading may be indented.
	lead := bytes.LastIndexByte(body[:len(body)-len(first)], '\n') + 1
	if len(secs) > 0 && secs[0].Level == 1 && secs[0].Start-f.bodyStart == lead {
		return secs[0].HeadingEnd
	}
	return f.bodyStart
}

// Insert puts a markdown block at off, separated from its neighbours by one
// blank line, and returns the new file. Nothing else in the file changes.
func (f *File) Insert(off int, block string) (*File, error) {
	if off < f.bodyStart || off > len(f.Src) {
		off = f.bodyStart
	}
	// A CRLF body stays CRLF.
	nl := "\n"
	if bytes.Contains(f.Body(), []byte("\r\n")) {
		nl = "\r\n"
	}
	block = strings.Trim(strings.ReplaceAll(block, "\r\n", "\n"), "\n")
	block = strings.ReplaceAll(block, "\n", nl)
	before := f.Src[:off]
	after := f.Src[off:]
	var b strings.Builder
	if off > f.bodyStart || off > 0 {
		switch {
		case bytes.HasSuffix(before, []byte(nl+nl)) || len(before) == 0:
		case bytes.HasSuffix(before, []byte("\n")):
			b.WriteString(nl)
		default:
			b.WriteString(nl + nl)
		}
	}
	b.WriteString(block)
	b.WriteString(nl)
	if len(bytes.TrimSpace(after)) > 0 && !bytes.HasPrefix(after, []byte(nl)) {
		b.WriteString(nl)
	}
	return f.Replace(off, off, []byte(b.String()))
}

// Replace swaps Src[start:end] (which must lie in the body) for repl.
func (f *File) Replace(start, end int, repl []byte) (*File, error) {
	if start < f.bodyStart || end > len(f.Src) || start > end {
		return nil, &EditError{Path: f.Path, Key: "body", Msg: "range outside the body"}
	}
	src := make([]byte, 0, len(f.Src)-(end-start)+len(repl))
	src = append(src, f.Src[:start]...)
	src = append(src, repl...)
	src = append(src, f.Src[end:]...)
	return Parse(f.Path, src)
}

// WithBody returns the file with its body replaced.
func (f *File) WithBody(body []byte) (*File, error) {
	return f.Replace(f.bodyStart, len(f.Src), body)
}
