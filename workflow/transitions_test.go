package workflow

import (
	"strings"
	"testing"

	"github.com/orch-tool/orch/taskfile"
)

// The table's To column binds the code: a verb whose change would move a
// task to a queue its row does not list is refused, and nothing is
// committed.
func TestTransitionToColumnEnforced(t *testing.T) {
	dir, ids := scopeRepo(t, "base_branch: main\n", map[string][]string{"API": nil})
	id := ids["API"]
	e := openAs(t, dir, "lead", false)
	defer e.Close()
	before := e.Store.Snapshot().Tip
	_, err := e.transition(id, "approve", func(t *Task) (*change, error) {
		return &change{file: t.File, to: taskfile.Rejected}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "approve would move "+id+" from provisional to rejected, which the transition table does not allow (it allows done, approved)") {
		t.Fatalf("got %v", err)
	}
	if e.Store.Snapshot().Tip != before {
		t.Error("a commit was made")
	}
	// What the row lists passes.
	if _, err := e.transition(id, "approve", func(t *Task) (*change, error) {
		return &change{file: t.File, to: taskfile.Done}, nil
	}); err != nil {
		t.Fatal(err)
	}
}
