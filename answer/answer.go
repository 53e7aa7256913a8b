// Package answer writes orch's JSON answers (docs/design.md §9, docs/json.md):
//
//   - the envelope: every answer is one JSON object with schema_version
//     first (Version is the one place the version is written);
//   - the task object, the same everywhere, from one table of its fields
//     (task.go): its keys, their order, how each value is written, and
//     the Go type the JSON Schema is generated from;
//   - the parts of an answer: times (Time) and strings written as
//     encoding/json writes them, without reflection where speed counts;
//   - what --json=FIELDS keeps of an answer (Select) and the --jq filter
//     (Filter).
//
// It prints nothing by itself: cmd/orch parses the flags, turns the errors
// here into usage errors with hints, and writes what this package makes.
package answer

import (
	"encoding/json"
	"strconv"
)

// Version is the schema version of every JSON answer and of the error
// envelope (docs/json.md lists what changed from one to the next).
const Version = 2

// head starts every JSON document.
var head = `{"schema_version":` + strconv.Itoa(Version)

// AppendHead starts a JSON answer written by hand: the caller goes on with
// a comma and the answer's first key.
func AppendHead(b []byte) []byte { return append(b, head...) }

// Marshal is v (a struct or a map) as one JSON document: schema_version
// first, a newline at the end.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Envelope(b), nil
}

// Envelope splices schema_version in front of a JSON object and ends it
// with a newline.
func Envelope(b []byte) []byte {
	out := make([]byte, 0, len(head)+len(b)+2)
	out = append(out, head...)
	if len(b) > 2 && b[0] == '{' {
		out = append(out, ',')
	}
	if len(b) >= 2 && b[0] == '{' {
		out = append(out, b[1:]...)
	} else {
		out = append(out, '}')
	}
	return append(out, '\n')
}
