package main

import (
	"reflect"
	"testing"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/workflow"
)

// orch stats --json prints workflow.ReviewStats as it is: every key, in its
// order, of its type, but recent, whose reviews carry their task object.
func TestStatsAnswerShowsReviewStats(t *testing.T) {
	got := answer.KeysOf(reflect.TypeFor[reviewStatsJSON]())
	want := answer.KeysOf(reflect.TypeFor[workflow.ReviewStats]())
	if len(got) != len(want) {
		t.Fatalf("reviews has %d keys, workflow.ReviewStats %d:\n%v\n%v", len(got), len(want), got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || (got[i].Type != want[i].Type) != (want[i].Name == "recent") {
			t.Errorf("key %d: %s %s, workflow.ReviewStats has %s %s", i, got[i].Name, got[i].Type, want[i].Name, want[i].Type)
		}
	}
}
