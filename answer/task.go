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
// it can be claimed, and why its file is invalid (problem); its keys are
// those visit goes through. It reads its summary when it is written: a
// verb that changes the summary in between (archive) gives it a copy.
type Task struct {
	src  source
	mask Mask // the keys --json=FIELDS asked for (0: all)
}

// source is what a task object is written from.
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

// visit goes through the task object's keys, in order, each with its
// value: the one list of them. The encoder, the names --json=FIELDS takes
// and the task in docs/schema/ all come from it. The visitor is a concrete
// type, so that writing every task calls no function through a value.
func (x source) visit(v *visitor) {
	t := &x.sum.Task
	v.text("id", t.ID)
	v.text("title", t.Title)
	v.text("queue", string(t.Queue))
	v.text("priority", t.Priority)
	v.text("role", t.Role)
	v.text("branch", t.Branch)
	v.text("base_branch", t.BaseBranch)
	v.number("pr_number", t.PRNumber)
	v.number("rejection_count", t.RejectionCount)
	v.number("no_progress_count", t.NoProgress)
	v.number("attempts", t.Attempts)
	v.text("claimed_by", t.ClaimedBy)
	v.time("claimed_at", t.ClaimedAt)
	v.time("heartbeat_at", t.HeartbeatAt)
	v.text("submitted_by", t.SubmittedBy)
	v.time("submitted_at", t.SubmittedAt)
	v.text("assigned_to", t.AssignedTo)
	v.list("locked_out", t.LockedOut)
	v.list("worked_by", t.WorkedBy)
	v.list("github_reviews", t.GitHubReviews)
	v.list("depends_on", t.DependsOn)
	v.list("labels", t.Labels)
	v.time("created", t.Created)
	v.time("finished_at", t.FinishedAt)
	v.text("rejected_at_commit", t.RejectedAt)
	v.number("crashes", t.Crashes)
	v.text("review_claimed_by", t.ReviewClaimedBy)
	v.time("review_claimed_at", t.ReviewClaimedAt)
	v.number("review_attempts", t.ReviewAttempts)
	v.time("approved_at", t.ApprovedAt)
	v.text("approved_commit", t.ApprovedCommit)
	v.text("landed_commit", t.LandedCommit)
	v.number("land_failures", t.LandFailures)
	v.text("checked_commit", t.CheckedCommit)
	v.object("fields", x.fields)
	v.viewPath("path", x.sum.Path)
	v.flag("ready", x.ready)
	v.flag("archived", gitstore.IsArchivePath(x.sum.Path))
	v.text("problem", x.sum.Problem)
}

// visitor writes the keys visit goes through, those of its mask, or, to
// describe the task object, keeps each key's value as encoding/json would
// be given it.
type visitor struct {
	b       []byte
	keys    []string // keyText (handed in: it is made from what visit describes)
	mask    Mask
	i       int      // the key being visited
	written int      // the keys written
	values  *[]value // describing: the keys and their values (nil: writing)
}

// value is one key of the task object and its value as encoding/json
// would be given it (its Go type is the JSON Schema's).
type value struct {
	name string
	v    any
}

// key starts the next key, and says whether to write its value.
func (v *visitor) key() bool {
	i := v.i
	v.i++
	if v.mask != 0 && v.mask&(1<<i) == 0 {
		return false
	}
	k := v.keys[i]
	if v.written == 0 {
		k = k[1:]
	}
	v.written++
	v.b = append(v.b, k...)
	return true
}

func (v *visitor) describe(name string, x any) { *v.values = append(*v.values, value{name, x}) }

func (v *visitor) text(name, s string) {
	if v.values != nil {
		v.describe(name, s)
	} else if v.key() {
		v.b = AppendString(v.b, s)
	}
}

// viewPath is the view's path of a branch path (clean and slash-separated),
// written without joining the two: list --json made a string per task.
func (v *visitor) viewPath(name, p string) {
	if v.values != nil {
		v.describe(name, gitstore.ViewDirName+"/"+p)
	} else if v.key() {
		v.b = append(v.b, '"')
		v.b = appendEscaped(v.b, gitstore.ViewDirName+"/")
		v.b = appendEscaped(v.b, p)
		v.b = append(v.b, '"')
	}
}

func (v *visitor) number(name string, n int) {
	if v.values != nil {
		v.describe(name, n)
	} else if v.key() {
		v.b = strconv.AppendInt(v.b, int64(n), 10)
	}
}

func (v *visitor) flag(name string, f bool) {
	if v.values != nil {
		v.describe(name, f)
	} else if v.key() {
		v.b = strconv.AppendBool(v.b, f)
	}
}

// time is a time: null when unset.
func (v *visitor) time(name string, t time.Time) {
	if v.values != nil {
		v.describe(name, Time(t))
	} else if v.key() {
		v.b = appendTime(v.b, t)
	}
}

// list is a list of strings: [] when empty, never null.
func (v *visitor) list(name string, l []string) {
	if l == nil {
		l = []string{}
	}
	if v.values != nil {
		v.describe(name, l)
	} else if v.key() {
		v.b = appendList(v.b, l)
	}
}

// object is JSON made by encoding/json.
func (v *visitor) object(name string, raw json.RawMessage) {
	if v.values != nil {
		v.describe(name, raw)
	} else if v.key() {
		v.b = appendRaw(v.b, raw)
	}
}

// values are the task object's keys, in order, with their values.
func (x source) values() []value {
	var out []value
	x.visit(&visitor{values: &out})
	return out
}

// taskKeys are the task object's keys, in order.
var taskKeys = source{sum: &noSummary}.values()

// keyText is `,"name":` for each key.
var keyText = func() []string {
	if len(taskKeys) > 64 {
		panic("a Mask has 64 bits, and the task object more keys")
	}
	out := make([]string, len(taskKeys))
	for i, k := range taskKeys {
		out[i] = "," + strconv.Quote(k.name) + ":"
	}
	return out
}()

// Mask says which keys of a task object an answer shows: bit i for
// the task object's key i (taskKeys[i]); 0 shows them all.
type Mask uint64

// fieldsBit is the bit of the custom keys (fields).
var fieldsBit = taskBit("fields")

// ShowsFields says whether the task objects show their custom keys (which
// the caller reads only then: they cost a read of each file not cached).
func (m Mask) ShowsFields() bool { return m == 0 || m&fieldsBit != 0 }

// taskBit is the bit of the task key name (0 when the task has no such
// key).
func taskBit(name string) Mask {
	for i, k := range taskKeys {
		if k.name == name {
			return 1 << i
		}
	}
	return 0
}

// TaskFieldNames are the keys of a task object, in order.
func TaskFieldNames() []string {
	out := make([]string, len(taskKeys))
	for i, k := range taskKeys {
		out[i] = k.name
	}
	return out
}

// MarshalJSON writes the task as AppendJSON does.
func (t Task) MarshalJSON() ([]byte, error) { return t.AppendJSON(nil), nil }

// AppendJSON writes the task object, cut to the keys of its mask, as
// encoding/json would write its keys' values, without reflection: `orch
// list --json` spent most of its time in encoding/json.
// A test checks the two agree byte for byte.
func (t *Task) AppendJSON(b []byte) []byte {
	v := visitor{b: append(b, '{'), keys: keyText, mask: t.mask}
	t.from().visit(&v)
	return append(v.b, '}')
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
	out := make([]Key, len(taskKeys))
	for i, k := range taskKeys {
		out[i] = Key{Name: k.name, Type: reflect.TypeOf(k.v)}
	}
	return out
}
