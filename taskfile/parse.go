package taskfile

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/adrg/frontmatter"
	"github.com/orch-tool/orch/internal/lazyregexp"
	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds what orch will parse. Larger files are refused with a
// clear message instead of costing unbounded time and memory.
const MaxFileSize = 1 << 20

// MaxText bounds one text that a verb writes into the state branch (a
// message, a task's body, a field of a review or of a refusal, a GitHub
// review's body), in bytes of UTF-8 as given, whichever door it comes
// through (the command line, orch mcp, the board): every agent reads a task
// file whole, and a text larger than this is a log or a file pasted where a
// reference to it belongs. A hand edit is bounded by MaxFileSize.
const MaxText = 64 << 10

// File is a parsed task file. Src is never modified in place: edits return a
// new File built from new bytes.
type File struct {
	Path string
	Src  []byte
	Task Task

	hasFM     bool
	openLine  int // 1-based file line of the opening delimiter
	fmStart   int // first byte of the YAML text
	fmEnd     int // end of the YAML text (start of the closing delimiter line)
	bodyStart int
	root      *yaml.Node // top-level mapping, nil when the block is empty
	fields    []field
	lines     []int // byte offsets of the starts of YAML lines, relative to Src

	// A File does not change once parsed (edits make a new one), so its
	// sections are read once: one command asks for them several times
	// (rounds, the title, where to insert), and a large body costs a slow
	// markdown parse each time.
	sectionsOnce sync.Once
	sections     []Section
}

// Body returns the markdown after the frontmatter.
func (f *File) Body() []byte { return f.Src[f.bodyStart:] }

// BodyOffset is the byte offset of the body within Src.
func (f *File) BodyOffset() int { return f.bodyStart }

// HasFrontmatter reports whether the file starts with a --- block.
func (f *File) HasFrontmatter() bool { return f.hasFM }

// Keys returns the top-level frontmatter keys in file order.
func (f *File) Keys() []string {
	keys := make([]string, len(f.fields))
	for i, fl := range f.fields {
		keys[i] = fl.key
	}
	return keys
}

// Has reports whether the frontmatter has key.
func (f *File) Has(key string) bool { return f.field(key) != nil }

// Raw returns the value of key as written in the file.
func (f *File) Raw(key string) (string, bool) {
	fl := f.field(key)
	if fl == nil {
		return "", false
	}
	return string(f.Src[fl.valStart:fl.valEnd]), true
}

// Line returns the 1-based file line of key, or 0.
func (f *File) Line(key string) int {
	if fl := f.field(key); fl != nil {
		return f.fileLine(fl.keyNode.Line)
	}
	return 0
}

// Node returns the YAML value node of key.
func (f *File) Node(key string) *yaml.Node {
	if fl := f.field(key); fl != nil {
		return fl.valNode
	}
	return nil
}

func (f *File) field(key string) *field {
	for i := range f.fields {
		if f.fields[i].key == key {
			return &f.fields[i]
		}
	}
	return nil
}

type yamlCapture struct{ data []byte }

// Parse reads a task file. It never panics; a file it cannot read gives a
// *ParseError naming the line.
func Parse(path string, src []byte) (f *File, err error) {
	defer func() {
		// The YAML library has had panics on hostile input; a task file
		// must never crash orch.
		if r := recover(); r != nil {
			f, err = nil, &ParseError{Path: path, Msg: fmt.Sprintf("unreadable frontmatter (%v)", r)}
		}
	}()
	if len(src) > MaxFileSize {
		return nil, &ParseError{Path: path, Msg: fmt.Sprintf("file is %d bytes; the limit is %d (%d MiB) for a task file", len(src), MaxFileSize, MaxFileSize>>20), Err: ErrTooLarge}
	}
	if bytes.IndexByte(src, 0) >= 0 {
		return nil, &ParseError{Path: path, Line: lineOf(src, bytes.IndexByte(src, 0)), Msg: "file contains a NUL byte"}
	}
	if !utf8.Valid(src) {
		return nil, &ParseError{Path: path, Line: lineOf(src, firstInvalidUTF8(src)), Msg: "file is not valid UTF-8"}
	}
	f = &File{Path: path, Src: src}
	if err := f.splitFrontmatter(); err != nil {
		return nil, err
	}
	if f.hasFM {
		if err := f.parseYAML(); err != nil {
			return nil, err
		}
	}
	if err := f.decodeTask(); err != nil {
		return nil, err
	}
	return f, nil
}

const byteOrderMark = "\ufeff"

func (f *File) splitFrontmatter() error {
	// Find the opening delimiter ourselves to know its offset; adrg/frontmatter
	// decides where the block ends and what the body is. A byte order mark
	// (some editors on Windows save one) stays where it is, before the
	// opening delimiter.
	start := 0
	if bytes.HasPrefix(f.Src, []byte(byteOrderMark)) {
		start = len(byteOrderMark)
	}
	pos, line := start, 1
	for pos < len(f.Src) {
		end := bytes.IndexByte(f.Src[pos:], '\n')
		next := len(f.Src)
		if end >= 0 {
			next = pos + end + 1
		}
		t := bytes.TrimSpace(f.Src[pos:next])
		if len(t) == 0 {
			pos, line = next, line+1
			continue
		}
		if string(t) != "---" {
			f.bodyStart = 0
			return nil
		}
		f.openLine = line
		f.fmStart = next
		break
	}
	if f.fmStart == 0 {
		return nil
	}
	var capture yamlCapture
	format := frontmatter.NewFormat("---", "---", func(data []byte, v any) error {
		v.(*yamlCapture).data = append([]byte(nil), data...)
		return nil
	})
	rest, err := frontmatter.MustParse(bytes.NewReader(f.Src[start:]), &capture, format)
	if err == frontmatter.ErrNotFound {
		return &ParseError{Path: f.Path, Line: f.openLine, Msg: "frontmatter starts with --- but has no closing --- line"}
	}
	if err != nil {
		return &ParseError{Path: f.Path, Line: f.openLine, Msg: err.Error()}
	}
	f.fmEnd = f.fmStart + len(capture.data)
	f.bodyStart = len(f.Src) - len(rest)
	if f.fmEnd > len(f.Src) || !bytes.Equal(f.Src[f.fmStart:f.fmEnd], capture.data) || f.bodyStart < f.fmEnd {
		return &ParseError{Path: f.Path, Line: f.openLine, Msg: "cannot locate the frontmatter block"}
	}
	f.hasFM = true
	return nil
}

var yamlLineRE = lazyregexp.New(`^yaml: line (\d+): (.*)$`)

func (f *File) parseYAML() error {
	text := f.Src[f.fmStart:f.fmEnd]
	f.lines = yamlLineStarts(f.Src, f.fmStart, f.fmEnd)
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return f.yamlError(err)
	}
	// yaml.Unmarshal reads the first document only: text after a "..."
	// or "--- x" line would be silently ignored.
	if bytes.Contains(text, []byte("\n...")) || bytes.Contains(text, []byte("\n---")) || bytes.HasPrefix(text, []byte("...")) || bytes.Contains(text, []byte("\n%")) {
		dec := yaml.NewDecoder(bytes.NewReader(text))
		var first, extra yaml.Node
		if dec.Decode(&first) == nil && dec.Decode(&extra) != io.EOF {
			return &ParseError{Path: f.Path, Line: f.secondDocumentLine(), Msg: "frontmatter: a second YAML document starts here; a task file has one (remove this line, or move what follows into the body)"}
		}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil // empty frontmatter
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return &ParseError{Path: f.Path, Line: f.fileLine(root.Line), Msg: "frontmatter must be a mapping of keys to values"}
	}
	if root.Style&yaml.FlowStyle != 0 {
		return &ParseError{Path: f.Path, Line: f.fileLine(root.Line), Msg: "frontmatter must use block style (one key per line), not {...}"}
	}
	f.root = root
	seen := make(map[string]*yaml.Node, len(root.Content)/2)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return &ParseError{Path: f.Path, Line: f.fileLine(k.Line), Msg: "frontmatter keys must be plain strings"}
		}
		// YAML forbids a key twice; reading one copy and editing the other
		// would make edits silently ineffective.
		if prev, dup := seen[k.Value]; dup {
			return &ParseError{Path: f.Path, Line: f.fileLine(k.Line), Msg: fmt.Sprintf("frontmatter: key %q appears twice (first on line %d); keep one", k.Value, f.fileLine(prev.Line))}
		}
		seen[k.Value] = k
		f.fields = append(f.fields, field{key: k.Value, keyNode: k, valNode: v})
	}
	return f.computeSpans()
}

func (f *File) yamlError(err error) error {
	msg := err.Error()
	first := strings.SplitN(msg, "\n", 2)[0]
	if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
		first = "yaml: " + strings.TrimPrefix(strings.TrimSpace(te.Errors[0]), "yaml: ")
	}
	line := 0
	if m := yamlLineRE().FindStringSubmatch(first); m != nil {
		line, _ = strconv.Atoi(m[1])
		first = m[2]
	} else {
		first = strings.TrimPrefix(first, "yaml: ")
	}
	// The YAML library reports some errors at the start of the enclosing
	// construct, sometimes counted from 0. The first line at which the text
	// stops parsing is where a person has to look.
	if n := f.firstFailingLine(); n > 0 {
		line = n
	}
	return &ParseError{Path: f.Path, Line: f.openLine + line, Msg: "frontmatter: " + first}
}

// secondDocumentLine returns the file line of the first "...", "---" or "%"
// line of the frontmatter: where YAML ends the first document.
func (f *File) secondDocumentLine() int {
	for i := range f.lines {
		t := f.lineText(i)
		if bytes.HasPrefix(t, []byte("%")) ||
			(bytes.HasPrefix(t, []byte("...")) || bytes.HasPrefix(t, []byte("---"))) && (len(t) == 3 || t[3] == ' ' || t[3] == '\t') {
			return f.fileLine(i + 1)
		}
	}
	return f.openLine
}

// firstFailingLine returns the 1-based line of the YAML text from which the
// text stops parsing for good: the line after the longest run of whole lines
// that still parses (0 when the text parses or is too long to search). The
// first prefix that fails is not it: a prefix that ends inside a valid
// multi-line [...] or quoted value fails too.
func (f *File) firstFailingLine() int {
	text := f.Src[f.fmStart:f.fmEnd]
	var ends []int // end of each line, after its break
	for end := 0; end < len(text); {
		nl := bytes.IndexByte(text[end:], '\n')
		if nl < 0 {
			end = len(text)
		} else {
			end += nl + 1
		}
		ends = append(ends, end)
	}
	var n yaml.Node
	if len(ends) == 0 || yaml.Unmarshal(text, &n) == nil {
		return 0
	}
	budget := 4 << 20 // bytes of YAML to parse before giving up
	for i := len(ends) - 1; i >= 1; i-- {
		if budget -= ends[i-1]; budget < 0 {
			return 0
		}
		var n yaml.Node
		if yaml.Unmarshal(text[:ends[i-1]], &n) == nil {
			return i + 1
		}
	}
	return 1
}

// decodeTask fills f.Task from the known keys. Type problems are reported
// with the key's line; unknown keys are ignored.
func (f *File) decodeTask() error {
	t := &f.Task
	for i := range f.fields {
		fl := &f.fields[i]
		v := resolveAlias(fl.valNode)
		bad := func(format string, a ...any) error {
			return &ParseError{Path: f.Path, Line: f.fileLine(fl.keyNode.Line), Msg: fmt.Sprintf("%s: ", fl.key) + fmt.Sprintf(format, a...)}
		}
		switch fl.key {
		case KeyID, KeyTitle, KeyRole, KeyBranch, KeyBaseBranch, KeyClaimedBy, KeySubmittedBy, KeyAssignedTo, KeyRejectedAt, KeyReviewBy,
			KeyApprovedAtSHA, KeyLandedCommit, KeyCheckedCommit:
			s, ok := scalarString(v)
			if !ok {
				return bad("must be a single value")
			}
			switch fl.key {
			case KeyID:
				t.ID = s
			case KeyTitle:
				t.Title = s
			case KeyRole:
				t.Role = s
			case KeyBranch:
				t.Branch = s
			case KeyBaseBranch:
				t.BaseBranch = s
			case KeyClaimedBy:
				t.ClaimedBy = s
			case KeySubmittedBy:
				t.SubmittedBy = s
			case KeyAssignedTo:
				t.AssignedTo = s
			case KeyRejectedAt:
				t.RejectedAt = s
			case KeyReviewBy:
				t.ReviewClaimedBy = s
			case KeyApprovedAtSHA:
				t.ApprovedCommit = s
			case KeyLandedCommit:
				t.LandedCommit = s
			case KeyCheckedCommit:
				t.CheckedCommit = s
			}
		case KeyQueue:
			s, ok := scalarString(v)
			if !ok {
				return bad("must be a single value")
			}
			t.Queue = Queue(s)
		case KeyPriority:
			s, ok := scalarString(v)
			if !ok {
				return bad("must be a single value")
			}
			// Task.Priority is normalised; a value that is not a
			// priority stays as written for Validate to report.
			if p, ok := NormalizePriority(s); ok {
				s = p
			}
			t.Priority = s
		case KeyPRNumber, KeyRejectionCount, KeyNoProgress, KeyAttempts, KeyCrashes, KeyReviewCount, KeyLandFailures:
			s, ok := scalarString(v)
			if !ok {
				return bad("must be a number")
			}
			n := 0
			if s != "" {
				var err error
				n, err = strconv.Atoi(s)
				if err != nil || n < 0 {
					return bad("must be a whole number ≥ 0, not %q", s)
				}
			}
			switch fl.key {
			case KeyPRNumber:
				t.PRNumber = n
			case KeyRejectionCount:
				t.RejectionCount = n
			case KeyNoProgress:
				t.NoProgress = n
			case KeyAttempts:
				t.Attempts = n
			case KeyCrashes:
				t.Crashes = n
			case KeyReviewCount:
				t.ReviewAttempts = n
			case KeyLandFailures:
				t.LandFailures = n
			}
		case KeyClaimedAt, KeySubmittedAt, KeyCreated, KeyHeartbeatAt, KeyReviewAt, KeyFinishedAt, KeyApprovedAt:
			s, ok := scalarString(v)
			if !ok {
				return bad("must be a time such as 2026-02-06T10:00:00Z")
			}
			var tm time.Time
			if s != "" {
				var err error
				tm, err = ParseTime(s)
				if err != nil {
					return bad("must be a time such as 2026-02-06T10:00:00Z, not %q", s)
				}
			}
			switch fl.key {
			case KeyClaimedAt:
				t.ClaimedAt = tm
			case KeyHeartbeatAt:
				t.HeartbeatAt = tm
			case KeyReviewAt:
				t.ReviewClaimedAt = tm
			case KeySubmittedAt:
				t.SubmittedAt = tm
			case KeyCreated:
				t.Created = tm
			case KeyFinishedAt:
				t.FinishedAt = tm
			case KeyApprovedAt:
				t.ApprovedAt = tm
			}
		case KeyLockedOut, KeyWorkedBy, KeyDependsOn, KeyLabels, KeyGitHubReviews:
			list, ok := stringList(v)
			if !ok {
				return bad("must be a list such as [a, b]")
			}
			switch fl.key {
			case KeyLockedOut:
				t.LockedOut = list
			case KeyWorkedBy:
				t.WorkedBy = list
			case KeyGitHubReviews:
				t.GitHubReviews = list
			case KeyDependsOn:
				t.DependsOn = list
			case KeyLabels:
				t.Labels = list
			}
		}
	}
	if t.Title == "" {
		t.Title = titleFromBody(f.Body())
	}
	if t.Priority == "" {
		t.Priority = DefaultPriority
	}
	return nil
}

// ParseTime accepts RFC 3339 and the shorter forms people type by hand.
func ParseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02T15:04Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %q", s)
}

// FormatTime is the one time format orch writes: RFC 3339 in UTC, with
// milliseconds when there are any (claim order breaks ties by age, and tasks
// made in a script are seconds apart at most).
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.999Z07:00") }

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func scalarString(n *yaml.Node) (string, bool) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return "", false
	}
	if n.Tag == "!!null" {
		return "", true
	}
	return n.Value, true
}

func stringList(n *yaml.Node) ([]string, bool) {
	if n == nil {
		return nil, true
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" || n.Value == "" {
			return nil, true
		}
		return []string{n.Value}, true
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			s, ok := scalarString(resolveAlias(c))
			if !ok {
				return nil, false
			}
			if s != "" {
				out = append(out, s)
			}
		}
		return out, true
	}
	return nil, false
}

// titleFromBody returns the text of the first level-1 ATX heading near the
// top of the body. A cheap scan: the summary path must not run a markdown
// parser over every file.
func titleFromBody(body []byte) string {
	for i := 0; i < 20 && len(body) > 0; i++ {
		line := body
		if j := bytes.IndexByte(body, '\n'); j >= 0 {
			line, body = body[:j], body[j+1:]
		} else {
			body = nil
		}
		t := strings.TrimSpace(string(line))
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "# ") {
			return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t[2:]), "#"))
		}
		return ""
	}
	return ""
}

func lineOf(src []byte, off int) int {
	if off < 0 {
		return 0
	}
	return bytes.Count(src[:off], []byte{'\n'}) + 1
}

func firstInvalidUTF8(src []byte) int {
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
