package workflow

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/orch-tool/orch/gitstore"
)

// The state cache writes its base file's summaries in orch list's order,
// so that list --json reads the file front to back (statecache's
// cmpListOrder, which does not know workflow): the two orders must agree,
// over queues, priorities and ages.
func TestBaseInListOrder(t *testing.T) {
	dir, _ := doctorRepo(t)
	e, err := Open(Options{Dir: dir, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	prios := []string{"P0", "P3", "low", "critical", "", "P1"}
	var ids []string
	for i := 0; i < 24; i++ {
		r, err := e.New(NewTask{Title: "Task " + string(rune('a'+i)), Priority: prios[i%len(prios)]})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Task.Task.ID)
	}
	for i, id := range ids {
		switch i % 4 {
		case 1:
			if _, err := e.Claim(ClaimOptions{Task: id}); err != nil {
				t.Fatal(err)
			}
		case 2:
			if _, err := e.Fail(id, "not part of this test"); err != nil {
				t.Fatal(err)
			}
		}
	}
	priv := e.Store.PrivDir()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// A new base file: the cache rebuilt from the branch.
	os.Remove(filepath.Join(priv, "state"))
	os.Remove(filepath.Join(priv, "state.journal"))
	for round := 0; round < 2; round++ {
		e, err := Open(Options{Dir: dir, Actor: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		list, err := e.ListHeaders(ListFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var file []string
		e.Store.EachSummaryHeaderIn(nil, func(h *gitstore.SummaryHeader) { file = append(file, h.ID) })
		var listed []string
		for _, h := range list {
			listed = append(listed, h.ID)
		}
		if round == 1 && !slices.Equal(file, listed) {
			t.Errorf("the state cache stores\n%v\norch list gives\n%v", file, listed)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
