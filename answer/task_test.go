package answer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

func taskCases() []Task {
	when := time.Date(2026, 2, 6, 10, 0, 0, 123456789, time.UTC)
	east := time.Date(2026, 2, 6, 12, 0, 0, 0, time.FixedZone("EET", 2*3600))
	return []Task{
		{}, // the zero Task: as a task with nothing set
		NewTask(&gitstore.Summary{Path: "tasks/x.md", Problem: "bad \xff utf8", Task: taskfile.Task{
			ID: "T-4k9x2m", Title: "Snap <fork> & \"start\"\n\t\\ \u2028 \x01 é 日本", Queue: "claimed", Priority: "P1", Role: "implementer",
			Branch: "task/x", BaseBranch: "main", PRNumber: 48, RejectionCount: 2, NoProgress: 1, Attempts: 3, ClaimedBy: "agent-a",
			ClaimedAt: when, SubmittedBy: "b", SubmittedAt: east, AssignedTo: "c", LockedOut: []string{"a", "b<"}, WorkedBy: []string{"a"},
			GitHubReviews: []string{"123"}, DependsOn: []string{"T-1"}, Labels: []string{"x"}, Created: when.Add(time.Hour),
			RejectedAt: "0123abcd"}}, true, []byte(`{"custom_field":"kept \u003c","n":3,"l":[1,{"a":null}]}`), 0),
		NewTask(&gitstore.Summary{Path: "p", Task: taskfile.Task{ID: "T-1", Title: "plain", Queue: "incoming", Priority: "P2",
			Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Labels: []string{}}}, false, []byte(`{}`), 0),
	}
}

// encodingJSON is the task object as encoding/json writes each key's
// value, in the keys' order.
func encodingJSON(t *testing.T, task Task, keep func(name string) bool) string {
	var b strings.Builder
	b.WriteByte('{')
	for _, k := range task.from().values() {
		if !keep(k.name) {
			continue
		}
		v, err := json.Marshal(k.v)
		if err != nil {
			t.Fatal(err)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", k.name, v)
	}
	b.WriteByte('}')
	return b.String()
}

// The encoder writes each value as encoding/json does.
func TestTaskMatchesEncodingJSON(t *testing.T) {
	all := func(string) bool { return true }
	for i, c := range taskCases() {
		want := encodingJSON(t, c, all)
		if got := c.AppendJSON(nil); string(got) != want {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
		// MarshalJSON (a task inside any answer) is the same encoder.
		if got, err := json.Marshal(c); err != nil || string(got) != want {
			t.Errorf("case %d: json.Marshal:\n got %s (%v)\nwant %s", i, got, err, want)
		}
	}
}

// The task object's keys, their order and how each is written, as
// docs/json.md and docs/schema/ promise them.
func TestTaskObject(t *testing.T) {
	got := taskCases()[2].AppendJSON(nil)
	want := `{"id":"T-1","title":"plain","queue":"incoming","priority":"P2","role":"","branch":"","base_branch":"",` +
		`"pr_number":0,"rejection_count":0,"no_progress_count":0,"attempts":0,"claimed_by":"","claimed_at":null,` +
		`"heartbeat_at":null,"submitted_by":"","submitted_at":null,"assigned_to":"","locked_out":[],"worked_by":[],` +
		`"github_reviews":[],"depends_on":[],"labels":[],"created":"2026-01-01T00:00:00.000Z","finished_at":null,"rejected_at_commit":"",` +
		`"crashes":0,"review_claimed_by":"","review_claimed_at":null,"review_attempts":0,"approved_at":null,"approved_commit":"","landed_commit":"","land_failures":0,"checked_commit":"","fields":{},"path":".orchestrator/p","ready":false,"archived":false,"problem":""}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// --json=FIELDS cuts a task to the fields asked for, in the task's order.
func TestTaskFields(t *testing.T) {
	for _, names := range []string{"id", "title,id", "fields,created,ready", "problem", strings.Join(TaskFieldNames(), ",")} {
		var m Mask
		for _, n := range strings.Split(names, ",") {
			if taskBit(n) == 0 {
				t.Fatalf("%s: no such key", n)
			}
			m |= taskBit(n)
		}
		keep := func(name string) bool { return strings.Contains(","+names+",", ","+name+",") }
		for i, c := range taskCases() {
			want := encodingJSON(t, c, keep)
			c.mask = m
			if got := c.AppendJSON(nil); string(got) != want {
				t.Errorf("--json=%s, case %d:\n got %s\nwant %s", names, i, got, want)
			}
		}
	}
	if (Mask(0)).ShowsFields() != true || taskBit("id").ShowsFields() || !(taskBit("id") | taskBit("fields")).ShowsFields() {
		t.Error("ShowsFields: the custom keys are read only for an answer that shows them")
	}
}

func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "<>&", "\u2028\u2029", "\xff\xfe", "\"\\\n\r\t\b\f\x00\x1f", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
	})
}
