package refusal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/orch-tool/orch/internal/text"
)

// ParseError is why a refusal record could not be read. Line and
// Column (1-based, columns counted in characters) are 0 when the problem is
// not at one place.
type ParseError struct {
	Line, Column int
	Msg          string
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Parse reads the protocol's JSON record strictly: one JSON object;
// unknown or duplicate fields (names match exactly, not case-insensitively),
// values of the wrong type, malformed JSON and data after the object are
// errors of type *ParseError naming the line and column. A null value
// counts as the field being absent. Evidence data may be any JSON value (see
// Evidence). Records over MaxBytes are refused unread.
func Parse(data []byte) (*Record, error) {
	if len(data) > MaxBytes {
		return nil, &ParseError{Msg: fmt.Sprintf("the refusal record is %d bytes; the limit is %d bytes (%d KiB): shorten it, e.g. quote only the relevant lines of logs", len(data), MaxBytes, MaxBytes>>10)}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &ParseError{Msg: "the refusal record is empty; expected a JSON object"}
	}
	p := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	tok, off, err := p.next()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, p.errAt(off, "the refusal record must be a JSON object, not %s", tokenKind(tok))
	}
	r := &Record{}
	err = p.object("the refusal record", recordFields, func(key string) error {
		var err error
		switch key {
		case "task_id":
			r.TaskID, err = p.str(key)
		case "handoff_id":
			r.HandoffID, err = p.str(key)
		case "agent_id":
			r.AgentID, err = p.str(key)
		case "rejected_at":
			r.RejectedAt, err = p.str(key)
		case "reason_type":
			var s string
			s, err = p.str(key)
			r.ReasonType = Reason(s)
		case "reason_summary":
			r.ReasonSummary, err = p.str(key)
		case "reason_detail":
			r.ReasonDetail, err = p.str(key)
		case "what_attempted":
			r.WhatAttempted, err = p.strArray(key)
		case "blocking_factor":
			r.BlockingFactor, err = p.str(key)
		case "evidence":
			r.Evidence, err = p.evidence(key)
		case "suggested_alternative":
			r.SuggestedAlternative, err = p.str(key)
		case "alternative_tasks":
			r.AlternativeTasks, err = p.altTasks(key)
		case "task_original_scope":
			r.TaskOriginalScope, err = p.str(key)
		case "scope_growth_factor":
			r.ScopeGrowthFactor, err = p.number(key)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	off = p.valueStart()
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.errAt(off, "unexpected data after the refusal record; expected one JSON object")
	}
	return r, nil
}

// parser walks the JSON tokens of a record, so that every error can
// say where it is and which field it concerns.
type parser struct {
	data []byte
	dec  *json.Decoder
}

// valueStart is the offset of the next token: past the whitespace, ':' and
// ',' that the decoder has not consumed yet.
func (p *parser) valueStart() int64 {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ':', ',':
			off++
			continue
		}
		break
	}
	return off
}

func (p *parser) errAt(off int64, format string, args ...any) error {
	off = min(max(off, 0), int64(len(p.data)))
	before := p.data[:off]
	line := 1 + bytes.Count(before, []byte("\n"))
	col := 1 + utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return &ParseError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// next reads one token and the offset where it starts.
func (p *parser) next() (json.Token, int64, error) {
	off := p.valueStart()
	tok, err := p.dec.Token()
	if err == nil {
		return tok, off, nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// The decoder's offset can point a few bytes early (inside a
		// literal); the whole-input scanner's is exact: one past the
		// offending byte. Both stop at the same first error.
		var raw json.RawMessage
		if verr := json.Unmarshal(p.data, &raw); errors.As(verr, &se) {
			return nil, off, p.errAt(se.Offset-1, "malformed JSON: %s", se.Error())
		}
		return nil, off, p.errAt(max(se.Offset, off), "malformed JSON: %s", se.Error())
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, off, p.errAt(int64(len(p.data)), "malformed JSON: unexpected end of input (an unclosed string, array or object)")
	default:
		return nil, off, p.errAt(off, "malformed JSON: %s", err.Error())
	}
}

// object reads the members of an object whose '{' has been read, calling
// field for each known key to read its value.
func (p *parser) object(where string, known []string, field func(key string) error) error {
	seen := make(map[string]bool)
	for {
		tok, off, err := p.next()
		if err != nil {
			return err
		}
		if tok == json.Delim('}') {
			return nil
		}
		key, ok := tok.(string)
		if !ok { // the decoder only returns strings in key position
			return p.errAt(off, "malformed JSON: expected a field name in %s", where)
		}
		if !slices.Contains(known, key) {
			return p.errAt(off, "unknown field %q in %s; the known fields are %s", text.Clip(key, 60), where, strings.Join(known, ", "))
		}
		if seen[key] {
			return p.errAt(off, "duplicate field %q in %s", key, where)
		}
		seen[key] = true
		if err := field(key); err != nil {
			return err
		}
	}
}

func (p *parser) typeErr(off int64, name, want string, tok json.Token) error {
	return p.errAt(off, "%s must be %s, not %s", name, want, tokenKind(tok))
}

// str reads a string field; null is "".
func (p *parser) str(name string) (string, error) {
	tok, off, err := p.next()
	if err != nil {
		return "", err
	}
	switch v := tok.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", p.typeErr(off, name, "a string", tok)
}

// number reads a number field; null is 0.
func (p *parser) number(name string) (float64, error) {
	tok, off, err := p.next()
	if err != nil {
		return 0, err
	}
	switch v := tok.(type) {
	case nil:
		return 0, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return 0, p.errAt(off, "%s is out of range: %s", name, text.Clip(string(v), 40))
		}
		return f, nil
	}
	return 0, p.typeErr(off, name, "a number", tok)
}

// array reads an array field (null is no elements), calling elem for each
// element token.
func (p *parser) array(name, want string, elem func(i int, tok json.Token, off int64) error) error {
	tok, off, err := p.next()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if tok != json.Delim('[') {
		return p.typeErr(off, name, want, tok)
	}
	for i := 0; ; i++ {
		tok, off, err := p.next()
		if err != nil {
			return err
		}
		if tok == json.Delim(']') {
			return nil
		}
		if err := elem(i, tok, off); err != nil {
			return err
		}
	}
}

func (p *parser) strArray(name string) ([]string, error) {
	var out []string
	err := p.array(name, "an array of strings", func(i int, tok json.Token, off int64) error {
		s, ok := tok.(string)
		if !ok {
			return p.typeErr(off, fmt.Sprintf("%s[%d]", name, i), "a string", tok)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// objects reads an array of objects with the keys known: elem is called
// once per object with where it is (name[i]), and returns the reader of its
// fields.
func (p *parser) objects(name string, known []string, elem func(where string) func(key string) error) error {
	return p.array(name, "an array of objects", func(i int, tok json.Token, off int64) error {
		where := fmt.Sprintf("%s[%d]", name, i)
		if tok != json.Delim('{') {
			return p.typeErr(off, where, "an object", tok)
		}
		return p.object(where, known, elem(where))
	})
}

func (p *parser) evidence(name string) ([]Evidence, error) {
	var out []Evidence
	err := p.objects(name, evidenceFields, func(where string) func(string) error {
		out = append(out, Evidence{})
		ev := &out[len(out)-1]
		return func(key string) error {
			var err error
			switch key {
			case "type":
				ev.Type, err = p.str(where + ".type")
			case "data":
				ev.Data, err = p.anyData()
			case "source":
				ev.Source, err = p.str(where + ".source")
			}
			return err
		}
	})
	return out, err
}

// anyData reads any JSON value: a string as it is, null as "", anything else
// as its compact JSON text.
func (p *parser) anyData() (string, error) {
	tok, off, err := p.next()
	if err != nil {
		return "", err
	}
	switch v := tok.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	for depth := 1; depth > 0; { // an object or array: skip to its end
		tok, _, err := p.next()
		if err != nil {
			return "", err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, p.data[off:p.dec.InputOffset()]); err != nil {
		return "", p.errAt(off, "malformed JSON: %s", err.Error())
	}
	return validUTF8(buf.String()), nil
}

func (p *parser) altTasks(name string) ([]AlternativeTask, error) {
	var out []AlternativeTask
	err := p.objects(name, altTaskFields, func(where string) func(string) error {
		out = append(out, AlternativeTask{})
		t := &out[len(out)-1]
		return func(key string) error {
			var err error
			switch key {
			case "title":
				t.Title, err = p.str(where + ".title")
			case "scope":
				t.Scope, err = p.str(where + ".scope")
			case "dependencies":
				t.Dependencies, err = p.str(where + ".dependencies")
			case "estimate":
				t.Estimate, err = p.str(where + ".estimate")
			}
			return err
		}
	})
	return out, err
}

func tokenKind(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	}
	return fmt.Sprintf("%T", tok)
}

// validUTF8 replaces each invalid byte by U+FFFD, as encoding/json
// does when it decodes a string, so that raw evidence data round-trips.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
