package taskfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Value is a frontmatter value orch writes: a string, a whole number, a time
// or a list of strings.
type Value struct {
	kind valueKind
	s    string
	n    int
	list []string
}

type valueKind int

const (
	kindString valueKind = iota
	kindInt
	kindTime
	kindList
)

func String(s string) Value       { return Value{kind: kindString, s: s} }
func Int(n int) Value             { return Value{kind: kindInt, n: n} }
func Time(t time.Time) Value      { return Value{kind: kindTime, s: FormatTime(t)} }
func List(items ...string) Value  { return Value{kind: kindList, list: append([]string{}, items...)} }
func ListOf(items []string) Value { return List(items...) }

// Edit is one change to one key: a Value to set, or a deletion.
type Edit struct {
	Key    string
	Value  Value
	Delete bool
}

// Set is an Edit that sets key to v.
func Set(key string, v Value) Edit { return Edit{Key: key, Value: v} }

// Unset is an Edit that removes key.
func Unset(key string) Edit { return Edit{Key: key, Delete: true} }

// Apply makes the edits in order and returns the new file. Every edit changes
// only the bytes of its key (or, when a key is new, adds one line) and is
// verified by parsing the result: all other keys must decode exactly as
// before.
func (f *File) Apply(edits ...Edit) (*File, error) {
	cur := f
	for _, e := range edits {
		var err error
		if e.Delete {
			cur, err = cur.unset(e.Key)
		} else {
			cur, err = cur.set(e.Key, e.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	return cur, nil
}

func (f *File) set(key string, v Value) (*File, error) {
	fl := f.field(key)
	if fl == nil {
		return f.insert(key, v)
	}
	if f.accepts(fl.valNode, v) {
		return f, nil // already that value: a file orch only reads is never rewritten
	}
	var repl []byte
	start, end := fl.valStart, fl.valEnd
	switch {
	case fl.valStart == fl.valEnd:
		start, end = fl.colonEnd, fl.colonEnd
		repl = []byte(" " + renderFlow(v))
	case v.kind == kindList && fl.valNode.Kind == yaml.SequenceNode && fl.valNode.Style&yaml.FlowStyle == 0 && len(v.list) > 0:
		ls := f.lines[f.lineIndex(fl.valStart)]
		indent := string(f.Src[ls:fl.valStart])
		items := make([]string, len(v.list))
		for i, it := range v.list {
			items[i] = "- " + renderScalar(it, yaml.Style(0), false)
		}
		repl = []byte(strings.Join(items, f.newline()+indent))
	case (fl.valNode.Kind == yaml.SequenceNode || fl.valNode.Kind == yaml.MappingNode) && fl.valNode.Style&yaml.FlowStyle == 0:
		// An empty block list becomes [] on the key's line, and a block
		// list or mapping that becomes a single value moves up there too
		// ("labels: x", not "labels:\n  x").
		start = fl.colonEnd
		end = fl.end
		for end > start && (f.Src[end-1] == '\n' || f.Src[end-1] == '\r') {
			end--
		}
		repl = []byte(" " + renderFlow(v))
	default:
		repl = []byte(renderAs(v, fl.valNode))
	}
	out, err := f.splice(start, end, repl, key, &v)
	if err == nil {
		return out, nil
	}
	// Fallback: rewrite the whole field on one line, keeping the key text.
	keyText := f.Src[fl.start : fl.colonEnd-1]
	line := append(append([]byte{}, keyText...), []byte(": "+renderFlow(v)+f.newline())...)
	if out, err2 := f.splice(fl.start, fl.end, line, key, &v); err2 == nil {
		return out, nil
	}
	return nil, &EditError{Path: f.Path, Key: key, Msg: "its value uses YAML features orch will not rewrite (anchors, tags or a complex key); change it by hand"}
}

func (f *File) unset(key string) (*File, error) {
	fl := f.field(key)
	if fl == nil {
		return f, nil
	}
	out, err := f.splice(fl.start, fl.end, nil, key, nil)
	if err != nil {
		return nil, &EditError{Path: f.Path, Key: key, Msg: "other keys refer to it; remove it by hand"}
	}
	return out, nil
}

func (f *File) insert(key string, v Value) (*File, error) {
	nl := "\n"
	if !f.hasFM {
		src := []byte("---" + nl + key + ": " + renderFlow(v) + nl + "---" + nl)
		src = append(src, f.Src...)
		out, err := Parse(f.Path, src)
		if err != nil || !bytes.Equal(out.Body(), f.Body()) || !out.accepts(out.Node(key), v) {
			return nil, &EditError{Path: f.Path, Key: key, Msg: "cannot add a frontmatter block to this file"}
		}
		return out, nil
	}
	nl = f.newline()
	pos := f.fmEnd
	indent := ""
	if len(f.fields) > 0 {
		// The first key's indentation (not the text before it: that
		// holds "? " for an explicit key).
		indent = strings.Repeat(" ", indentOf(f.lineText(f.lineIndex(f.fields[0].start))))
		pos = f.insertPos(key)
	}
	line := indent + key + ": " + renderFlow(v) + nl
	if pos > 0 && f.Src[pos-1] != '\n' && f.Src[pos-1] != '\r' {
		line = nl + line
	}
	out, err := f.splice(pos, pos, []byte(line), key, &v)
	if err != nil {
		return nil, &EditError{Path: f.Path, Key: key, Msg: "cannot add the key without disturbing the others"}
	}
	return out, nil
}

// insertPos places a new key after the last present key that comes before it
// in KeyOrder, else at the end of the block.
func (f *File) insertPos(key string) int {
	rank := indexOf(KeyOrder, key)
	if rank < 0 {
		return f.fields[len(f.fields)-1].end
	}
	best := -1
	for i := range f.fields {
		if r := indexOf(KeyOrder, f.fields[i].key); r >= 0 && r < rank {
			best = i
		}
	}
	if best < 0 {
		// Nothing orch knows comes before it: put it first.
		return f.fields[0].start
	}
	return f.fields[best].end
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func (f *File) newline() string {
	if bytes.Contains(f.Src[f.fmStart:f.fmEnd], []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// splice replaces Src[start:end] with repl and checks that the result parses
// with every other key unchanged and key set to want (or gone when want is
// nil).
func (f *File) splice(start, end int, repl []byte, key string, want *Value) (*File, error) {
	src := make([]byte, 0, len(f.Src)-(end-start)+len(repl))
	src = append(src, f.Src[:start]...)
	src = append(src, repl...)
	src = append(src, f.Src[end:]...)
	out, err := Parse(f.Path, src)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(out.Body(), f.Body()) {
		return nil, errVerify
	}
	// Same keys in the same order, apart from key, with the same values
	// (compared field by field: looking each key up by name is quadratic in
	// the number of keys, which a hostile file can make large).
	var before, after []*field
	for i := range f.fields {
		if f.fields[i].key != key {
			before = append(before, &f.fields[i])
		}
	}
	for i := range out.fields {
		if out.fields[i].key != key {
			after = append(after, &out.fields[i])
		}
	}
	if len(before) != len(after) {
		return nil, errVerify
	}
	for i, b := range before {
		if b.key != after[i].key || !nodeEqual(b.valNode, after[i].valNode, 0) {
			return nil, errVerify
		}
	}
	if want == nil {
		if out.Has(key) {
			return nil, errVerify
		}
	} else if !out.accepts(out.Node(key), *want) {
		return nil, errVerify
	}
	return out, nil
}

type verifyError struct{}

func (verifyError) Error() string { return "edit would change other keys" }

var errVerify error = verifyError{}

// accepts reports whether node decodes to v.
func (f *File) accepts(n *yaml.Node, v Value) bool {
	n = resolveAlias(n)
	if n == nil {
		return false
	}
	switch v.kind {
	case kindString:
		return n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Value == v.s
	case kindInt:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return false
		}
		// 007 and +7 are 7 too: setting 7 must not rewrite them.
		var i int
		return n.Value == strconv.Itoa(v.n) || n.Decode(&i) == nil && i == v.n
	case kindTime:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "!!timestamp") {
			return false
		}
		a, err1 := ParseTime(n.Value)
		b, err2 := ParseTime(v.s)
		return err1 == nil && err2 == nil && a.Equal(b)
	case kindList:
		if n.Kind != yaml.SequenceNode || len(n.Content) != len(v.list) {
			return false
		}
		for i, c := range n.Content {
			c = resolveAlias(c)
			if c.Kind != yaml.ScalarNode || c.Tag != "!!str" || c.Value != v.list[i] {
				return false
			}
		}
		return true
	}
	return false
}

// nodeEqual compares what two YAML nodes mean, not how they are written.
// Aliases are followed, so a few lines of nested aliases can stand for an
// exponentially large value: past a fixed amount of work the values count
// as different, which makes an edit fail instead of hanging.
func nodeEqual(a, b *yaml.Node, depth int) bool {
	budget := 1 << 16
	return nodeEqualWithin(a, b, depth, &budget)
}

func nodeEqualWithin(a, b *yaml.Node, depth int, budget *int) bool {
	*budget--
	if depth > 64 || *budget < 0 {
		return false
	}
	a, b = resolveAlias(a), resolveAlias(b)
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
		if !nodeEqualWithin(a.Content[i], b.Content[i], depth+1, budget) {
			return false
		}
	}
	return true
}

// renderAs writes v in the style of the value it replaces, where that style
// can hold it.
func renderAs(v Value, old *yaml.Node) string {
	switch v.kind {
	case kindList:
		return renderFlow(v)
	case kindInt:
		return strconv.Itoa(v.n)
	case kindTime:
		if old == nil || old.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0 {
			return v.s
		}
	}
	style := yaml.Style(0)
	if old != nil && old.Kind == yaml.ScalarNode {
		style = old.Style & (yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle)
	}
	return renderScalar(v.s, style, false)
}

// renderFlow writes v on one line.
func renderFlow(v Value) string {
	switch v.kind {
	case kindTime:
		return v.s // RFC 3339 reads back as a timestamp: no quotes needed
	case kindInt:
		return strconv.Itoa(v.n)
	case kindList:
		items := make([]string, len(v.list))
		for i, it := range v.list {
			items[i] = renderScalar(it, 0, true)
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	return renderScalar(v.s, 0, false)
}

// renderScalar writes s as a YAML string scalar: plain when that reads back
// as the same string, else in the requested quote style, else double quoted.
func renderScalar(s string, style yaml.Style, inFlow bool) string {
	if style&yaml.SingleQuotedStyle != 0 && !strings.ContainsAny(s, "\n\r\t") && isPrintable(s) {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	if style&yaml.DoubleQuotedStyle == 0 && plainSafe(s, inFlow) {
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	out := strings.TrimSuffix(buf.String(), "\n")
	if isPrintable(out) {
		return out
	}
	// JSON leaves DEL, C1 controls (U+0085 is a line break to YAML),
	// U+FEFF and U+FFFE/U+FFFF raw; YAML refuses or folds them.
	var b strings.Builder
	for _, r := range out {
		if isPrintable(string(r)) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, `\u%04X`, r)
		}
	}
	return b.String()
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff {
			return false
		}
	}
	return true
}

// plainSafe reports whether s can be written without quotes and read back as
// the same string.
func plainSafe(s string, inFlow bool) bool {
	if s == "" || s != strings.TrimSpace(s) || !isPrintable(s) {
		return false
	}
	if strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`") {
		// "-x" and friends are fine in YAML, but keeping it simple costs nothing.
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") || strings.Contains(s, "\t") {
		return false
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off":
		// Strings to go.yaml.in/yaml/v3, but booleans to YAML 1.1
		// readers (and to people): quote them, as yaml.Marshal does.
		return false
	}
	if inFlow && strings.ContainsAny(s, ",[]{}") {
		return false
	}
	// Check by reading it back where it will stand: inside [...] the YAML
	// library reads less as plain text ("a?" fails there).
	doc := "k: " + s
	if inFlow {
		doc = "k: [" + s + "]"
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		return false
	}
	if len(n.Content) != 1 || len(n.Content[0].Content) != 2 {
		return false
	}
	v := n.Content[0].Content[1]
	if inFlow {
		if v.Kind != yaml.SequenceNode || len(v.Content) != 1 {
			return false
		}
		v = v.Content[0]
	}
	return v.Kind == yaml.ScalarNode && v.Tag == "!!str" && v.Value == s
}
