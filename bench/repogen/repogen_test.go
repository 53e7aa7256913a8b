package repogen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	dir, env, gitRaw := gitIn(t)
	git := func(args ...string) string { t.Helper(); return strings.TrimSpace(gitRaw(args...)) }
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

// Finished tasks are done, finished FinishedAgo before Now (finished_at
// parses), and depend on nothing; with OpenOnly every other task is in an
// open queue, and every open queue is represented.
func TestGenerateFinishedOpenOnly(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir, env, git := gitIn(t)
	git("init", "-q", "-b", "main")
	now := time.Date(2026, 11, 1, 10, 0, 0, 123e6, time.UTC)
	const total, finished = 500, 100
	res, err := Generate(dir, Options{Tasks: total, Finished: finished, OpenOnly: true, Commits: 30, Now: now, Validate: true, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != total {
		t.Fatalf("%d tasks, want %d", len(res.Tasks), total)
	}
	open := map[taskfile.Queue]bool{taskfile.Incoming: true, taskfile.Claimed: true, taskfile.Provisional: true, taskfile.Rejected: true,
		taskfile.NeedsContinuation: true, taskfile.Blocked: true, taskfile.Escalated: true}
	counts := map[taskfile.Queue]int{}
	finishedIDs := map[string]bool{}
	for i, tk := range res.Tasks {
		counts[tk.Queue]++
		if i < finished {
			finishedIDs[tk.ID] = true
			if tk.Queue != taskfile.Done {
				t.Errorf("task %d (%s) is %s, want done", i, tk.ID, tk.Queue)
			}
		} else if !open[tk.Queue] {
			t.Errorf("task %d (%s) is %s, want an open queue", i, tk.ID, tk.Queue)
		}
	}
	if counts[taskfile.Done] != finished {
		t.Errorf("%d done tasks, want %d", counts[taskfile.Done], finished)
	}
	for q := range open {
		if counts[q] == 0 {
			t.Errorf("no task in %s: %v", q, counts)
		}
	}
	// incoming is 30 of the open mix's 60.
	if n := counts[taskfile.Incoming]; n < 150 || n > 250 {
		t.Errorf("%d incoming tasks of %d open, want about half: %v", n, total-finished, counts)
	}

	// Every task file in one git cat-file --batch.
	var req strings.Builder
	for _, tk := range res.Tasks {
		req.WriteString("refs/heads/orch:" + tk.Path + "\n")
	}
	cat := exec.Command("git", "cat-file", "--batch")
	cat.Dir = dir
	cat.Env = env
	cat.Stdin = strings.NewReader(req.String())
	out, err := cat.Output()
	if err != nil {
		t.Fatalf("git cat-file --batch: %v", err)
	}
	rd := bufio.NewReader(bytes.NewReader(out))
	wantFinished := now.Add(-FinishedAgo).Truncate(time.Millisecond)
	depsOnFinished := 0
	for i, tk := range res.Tasks {
		var sha, typ string
		var size int
		if _, err := fmt.Fscanf(rd, "%s %s %d\n", &sha, &typ, &size); err != nil {
			t.Fatalf("git cat-file --batch, %s: %v", tk.Path, err)
		}
		buf := make([]byte, size+1)
		if _, err := io.ReadFull(rd, buf); err != nil {
			t.Fatal(err)
		}
		data := string(buf[:size])
		f, err := taskfile.Parse(tk.Path, []byte(data))
		if err != nil {
			t.Fatalf("%s: %v", tk.Path, err)
		}
		task := f.Task
		if i >= finished {
			if !task.FinishedAt.IsZero() {
				t.Errorf("open task %s has finished_at %v", tk.ID, task.FinishedAt)
			}
			for _, d := range task.DependsOn {
				if finishedIDs[d] {
					depsOnFinished++
				}
			}
			continue
		}
		if !strings.Contains(data, "\nfinished_at: ") {
			t.Errorf("%s has no finished_at line:\n%s", tk.Path, data)
		}
		if !task.FinishedAt.Equal(wantFinished) {
			t.Errorf("%s: finished_at %v, want %v", tk.ID, task.FinishedAt, wantFinished)
		}
		if len(task.DependsOn) > 0 {
			t.Errorf("finished task %s depends on %v", tk.ID, task.DependsOn)
		}
		if !task.Created.Before(task.ClaimedAt) || !task.ClaimedAt.Before(task.SubmittedAt) || !task.SubmittedAt.Before(task.FinishedAt) {
			t.Errorf("%s: times out of order: created %v, claimed %v, submitted %v, finished %v", tk.ID, task.Created, task.ClaimedAt, task.SubmittedAt, task.FinishedAt)
		}
	}
	if depsOnFinished == 0 {
		t.Error("no open task depends on a finished one")
	}
}

// gitIn is a fresh directory, an environment with a git identity of its
// own, and a git runner there that fails the test on error (its output
// untrimmed).
func gitIn(t *testing.T) (string, []string, func(args ...string) string) {
	t.Helper()
	dir := t.TempDir()
	home, err := testgit.Home(t.TempDir(), "tester", "tester@example.com")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), home...)
	return dir, env, func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
