package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/orch-tool/orch/workflow"
)

// withSessionHook is the Claude Code settings cur (the file at path) with a
// SessionStart hook running command. The hook is spliced into the text:
// every other byte stays as the person wrote it (key order, numbers,
// escapes, indentation), which decoding and encoding again would not keep.
// The text orch adds follows the file's own style. cur is returned as it is
// when the hook is there already.
func withSessionHook(path string, cur []byte, command string) ([]byte, error) {
	if len(bytes.TrimSpace(cur)) == 0 {
		cur = []byte("{}\n")
	}
	if !json.Valid(cur) {
		var syntax *json.SyntaxError
		off := 0
		if err := json.Unmarshal(cur, new(any)); errors.As(err, &syntax) {
			off = max(int(syntax.Offset)-1, 0) // the offset is past the byte in error
			return nil, settingsError(path, cur, off, fmt.Sprintf("the settings are not JSON (%s)", syntax))
		}
		return nil, settingsError(path, cur, off, "the settings are not JSON")
	}
	p := &jsonParser{data: cur}
	top := p.value()
	if top.kind != '{' {
		return nil, settingsError(path, cur, top.start, fmt.Sprintf("the settings are %s, not an object", top.describe(cur)))
	}
	hook := jsonObject{{"type", "command"}, {"command", command}}
	entry := jsonObject{{"hooks", []any{hook}}}
	hooks := top.member("hooks")
	if hooks == nil {
		return splice(cur, top, top, "hooks", jsonObject{{"SessionStart", []any{entry}}}), nil
	}
	if hooks.kind != '{' {
		return nil, settingsError(path, cur, hooks.start, fmt.Sprintf("%q is %s, not an object", "hooks", hooks.describe(cur)))
	}
	starts := hooks.member("SessionStart")
	if starts == nil {
		return splice(cur, top, hooks, "SessionStart", []any{entry}), nil
	}
	if starts.kind != '[' {
		return nil, settingsError(path, cur, starts.start, fmt.Sprintf("%q is %s, not an array", "SessionStart", starts.describe(cur)))
	}
	for _, s := range starts.elems {
		if inner := s.member("hooks"); inner != nil {
			for _, h := range inner.elems {
				if c := h.member("command"); c != nil && c.kind == '"' && jsonString(cur[c.start:c.end]) == command {
					return cur, nil
				}
			}
		}
	}
	return splice(cur, top, starts, "", entry), nil
}

// settingsError refuses the settings file at path, naming the line and
// column of the byte at off.
func settingsError(path string, data []byte, off int, what string) error {
	off = min(off, len(data))
	line := bytes.Count(data[:off], []byte("\n")) + 1
	col := off - (bytes.LastIndexByte(data[:off], '\n') + 1) + 1
	return &workflow.UsageError{Msg: fmt.Sprintf("%s:%d:%d: %s; nothing was written", path, line, col, what), Hint: "fix it, then run orch setup claude again"}
}

// jsonValue is where a value is in a JSON text, and where its parts are.
type jsonValue struct {
	kind       byte // '{', '[', '"', or 0 for a number, true, false or null
	start, end int  // the value is data[start:end]
	members    []jsonMember
	elems      []*jsonValue
}

type jsonMember struct {
	key              string
	keyStart, keyEnd int
	value            *jsonValue
}

// member is the value of key in an object (the last one, which is the one
// that counts when a key is repeated), or nil.
func (v *jsonValue) member(key string) *jsonValue {
	for i := len(v.members) - 1; i >= 0; i-- {
		if v.members[i].key == key {
			return v.members[i].value
		}
	}
	return nil
}

// items are where the members or elements of a container start and end.
func (v *jsonValue) items() (starts, ends []int) {
	for _, m := range v.members {
		starts, ends = append(starts, m.keyStart), append(ends, m.value.end)
	}
	for _, e := range v.elems {
		starts, ends = append(starts, e.start), append(ends, e.end)
	}
	return starts, ends
}

func (v *jsonValue) describe(data []byte) string {
	switch v.kind {
	case '{':
		return "a JSON object"
	case '[':
		return "a JSON array"
	case '"':
		return "a JSON string"
	}
	switch data[v.start] {
	case 't', 'f':
		return "a JSON boolean"
	case 'n':
		return "JSON null"
	}
	return "a JSON number"
}

// jsonParser finds the values of a text that json.Valid accepted, so it
// checks nothing.
type jsonParser struct {
	data []byte
	pos  int
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) && strings.IndexByte(" \t\r\n", p.data[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *jsonParser) value() *jsonValue {
	p.space()
	v := &jsonValue{start: p.pos}
	switch c := p.data[p.pos]; c {
	case '{', '[':
		v.kind = c
		p.pos++
		p.space()
		for p.data[p.pos] != c+2 { // '}' and ']' follow '{' and '[' by two
			if c == '{' {
				p.space()
				m := jsonMember{keyStart: p.pos}
				p.string()
				m.keyEnd = p.pos
				m.key = jsonString(p.data[m.keyStart:m.keyEnd])
				p.space()
				p.pos++ // :
				m.value = p.value()
				v.members = append(v.members, m)
			} else {
				v.elems = append(v.elems, p.value())
			}
			p.space()
			if p.data[p.pos] == ',' {
				p.pos++
				p.space()
			}
		}
		p.pos++
	case '"':
		v.kind = '"'
		p.string()
	default:
		for p.pos < len(p.data) && strings.IndexByte(",]} \t\r\n", p.data[p.pos]) < 0 {
			p.pos++
		}
	}
	v.end = p.pos
	return v
}

func (p *jsonParser) string() {
	for p.pos++; p.data[p.pos] != '"'; p.pos++ {
		if p.data[p.pos] == '\\' {
			p.pos++
		}
	}
	p.pos++
}

func jsonString(quoted []byte) string {
	var s string
	_ = json.Unmarshal(quoted, &s) // the text is valid JSON
	return s
}

// jsonObject is an object orch writes, its keys in this order.
type jsonObject []struct {
	key   string
	value any // string, jsonObject or []any
}

// jsonStyle is how a file writes JSON, for the text orch adds to it.
type jsonStyle struct {
	newline string // "\n" or "\r\n"
	unit    string // one level of indentation
	colon   string // between a key and its value: ": " or ":"
	comma   string // between the items of a container on one line: ", " or ","
}

// styleOf takes the style of data, whose outermost value is top: the first
// key, the first container of several items on one line, and the first
// member indented on a line of its own say how the file is written.
func styleOf(data []byte, top *jsonValue) jsonStyle {
	st := jsonStyle{newline: "\n"}
	if bytes.Contains(data, []byte("\r\n")) {
		st.newline = "\r\n"
	}
	var walk func(v *jsonValue)
	walk = func(v *jsonValue) {
		if len(v.members) > 0 && st.colon == "" {
			if c := string(data[v.members[0].keyEnd:v.members[0].value.start]); !strings.ContainsAny(c, "\r\n") {
				st.colon = c
			}
		}
		starts, ends := v.items()
		if len(starts) > 1 && st.comma == "" {
			if c := string(data[ends[0]:starts[1]]); !strings.ContainsAny(c, "\r\n") {
				st.comma = c
			}
		}
		if len(starts) > 0 && st.unit == "" && startsLine(data, starts[0]) {
			outer, inner := lineIndent(data, v.start), lineIndent(data, starts[0])
			if len(inner) > len(outer) && strings.HasPrefix(inner, outer) {
				st.unit = inner[len(outer):]
			}
		}
		for _, m := range v.members {
			walk(m.value)
		}
		for _, e := range v.elems {
			walk(e)
		}
	}
	walk(top)
	if st.colon == "" {
		st.colon = ": "
	}
	if st.comma == "" {
		// The space a colon is followed by, not what precedes it: with
		// `"a" :1` the colon's text is " :", and a comma of ", :" made
		// invalid JSON (FuzzSessionHook).
		_, after, _ := strings.Cut(st.colon, ":")
		st.comma = "," + after
	}
	if st.unit == "" {
		st.unit = "  "
	}
	return st
}

// splice adds an item to the container c of data (whose outermost value is
// top): the member key: value of an object, or the element value of an
// array (key ""), after its last item. The new text is laid out as the
// items around it: on lines of their own, indented as they are, or on one
// line.
func splice(data []byte, top, c *jsonValue, key string, value any) []byte {
	st := styleOf(data, top)
	item := func(indent string, multiline bool) string {
		s := st.render(value, indent, multiline)
		if key != "" {
			s = st.render(key, "", false) + st.colon + s
		}
		return s
	}
	at, end, text := 0, 0, ""
	starts, ends := c.items()
	if n := len(starts); n > 0 {
		last := starts[n-1]
		at, end = ends[n-1], ends[n-1]
		comma := st.comma
		if n > 1 && !bytes.ContainsAny(data[ends[n-2]:starts[n-1]], "\r\n") {
			comma = string(data[ends[n-2]:starts[n-1]])
		}
		if startsLine(data, last) {
			// The new value on one line if the last one is (a container
			// written on one line), else laid out over lines.
			var v *jsonValue
			if c.kind == '{' {
				v = c.members[n-1].value
			} else {
				v = c.elems[n-1]
			}
			oneLine := (v.kind == '{' || v.kind == '[') && !bytes.ContainsAny(data[v.start:v.end], "\r\n")
			indent := lineIndent(data, last)
			text = "," + st.newline + indent + item(indent, !oneLine)
		} else {
			text = comma + item("", false)
		}
	} else {
		at, end = c.start+1, c.end-1 // the space inside the brackets goes
		if c == top || bytes.ContainsAny(data[top.start:top.end], "\r\n") {
			indent := lineIndent(data, c.start)
			text = st.newline + indent + st.unit + item(indent+st.unit, true) + st.newline + indent
		} else {
			text = item("", false)
		}
	}
	out := make([]byte, 0, len(data)+len(text))
	out = append(out, data[:at]...)
	out = append(out, text...)
	return append(out, data[end:]...)
}

// render writes v (a string, jsonObject or []any) in the style, on lines
// of their own under indent when multiline.
func (st jsonStyle) render(v any, indent string, multiline bool) string {
	var open, close string
	var parts []string
	inner := indent + st.unit
	switch v := v.(type) {
	case string:
		b, _ := json.Marshal(v)
		return string(b)
	case jsonObject:
		open, close = "{", "}"
		for _, m := range v {
			parts = append(parts, st.render(m.key, "", false)+st.colon+st.render(m.value, inner, multiline))
		}
	case []any:
		open, close = "[", "]"
		for _, e := range v {
			parts = append(parts, st.render(e, inner, multiline))
		}
	}
	if !multiline {
		return open + strings.Join(parts, st.comma) + close
	}
	return open + st.newline + inner + strings.Join(parts, ","+st.newline+inner) + st.newline + indent + close
}

// startsLine says whether only spaces and tabs come before data[pos] on its
// line.
func startsLine(data []byte, pos int) bool {
	i := pos
	for i > 0 && (data[i-1] == ' ' || data[i-1] == '\t') {
		i--
	}
	return i == 0 || data[i-1] == '\n'
}

// lineIndent is the spaces and tabs that start the line of data[pos].
func lineIndent(data []byte, pos int) string {
	start := bytes.LastIndexByte(data[:pos], '\n') + 1
	end := start
	for end < len(data) && (data[end] == ' ' || data[end] == '\t') {
		end++
	}
	return string(data[start:end])
}
