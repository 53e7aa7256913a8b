package answer

import (
	"encoding/json"
	"reflect"
	"strconv"
	"time"

	"github.com/orch-tool/orch/gitstore"
)

// Task is a task as every JSON answer shows it: every frontmatter field
// orch knows, always present (an unset time is null, an unset text "", an
// empty list []), the custom frontmatter keys in fields, the file, whether
// it can be claimed, and why its file is invalid (problem). Its keys are
// taskFields'. It reads its summary when it is written: a verb that
// changes the summary in between (archive) gives it a copy.
type Task struct {
	src  source
	mask Mask // the keys --json=FIELDS asked for (0: all)
}

// source is what a task object is written from. The table's functions take
// it by value: a pointer to the Task would make each Task a heap
// allocation (they are called through a function value), and orch list
// writes 10,000 of them.
type source struct {
	sum    *gitstore.Summary
	ready  bool            // a claim could take it now
	fields json.RawMessage // the custom frontmatter keys, a JSON object
}

// NewTask is the task object of a summary, given what needs more than the
// summary: whether the task is ready, its custom keys (a JSON object), and
// the keys --json=FIELDS asked for (0: all).
func NewTask(s *gitstore.Summary, ready bool, fields json.RawMessage, mask Mask) Task {
	return Task{source{s, ready, fields}, mask}
}

// SetFields sets the custom keys (read after the rest, and only when
// Mask.ShowsFields).
func (t *Task) SetFields(fields json.RawMessage) { t.src.fields = fields }

// ID is the task's ID.
func (t *Task) ID() string { return t.from().sum.Task.ID }

// noSummary is the summary of the zero Task: a task with nothing set.
var noSummary gitstore.Summary

// from is what the task is written from.
func (t *Task) from() source {
	if t.src.sum == nil {
		return source{sum: &noSummary, ready: t.src.ready, fields: t.src.fields}
	}
	return t.src
}

// field is one key of the task object: its name, and the function that
// reads its value, of one of six types.
type field struct {
	name   string
	key    string // `,"name":`
	text   func(source) string
	number func(source) int
	flag   func(source) bool
	time   func(source) time.Time // null when unset
	list   func(source) []string  // [] when nil, never null
	object func(source) json.RawMessage
}

// taskFields are the keys of the task object, in order, and how each is
// written: the one list of them. The encoder, the names --json=FIELDS
// takes and the task in docs/schema/ all come from it.
var taskFields = [...]field{
	text("id", func(x source) string { return x.sum.Task.ID }),
	text("title", func(x source) string { return x.sum.Task.Title }),
	text("queue", func(x source) string { return string(x.sum.Task.Queue) }),
	text("priority", func(x source) string { return x.sum.Task.Priority }),
	text("role", func(x source) string { return x.sum.Task.Role }),
	text("branch", func(x source) string { return x.sum.Task.Branch }),
	text("base_branch", func(x source) string { return x.sum.Task.BaseBranch }),
	number("pr_number", func(x source) int { return x.sum.Task.PRNumber }),
	number("rejection_count", func(x source) int { return x.sum.Task.RejectionCount }),
	number("no_progress_count", func(x source) int { return x.sum.Task.NoProgress }),
	number("attempts", func(x source) int { return x.sum.Task.Attempts }),
	text("claimed_by", func(x source) string { return x.sum.Task.ClaimedBy }),
	when("claimed_at", func(x source) time.Time { return x.sum.Task.ClaimedAt }),
	when("heartbeat_at", func(x source) time.Time { return x.sum.Task.HeartbeatAt }),
	text("submitted_by", func(x source) string { return x.sum.Task.SubmittedBy }),
	when("submitted_at", func(x source) time.Time { return x.sum.Task.SubmittedAt }),
	text("assigned_to", func(x source) string { return x.sum.Task.AssignedTo }),
	list("locked_out", func(x source) []string { return x.sum.Task.LockedOut }),
	list("worked_by", func(x source) []string { return x.sum.Task.WorkedBy }),
	list("github_reviews", func(x source) []string { return x.sum.Task.GitHubReviews }),
	list("depends_on", func(x source) []string { return x.sum.Task.DependsOn }),
	list("labels", func(x source) []string { return x.sum.Task.Labels }),
	when("created", func(x source) time.Time { return x.sum.Task.Created }),
	text("rejected_at_commit", func(x source) string { return x.sum.Task.RejectedAt }),
	object("fields", func(x source) json.RawMessage { return x.fields }),
	text("path", func(x source) string { return gitstore.ViewDirName + "/" + x.sum.Path }), // branch paths are clean and slash-separated
	flag("ready", func(x source) bool { return x.ready }),
	text("problem", func(x source) string { return x.sum.Problem }),
}

// A Mask has a bit for each key of the task object.
var _ [64 - len(taskFields)]struct{}

func text(name string, get func(source) string) field {
	return field{name: name, key: "," + strconv.Quote(name) + ":", text: get}
}

func number(name string, get func(source) int) field {
	return field{name: name, key: "," + strconv.Quote(name) + ":", number: get}
}

func flag(name string, get func(source) bool) field {
	return field{name: name, key: "," + strconv.Quote(name) + ":", flag: get}
}

func when(name string, get func(source) time.Time) field {
	return field{name: name, key: "," + strconv.Quote(name) + ":", time: get}
}

func list(name string, get func(source) []string) field {
	return field{name: name, key: "," + strconv.Quote(name) + ":", list: get}
}

func object(name string, get func(source) json.RawMessage) field {
	return field{name: name, key: "," + strconv.Quote(name) + ":", object: get}
}

// appendValue writes the field's value as encoding/json writes value's.
func (f *field) appendValue(b []byte, x source) []byte {
	switch {
	case f.text != nil:
		return AppendString(b, f.text(x))
	case f.number != nil:
		return strconv.AppendInt(b, int64(f.number(x)), 10)
	case f.flag != nil:
		return strconv.AppendBool(b, f.flag(x))
	case f.time != nil:
		return AppendTime(b, f.time(x))
	case f.list != nil:
		l := f.list(x)
		if l == nil {
			return append(b, "[]"...)
		}
		return appendList(b, l)
	}
	return appendRaw(b, f.object(x))
}

// value is the field's value as encoding/json would be given it: the
// Go type of the task object's key (the JSON Schema's), and what a test
// compares appendValue with.
func (f *field) value(x source) any {
	switch {
	case f.text != nil:
		return f.text(x)
	case f.number != nil:
		return f.number(x)
	case f.flag != nil:
		return f.flag(x)
	case f.time != nil:
		return Time(f.time(x))
	case f.list != nil:
		if l := f.list(x); l != nil {
			return l
		}
		return []string{}
	}
	return f.object(x)
}

// Mask says which keys of a task object an answer shows: bit i for
// taskFields[i]; 0 shows them all.
type Mask uint64

// fieldsBit is the bit of the custom keys (fields).
var fieldsBit = taskBit("fields")

// ShowsFields says whether the task objects show their custom keys (which
// the caller reads only then: they cost a read of each file not cached).
func (m Mask) ShowsFields() bool { return m == 0 || m&fieldsBit != 0 }

// taskBit is the bit of the task key name (0 when the task has no such
// key).
func taskBit(name string) Mask {
	for i, f := range taskFields {
		if f.name == name {
			return 1 << i
		}
	}
	return 0
}

// TaskFieldNames are the keys of a task object, in order.
func TaskFieldNames() []string {
	out := make([]string, len(taskFields))
	for i, f := range taskFields {
		out[i] = f.name
	}
	return out
}

// MarshalJSON writes the task as AppendJSON does.
func (t Task) MarshalJSON() ([]byte, error) { return t.AppendJSON(nil), nil }

// AppendJSON writes the task object, cut to the keys of its mask, as
// encoding/json would write its keys' values, without reflection: `orch
// list --json` at 10,000 tasks spent most of its time in encoding/json.
// A test checks the two agree byte for byte.
func (t *Task) AppendJSON(b []byte) []byte {
	x := t.from()
	b = append(b, '{')
	start := len(b)
	for i := range taskFields {
		if t.mask != 0 && t.mask&(1<<i) == 0 {
			continue
		}
		f := &taskFields[i]
		key := f.key
		if len(b) == start {
			key = key[1:]
		}
		b = append(b, key...)
		b = f.appendValue(b, x)
	}
	return append(b, '}')
}

// Key is one key of an answer's JSON object: its name, the Go type its
// value is written from, and whether it may be left out (omitempty).
type Key struct {
	Name     string
	Type     reflect.Type
	Optional bool
}

// TaskKeys are the keys of the task object (for its JSON Schema).
func TaskKeys() []Key {
	zero := source{sum: &noSummary}
	out := make([]Key, len(taskFields))
	for i := range taskFields {
		out[i] = Key{Name: taskFields[i].name, Type: reflect.TypeOf(taskFields[i].value(zero))}
	}
	return out
}
