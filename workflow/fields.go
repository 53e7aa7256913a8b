package workflow

import (
	"encoding/json"

	"github.com/orch-tool/orch/gitstore"
)

// A task's custom frontmatter keys (those orch does not know) are part of
// the task as --json shows it, as one JSON object. The store's summary of
// a task carries them (gitstore.Summary.Fields), made when it parsed the
// file, so that orch list --json reads no task file for them.

// NoFields is the JSON of a task without custom keys.
var NoFields = json.RawMessage(`{}`)

// fieldsJSON is a summary's custom keys as a JSON object.
func fieldsJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return NoFields
	}
	return b
}

// FileFields returns the custom keys of a loaded task as a JSON object.
func FileFields(t *Task) json.RawMessage {
	if t == nil || t.File == nil {
		return NoFields
	}
	return fieldsJSON(t.File.CustomFieldsJSON())
}

// TaskFields returns a task's custom keys as a JSON object ({} when it has
// none, or its file does not parse).
func (e *Engine) TaskFields(s *gitstore.Summary) json.RawMessage {
	if s == nil {
		return NoFields
	}
	return fieldsJSON(s.Fields)
}

// TaskFieldsOf returns the custom keys of each task, in order.
func (e *Engine) TaskFieldsOf(sums []*gitstore.Summary) []json.RawMessage {
	out := make([]json.RawMessage, len(sums))
	for i, s := range sums {
		out[i] = e.TaskFields(s)
	}
	return out
}
