package main

import (
	"encoding/json"
	"testing"
	"time"
)

// The hand-written encoder must agree with encoding/json byte for byte.
func TestTaskJSONMatchesEncodingJSON(t *testing.T) {
	when := time.Date(2026, 2, 6, 10, 0, 0, 123000000, time.UTC)
	cases := []taskJSON{
		{},
		{ID: "T-4k9x2m", Title: "Snap <fork> & \"start\"\n\t\\ \u2028 \x01 é 日本", Queue: "claimed", Priority: "P1", Role: "implementer",
			Branch: "task/x", BaseBranch: "main", PRNumber: 48, RejectionCount: 2, NoProgress: 1, Attempts: 3, ClaimedBy: "agent-a",
			ClaimedAt: when, SubmittedBy: "b", AssignedTo: "c", LockedOut: []string{"a", "b<"}, DependsOn: []string{"T-1"}, Labels: []string{"x"},
			Created: when.Add(time.Hour), Path: ".orchestrator/tasks/x.md", Ready: true, Problem: "bad \xff utf8"},
		{ID: "T-1", Title: "plain", Queue: "incoming", Priority: "P2", Path: "p", Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for i, c := range cases {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.appendJSON(nil); string(got) != string(want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
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
