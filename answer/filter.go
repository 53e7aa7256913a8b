package answer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/itchyny/gojq"
)

// JQ is a compiled --jq expression.
type JQ struct{ code *gojq.Code }

// CompileJQ compiles a jq expression (gojq; $ENV and env read the
// environment).
func CompileJQ(expr string) (*JQ, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, err
	}
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(os.Environ))
	if err != nil {
		return nil, err
	}
	return &JQ{code}, nil
}

// JQError is a --jq expression that failed on the answer (the verb itself
// succeeded; its answer is not printed).
type JQError struct{ err error }

func (e *JQError) Error() string { return "--jq: " + e.err.Error() }

// Filter stands between a verb and stdout under --json=FIELDS or --jq:
// each answer the verb writes (one JSON document a line; board --watch
// writes one a change) is cut to the keys kept and run through the jq
// expression as it ends. No verb knows about either.
type Filter struct {
	w    io.Writer
	keys []string // the answer's keys to keep (nil: all)
	jq   *JQ      // nil: no expression
	buf  []byte
}

// NewFilter is w under the selection's keys and the expression, or nil
// when they keep the answers as they are.
func NewFilter(w io.Writer, keys []string, jq *JQ) *Filter {
	if keys == nil && jq == nil {
		return nil
	}
	return &Filter{w: w, keys: keys, jq: jq}
}

func (f *Filter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		doc := f.buf[:i]
		rest := f.buf[i+1:]
		if err := f.answer(doc); err != nil {
			f.buf = nil
			return len(p), err
		}
		f.buf = append(f.buf[:0], rest...)
	}
}

// Finish prints an answer the verb did not end with a newline.
func (f *Filter) Finish() error {
	if len(bytes.TrimSpace(f.buf)) == 0 {
		return nil
	}
	doc := f.buf
	f.buf = nil
	return f.answer(doc)
}

func (f *Filter) answer(doc []byte) error {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil
	}
	if f.keys != nil {
		cut, err := cut(doc, f.keys)
		if err != nil {
			return err
		}
		doc = cut
	}
	if f.jq == nil {
		_, err := f.w.Write(append(doc, '\n'))
		return err
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return fmt.Errorf("--jq: the answer is not JSON: %v", err)
	}
	var out []byte
	iter := f.jq.code.Run(v)
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := r.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				break
			}
			return &JQError{err}
		}
		b, err := jqText(r)
		if err != nil {
			return &JQError{err}
		}
		out = append(append(out, b...), '\n')
	}
	_, err := f.w.Write(out)
	return err
}

// jqText prints one result of --jq as gh does: a string as its text, a
// number as written, null as an empty line, true and false, and anything
// else as compact JSON.
func jqText(v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return []byte(x), nil
	case nil:
		return nil, nil
	case bool:
		return strconv.AppendBool(nil, x), nil
	case int:
		return strconv.AppendInt(nil, int64(x), 10), nil
	case float64:
		if math.Trunc(x) == x && math.Abs(x) < 1e15 {
			return strconv.AppendFloat(nil, x, 'f', 0, 64), nil
		}
		return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
	}
	return gojq.Marshal(v)
}

// cut keeps schema_version and the keys named of a JSON object, in the
// answer's order.
func cut(doc []byte, keys []string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("--json: the answer is not a JSON object")
	}
	out := []byte{'{'}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if k != "schema_version" && !slices.Contains(keys, k) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = AppendString(out, k)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}'), nil
}
