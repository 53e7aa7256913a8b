package repogen

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orch-tool/orch/taskfile"

	"github.com/orch-tool/orch/internal/testgit"
)

// TestGenerate writes a small realistic repository (every file validated
// by the taskfile package), then appends seeded tasks, and checks the
// result with git itself.
func TestGenerate(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	home, err := testgit.Home(t.TempDir(), "tester", "tester@example.com")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), home...)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	res, err := Generate(dir, Options{Tasks: 300, Commits: 40, Main: true, Validate: true, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 300 {
		t.Fatalf("%d tasks, want 300", len(res.Tasks))
	}
	seen := map[taskfile.Queue]bool{}
	for _, tk := range res.Tasks {
		seen[tk.Queue] = true
	}
	for _, q := range []taskfile.Queue{taskfile.Incoming, taskfile.Claimed, taskfile.Provisional, taskfile.Rejected, taskfile.Done} {
		if !seen[q] {
			t.Errorf("no task in %s", q)
		}
	}
	if n := git("rev-list", "--count", "refs/heads/orch"); n != "40" {
		t.Errorf("state branch has %s commits, want 40", n)
	}
	if n := len(strings.Fields(git("ls-tree", "--name-only", "refs/heads/orch", "tasks/"))); n != 300 {
		t.Errorf("state branch holds %d task files, want 300", n)
	}
	rej := res.ByQueue(taskfile.Rejected)[0]
	var path string
	for _, tk := range res.Tasks {
		if tk.ID == rej {
			path = tk.Path
		}
	}
	if body := git("show", "refs/heads/orch:"+path); !strings.Contains(body, "## Review Feedback (rejection #1)") {
		t.Errorf("rejected task %s has no review feedback:\n%s", rej, body)
	}
	git("rev-parse", "--verify", "refs/heads/main")

	more, err := Generate(dir, Options{Tasks: 50, Commits: 1, Append: true, Queue: taskfile.Incoming, Seed: 7, Validate: true, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if len(more.ByQueue(taskfile.Incoming)) != 50 {
		t.Errorf("appended %d incoming tasks, want 50", len(more.ByQueue(taskfile.Incoming)))
	}
	if n := len(strings.Fields(git("ls-tree", "--name-only", "refs/heads/orch", "tasks/"))); n != 350 {
		t.Errorf("state branch holds %d task files after appending, want 350", n)
	}
	git("fsck", "--strict", "--no-progress")

	if err := res.WriteManifest(filepath.Join(dir, ".git", "bench")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".git", "bench", "rejected.txt"))
	if err != nil || !strings.HasPrefix(string(b), rej+"\n") {
		t.Errorf("manifest rejected.txt = %q, %v", b, err)
	}
}

// A git fast-import that fails is reported with its error and what it
// said, and without a "<nil>" for the write that did not fail.
func TestGenerateFastImportFails(t *testing.T) {
	git := filepath.Join(t.TempDir(), "git")
	script := "#!/bin/sh\ncat >/dev/null\necho 'fatal: no room' >&2\nexit 3\n"
	if err := os.WriteFile(git, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(t.TempDir(), Options{Tasks: 3, Commits: 1, Git: git})
	if err == nil {
		t.Fatal("Generate succeeded with a failing git fast-import")
	}
	msg := err.Error()
	if !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, "fatal: no room") || strings.Contains(msg, "<nil>") {
		t.Errorf("error %q: want git's exit status and message, and no <nil>", msg)
	}
}
