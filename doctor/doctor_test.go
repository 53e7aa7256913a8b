package doctor

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/workflow"
)

// doctorRepo makes a repository with orch set up and two tasks.
func doctorRepo(t *testing.T) (string, []string) {
	t.Helper()
	testgit.SetHome(t, "tester", "t@example.com")
	dir := testgit.EmptyRepo(t)
	e, err := workflow.Open(workflow.Options{Dir: dir, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Init(workflow.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, title := range []string{"One", "Two"} {
		r, err := e.New(workflow.NewTask{Title: title})
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

// treeState is every file under dir (.git included) with its content hash.
func treeState(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		out = append(out, fmt.Sprintf("%s %x", p, sha256.Sum256(b)))
		return nil
	})
	sort.Strings(out)
	return out
}

func statusOf(rep *Report) map[string]string {
	m := map[string]string{}
	for _, c := range rep.Checks {
		m[c.Check] = c.Status
	}
	return m
}

func TestDoctorHealthy(t *testing.T) {
	dir, _ := doctorRepo(t)
	before := treeState(t, dir)
	for _, fix := range []bool{false, true} {
		rep, err := Run(Options{Dir: dir, Actor: "tester", Fix: fix})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK || len(rep.Checks) != len(checkOrder) {
			t.Fatalf("fix=%v: %+v", fix, rep)
		}
		for i, c := range rep.Checks {
			if c.Check != checkOrder[i] || c.Status != StatusOK {
				t.Errorf("fix=%v: %+v", fix, c)
			}
		}
	}
	if after := treeState(t, dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatal("a healthy repository changed")
	}
}

// Problems of every kind --fix can repair: found without changing a byte
// (of the worktree or of .git), repaired by --fix, gone after.
func TestDoctorFindsThenFixes(t *testing.T) {
	dir, paths := doctorRepo(t)
	common := filepath.Join(dir, ".git")
	lock := filepath.Join(common, "refs", "heads", "orch.lock")
	os.WriteFile(lock, nil, 0o666)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(lock, old, old)
	os.WriteFile(filepath.Join(dir, ".orchestrator", "tasks", ".orch-tmp-42"), []byte("x"), 0o666)
	os.WriteFile(filepath.Join(common, "orch", "state"), []byte("garbage"), 0o666)
	os.Remove(filepath.Join(dir, ".orchestrator", filepath.FromSlash(paths[0])))
	os.WriteFile(filepath.Join(common, "info", "exclude"), nil, 0o666)
	tip := testgit.Git(t, dir, "rev-parse", "orch")

	before := treeState(t, dir)
	rep, err := Run(Options{Dir: dir, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if after := treeState(t, dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatal("doctor without --fix changed the repository")
	}
	want := map[string]string{CheckStaleLock: StatusProblem, CheckTempFiles: StatusProblem, CheckCache: StatusProblem,
		CheckView: StatusProblem, CheckExclude: StatusProblem, CheckStateBranch: StatusOK, CheckObjects: StatusOK,
		CheckConflicts: StatusOK, CheckCheckedOut: StatusOK}
	got := statusOf(rep)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if rep.OK || rep.Problems() != 5 {
		t.Fatalf("report: %+v", rep)
	}

	rep, err = Run(Options{Dir: dir, Actor: "tester", Fix: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("not fixed: %+v", rep)
	}
	for k, v := range want {
		if v == StatusProblem {
			v = StatusFixed
		}
		if got := statusOf(rep)[k]; got != v {
			t.Errorf("after --fix %s: %s, want %s", k, got, v)
		}
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Error("stale lock kept")
	}
	if _, err := os.Stat(filepath.Join(dir, ".orchestrator", filepath.FromSlash(paths[0]))); err != nil {
		t.Error("view file not restored")
	}
	if got := testgit.Git(t, dir, "rev-parse", "orch"); got != tip {
		t.Errorf("the branch moved: %s -> %s", tip, got)
	}
	rep, err = Run(Options{Dir: dir, Actor: "tester"})
	if err != nil || !rep.OK {
		t.Fatalf("second doctor: %+v %v", rep, err)
	}
}

// A problem --fix cannot repair stays a problem, and the report says so.
func TestDoctorUnfixable(t *testing.T) {
	dir, _ := doctorRepo(t)
	testgit.Git(t, dir, "worktree", "add", "-q", filepath.Join(dir, "..", "state-wt"), "orch")
	rep, err := Run(Options{Dir: dir, Actor: "tester", Fix: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || statusOf(rep)[CheckCheckedOut] != StatusProblem || rep.Problems() != 1 {
		t.Fatalf("report: %+v", rep)
	}
	for _, c := range rep.Checks {
		if c.Check == CheckCheckedOut && !strings.Contains(c.Hint, "switch --detach") {
			t.Errorf("hint: %q", c.Hint)
		}
	}
	err = &UnhealthyError{Problems: 1, Fixed: true}
	if !strings.Contains(err.Error(), "1 problem(s) remain") {
		t.Error(err)
	}
}
