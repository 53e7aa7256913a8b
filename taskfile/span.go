package taskfile

import (
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// field is one top-level key of the frontmatter and where its bytes are.
type field struct {
	key      string
	keyNode  *yaml.Node
	valNode  *yaml.Node
	start    int // start of the key's line
	colonEnd int // just after the ':' that ends the key
	valStart int // raw value text (valStart == valEnd for an empty value)
	valEnd   int
	end      int // end of the field's last content line, after its line break
}

// yamlLineStarts returns the offsets of the starts of the lines of
// src[from:to], with line breaks as the YAML scanner counts them (so that the
// scanner's line numbers index this slice).
func yamlLineStarts(src []byte, from, to int) []int {
	starts := []int{from}
	for i := from; i < to; {
		switch {
		case src[i] == '\r' && i+1 < to && src[i+1] == '\n':
			i += 2
		case src[i] == '\r' || src[i] == '\n':
			i++
		case src[i] == 0xC2 && i+1 < to && src[i+1] == 0x85: // NEL
			i += 2
		case src[i] == 0xE2 && i+2 < to && src[i+1] == 0x80 && (src[i+2] == 0xA8 || src[i+2] == 0xA9): // LS, PS
			i += 3
		default:
			i++
			continue
		}
		starts = append(starts, i)
	}
	return starts
}

// offset converts a YAML node position (1-based line, 1-based column in
// characters) to a byte offset in Src.
func (f *File) offset(line, col int) int {
	if line < 1 || line > len(f.lines) {
		return -1
	}
	pos := f.lines[line-1]
	for c := 1; c < col && pos < f.fmEnd; c++ {
		_, n := utf8.DecodeRune(f.Src[pos:])
		pos += n
	}
	return pos
}

// fileLine converts a 1-based line of the YAML text, as the YAML scanner
// counts lines (it also breaks at U+0085, U+2028 and U+2029), to the 1-based
// line of the file that a person's editor shows.
func (f *File) fileLine(yamlLine int) int {
	if yamlLine >= 1 && yamlLine <= len(f.lines) {
		return lineOf(f.Src, f.lines[yamlLine-1])
	}
	return f.openLine + yamlLine
}

// lineEnd returns the end of the line containing pos, after its break.
func (f *File) lineEnd(pos int) int {
	if i := f.lineIndex(pos); i+1 < len(f.lines) {
		return f.lines[i+1]
	}
	return f.fmEnd
}

// lineIndex returns the index into f.lines of the line holding pos.
func (f *File) lineIndex(pos int) int {
	lo, hi := 0, len(f.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if f.lines[mid] <= pos {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// lineText returns the bytes of line i without its break.
func (f *File) lineText(i int) []byte {
	s := f.lines[i]
	e := f.fmEnd
	if i+1 < len(f.lines) {
		e = f.lines[i+1]
	}
	b := f.Src[s:e]
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	// Unicode line breaks
	if n := len(b); n >= 2 && b[n-2] == 0xC2 && b[n-1] == 0x85 {
		b = b[:n-2]
	} else if n >= 3 && b[n-3] == 0xE2 && b[n-2] == 0x80 && (b[n-1] == 0xA8 || b[n-1] == 0xA9) {
		b = b[:n-3]
	}
	return b
}

func indentOf(b []byte) int {
	n := 0
	for n < len(b) && b[n] == ' ' {
		n++
	}
	return n
}

func isBlankOrComment(b []byte) bool {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i == len(b) || b[i] == '#'
}

// computeSpans finds, for each top-level field, the bytes of its key line and
// of its value. The edit functions verify every edit by parsing the result,
// so a span that is wrong for some exotic YAML makes an edit fall back or
// fail; it can never corrupt a file.
func (f *File) computeSpans() error {
	for i := range f.fields {
		fl := &f.fields[i]
		keyPos := f.offset(fl.keyNode.Line, fl.keyNode.Column)
		if keyPos < 0 {
			return &ParseError{Path: f.Path, Line: f.openLine, Msg: "cannot locate key " + fl.key}
		}
		li := f.lineIndex(keyPos)
		fl.start = f.lines[li]
		// The region a field may occupy ends where the next key's line starts.
		limit := f.fmEnd
		if i+1 < len(f.fields) {
			nk := f.fields[i+1].keyNode
			if p := f.offset(nk.Line, nk.Column); p >= 0 {
				limit = f.lines[f.lineIndex(p)]
			}
		}
		fl.colonEnd = findColon(f.Src, keyPos, limit)
		keyIndent := indentOf(f.lineText(li))
		v := fl.valNode
		vpos := f.offset(v.Line, v.Column)
		empty := v.Kind == yaml.ScalarNode && v.Tag == "!!null" && v.Value == "" && v.Style == 0 &&
			(vpos < 0 || vpos >= limit || f.lineIndex(vpos) != li || vpos < fl.colonEnd || isBlankOrComment(f.Src[vpos:f.lineEnd(vpos)]))
		if empty || vpos < 0 || vpos < fl.colonEnd {
			fl.valStart, fl.valEnd = fl.colonEnd, fl.colonEnd
			fl.end = f.lineEnd(fl.colonEnd)
			continue
		}
		fl.valStart = vpos
		fl.valEnd, fl.end = f.valueEnd(v, vpos, limit, keyIndent)
	}
	return nil
}

// findColon returns the offset after the ':' that ends the key starting at
// pos (the first ':' followed by a blank, outside quotes).
func findColon(src []byte, pos, limit int) int {
	quote := byte(0)
	if pos < limit && (src[pos] == '"' || src[pos] == '\'') {
		quote = src[pos]
		pos++
		for pos < limit {
			c := src[pos]
			if quote == '"' && c == '\\' {
				pos += 2
				continue
			}
			pos++
			if c == quote {
				if quote == '\'' && pos < limit && src[pos] == '\'' {
					pos++
					continue
				}
				break
			}
		}
	}
	for pos < limit {
		if src[pos] == ':' && (pos+1 >= limit || src[pos+1] == ' ' || src[pos+1] == '\t' || src[pos+1] == '\n' || src[pos+1] == '\r') {
			return pos + 1
		}
		pos++
	}
	return limit
}

// valueEnd returns the end of the value text that starts at vpos, and the end
// of the last line the value occupies.
func (f *File) valueEnd(v *yaml.Node, vpos, limit, keyIndent int) (int, int) {
	src := f.Src
	switch {
	case v.Kind == yaml.ScalarNode && (v.Style&yaml.DoubleQuotedStyle != 0 || v.Style&yaml.SingleQuotedStyle != 0) && (src[vpos] == '"' || src[vpos] == '\''):
		e := skipQuoted(src, vpos, limit)
		return e, f.lineEnd(e - 1)
	case (v.Kind == yaml.SequenceNode || v.Kind == yaml.MappingNode) && v.Style&yaml.FlowStyle != 0 && (src[vpos] == '[' || src[vpos] == '{'):
		e := skipFlow(src, vpos, limit)
		return e, f.lineEnd(e - 1)
	case v.Kind == yaml.ScalarNode && (v.Style&yaml.LiteralStyle != 0 || v.Style&yaml.FoldedStyle != 0),
		v.Kind == yaml.SequenceNode || v.Kind == yaml.MappingNode:
		// Block forms: every following line indented more than the key (or,
		// for a sequence, a "- " item at the key's indentation) belongs to it.
		first := f.lineIndex(vpos)
		last := first
		isSeq := v.Kind == yaml.SequenceNode
		// "|+" and ">+" keep the blank lines that follow the text: they
		// are part of the value, and a key added after it goes below them.
		keep := false
		for i := vpos + 1; v.Kind == yaml.ScalarNode && i < limit && i < vpos+3; i++ {
			if src[i] == '+' {
				keep = true
			}
		}
		for li := first + 1; li < len(f.lines) && f.lines[li] < limit; li++ {
			t := f.lineText(li)
			if isBlankOrComment(t) {
				switch {
				case v.Kind == yaml.ScalarNode && indentOf(t) > keyIndent && len(t) > indentOf(t):
					last = li // a '#' line inside a block scalar is text
				case keep && len(t) == indentOf(t) && last == li-1:
					last = li
				}
				continue
			}
			ind := indentOf(t)
			if ind > keyIndent || (isSeq && ind == keyIndent && len(t) > ind && t[ind] == '-') {
				last = li
				continue
			}
			break
		}
		e := f.lines[last] + len(f.lineText(last))
		if last == first && v.Kind != yaml.ScalarNode {
			e = trimComment(src, vpos, e)
		}
		return e, f.lineEnd(f.lines[last])
	default:
		// Plain scalar, possibly folded over several lines; aliases too.
		first := f.lineIndex(vpos)
		lineEnd := f.lines[first] + len(f.lineText(first))
		e := trimComment(src, vpos, lineEnd)
		last := first
		for li := first + 1; li < len(f.lines) && f.lines[li] < limit; li++ {
			t := f.lineText(li)
			if len(t) == indentOf(t) { // empty line: may be inside the scalar
				continue
			}
			if isBlankOrComment(t) || indentOf(t) <= keyIndent {
				break
			}
			last = li
			e = trimComment(src, f.lines[li], f.lines[li]+len(t))
		}
		return e, f.lineEnd(f.lines[last])
	}
}

// trimComment returns the end of the text in src[from:to] before a " #"
// comment, with trailing blanks removed.
func trimComment(src []byte, from, to int) int {
	e := to
	for i := from; i < to; i++ {
		if src[i] == '#' && i > from && (src[i-1] == ' ' || src[i-1] == '\t') {
			e = i
			break
		}
	}
	for e > from && (src[e-1] == ' ' || src[e-1] == '\t') {
		e--
	}
	return e
}

func skipQuoted(src []byte, pos, limit int) int {
	q := src[pos]
	pos++
	for pos < limit {
		c := src[pos]
		if q == '"' && c == '\\' {
			pos += 2
			continue
		}
		pos++
		if c == q {
			if q == '\'' && pos < limit && src[pos] == '\'' {
				pos++
				continue
			}
			return pos
		}
	}
	return limit
}

func skipFlow(src []byte, pos, limit int) int {
	depth := 0
	for pos < limit {
		switch c := src[pos]; c {
		case '"', '\'':
			pos = skipQuoted(src, pos, limit)
			continue
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return pos + 1
			}
		case '#':
			if pos > 0 && (src[pos-1] == ' ' || src[pos-1] == '\t') {
				pos = lineEndRaw(src, pos, limit)
				continue
			}
		}
		pos++
	}
	return limit
}

func lineEndRaw(src []byte, pos, limit int) int {
	for pos < limit && src[pos] != '\n' {
		pos++
	}
	return pos
}
