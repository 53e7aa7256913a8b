package workflow

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orch-tool/orch/internal/testgit"
)

// doctorGit and doctorRepo were orch doctor's helpers (package doctor has
// its own copies now); workflow's tests build their repositories on them.

// doctorGit runs git in dir and returns its output, trimmed.
func doctorGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// doctorRepo makes a repository with orch set up and two tasks.
func doctorRepo(t *testing.T) (string, []string) {
	t.Helper()
	env, err := testgit.Home(t.TempDir(), "tester", "t@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	doctorGit(t, dir, "init", "-q")
	doctorGit(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
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
