package workflow

import (
	"testing"

	"github.com/orch-tool/orch/internal/testgit"
)

// doctorRepo makes a repository with orch set up and two tasks.
func doctorRepo(t *testing.T) (string, []string) {
	t.Helper()
	testgit.SetHome(t, "tester", "t@example.com")
	dir := testgit.EmptyRepo(t)
	e, err := Open(Options{Dir: dir, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Init(InitOptions{}); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, title := range []string{"One", "Two"} {
		r, err := e.New(NewTask{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, r.Task.Path)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, paths
}
