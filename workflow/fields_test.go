package workflow

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/statecache"
)

// TestTaskFieldsOf: the custom keys of tasks come with their summaries,
// follow a changed file (a new blob), and come back the same when the
// state cache is gone and rebuilt from the branch.
func TestTaskFieldsOf(t *testing.T) {
	dir := fieldsRepo(t)
	priv := filepath.Join(dir, ".git", "orch")
	// A person adds custom keys to one task in the view.
	view := filepath.Join(dir, gitstore.ViewDirName, gitstore.TasksDir)
	ents, err := os.ReadDir(view)
	if err != nil {
		t.Fatal(err)
	}
	custom := filepath.Join(view, ents[3].Name())
	addKey := func(line string) {
		t.Helper()
		b, err := os.ReadFile(custom)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(b), "\n---\n", "\n"+line+"\n---\n", 1)
		if err := os.WriteFile(custom, []byte(s), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	addKey("estimate: 3")
	check := func(want string) {
		t.Helper()
		e, err := Open(Options{Dir: dir, Actor: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		sums := e.Store.Summaries()
		if len(sums) != 22 {
			t.Fatalf("%d tasks, want 22", len(sums))
		}
		got := map[string]string{}
		for i, f := range e.TaskFieldsOf(sums) {
			got[filepath.Base(sums[i].Path)] = string(f)
			if one := string(e.TaskFields(sums[i])); one != string(f) {
				t.Errorf("%s: TaskFieldsOf %s, TaskFields %s", sums[i].Path, f, one)
			}
		}
		for name, f := range got {
			w := "{}"
			if name == ents[3].Name() {
				w = want
			}
			if f != w {
				t.Errorf("%s: fields %s, want %s", name, f, w)
			}
		}
		left, _ := filepath.Glob(filepath.Join(priv, statecache.TempPrefix+"*"))
		if len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
	}
	check(`{"estimate":3}`)
	check(`{"estimate":3}`) // from the state cache
	addKey("team: [web, \"<api>\"]")
	check(`{"estimate":3,"team":["web","\u003capi\u003e"]}`)
	// With the state cache gone, the store parses every task file to build
	// its summaries, and the custom keys come from that parse.
	for _, name := range []string{"state", "state.journal"} {
		if err := os.Remove(filepath.Join(priv, name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	check(`{"estimate":3,"team":["web","\u003capi\u003e"]}`)
}

// fieldsRepo is a repository with twenty tasks, without custom keys.
func fieldsRepo(t *testing.T) string {
	t.Helper()
	dir, _ := doctorRepo(t)
	e, err := Open(Options{Dir: dir, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := e.New(NewTask{Title: "Task " + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
