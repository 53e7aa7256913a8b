package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// plainTask is taskJSON without its MarshalJSON: what encoding/json makes
// of its fields by reflection.
type plainTask taskJSON

func taskCases() []taskJSON {
	when := jsonTime(time.Date(2026, 2, 6, 10, 0, 0, 123456789, time.UTC))
	east := jsonTime(time.Date(2026, 2, 6, 12, 0, 0, 0, time.FixedZone("EET", 2*3600)))
	return []taskJSON{
		{},
		{ID: "T-4k9x2m", Title: "Snap <fork> & \"start\"\n\t\\ \u2028 \x01 é 日本", Queue: "claimed", Priority: "P1", Role: "implementer",
			Branch: "task/x", BaseBranch: "main", PRNumber: 48, RejectionCount: 2, NoProgress: 1, Attempts: 3, ClaimedBy: "agent-a",
			ClaimedAt: when, SubmittedBy: "b", SubmittedAt: east, AssignedTo: "c", LockedOut: []string{"a", "b<"}, WorkedBy: []string{"a"},
			GitHubReviews: []string{"123"}, DependsOn: []string{"T-1"}, Labels: []string{"x"}, Created: jsonTime(time.Time(when).Add(time.Hour)),
			RejectedAt: "0123abcd", Fields: []byte(`{"custom_field":"kept \u003c","n":3,"l":[1,{"a":null}]}`),
			Path: ".orchestrator/tasks/x.md", Ready: true, Problem: "bad \xff utf8"},
		{ID: "T-1", Title: "plain", Queue: "incoming", Priority: "P2", Path: "p", Created: jsonTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
			LockedOut: noStrings, WorkedBy: noStrings, GitHubReviews: noStrings, DependsOn: noStrings, Labels: noStrings, Fields: []byte(`{}`)},
	}
}

// The hand-written encoder must agree with encoding/json byte for byte.
func TestTaskJSONMatchesEncodingJSON(t *testing.T) {
	for i, c := range taskCases() {
		want, err := json.Marshal(plainTask(c))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.appendJSON(nil); string(got) != string(want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
		// MarshalJSON (a task inside any answer) is the same encoder.
		if got, err := json.Marshal(c); err != nil || string(got) != string(want) {
			t.Errorf("case %d: json.Marshal:\n got %s (%v)\nwant %s", i, got, err, want)
		}
	}
}

// --json=FIELDS cuts a task to the fields asked for, in the task's order.
func TestTaskJSONFields(t *testing.T) {
	for _, list := range []string{"id", "title,id", "fields,created,ready", "problem", strings.Join(taskFieldNames, ",")} {
		var m taskMask
		for _, f := range strings.Split(list, ",") {
			m |= 1 << slices.Index(taskFieldNames, f)
		}
		for i, c := range taskCases() {
			full, _ := json.Marshal(plainTask(c))
			var all map[string]json.RawMessage
			if err := json.Unmarshal(full, &all); err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			want.WriteByte('{')
			n := 0
			for _, f := range taskFieldNames {
				if strings.Contains(","+list+",", ","+f+",") {
					if n > 0 {
						want.WriteByte(',')
					}
					n++
					fmt.Fprintf(&want, "%q:%s", f, all[f])
				}
			}
			want.WriteByte('}')
			c.mask = m
			if got := c.appendJSON(nil); string(got) != want.String() {
				t.Errorf("--json %s, case %d:\n got %s\nwant %s", list, i, got, want.String())
			}
		}
	}
}

// taskFieldNames lists taskJSON's json keys, in order.
func TestTaskFieldNames(t *testing.T) {
	var tags []string
	rt := reflect.TypeOf(taskJSON{})
	for i := 0; i < rt.NumField(); i++ {
		if tag := rt.Field(i).Tag.Get("json"); tag != "" && tag != "-" {
			tags = append(tags, strings.Split(tag, ",")[0])
		}
	}
	if !slices.Equal(tags, taskFieldNames) {
		t.Errorf("taskFieldNames = %v\ntaskJSON's keys = %v", taskFieldNames, tags)
	}
}

func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "<>&", "\u2028\u2029", "\xff\xfe", "\"\\\n\r\t\b\f\x00\x1f", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
	})
}
