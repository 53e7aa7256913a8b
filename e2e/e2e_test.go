package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orch-tool/orch/taskfile"
)

// newWorker is one `orch new --json` run by a worker, decoded.
type newWorker struct {
	res Result
	out NewOutput
	err error
}

// runNewRace has one worker per worktree in wts run `orch new --json` iters
// times, all at once, and returns the decoded outputs.
func runNewRace(r *Repo, wts []string, iters int) []newWorker {
	results := Flatten(RunWorkers(len(wts), iters, func(w, i int) Result {
		return r.Orch(wts[w], "new", fmt.Sprintf("Task %d from worker %d", i, w), "--json", "--agent", fmt.Sprintf("worker-%d", w), "--label", "e2e")
	}))
	out := make([]newWorker, len(results))
	for k, res := range results {
		out[k].res = res
		if res.OK() {
			out[k].err = res.JSON(&out[k].out)
		}
	}
	return out
}

// TestConcurrentNewBesideGitCommits: 8 orch processes (one per linked
// worktree) each create 50 tasks at once, while the git CLI commits in a
// loop on another branch in another worktree. Nothing may be lost,
// duplicated, or leak into a worktree, an index or main.
func TestConcurrentNewBesideGitCommits(t *testing.T) {
	workers, iters, gitCommits := scale(8, 4), scale(50, 10), scale(100, 20)
	r := NewRepo(t)
	mainBefore := r.RevParse("main")
	gitWT := r.AddWorktree("git-wt", "side")
	sideBase := r.RevParse("side")
	agentWTs := r.AddWorktrees("agent-wt-", workers)

	// The git user: one commit per step on branch side, at least gitCommits
	// of them, going on for as long as the orch workers run.
	git := r.StartGitCommitter(gitWT, gitCommits)
	gitLoop := git.Loop
	t.Cleanup(func() { gitLoop.Stop() })
	news := runNewRace(r, agentWTs, iters)
	StopAll(t, gitLoop)
	_, gitFails := gitLoop.Stop()
	if len(gitFails) > 0 {
		t.Errorf("%d git commits failed beside orch; first: %s", len(gitFails), gitFails[0])
	}

	total := workers * iters
	// Every orch new succeeded, with a well-formed answer.
	ids := map[string]bool{}
	commitOf := map[string]string{} // commit -> task id
	for _, nw := range news {
		if !nw.res.OK() || nw.err != nil {
			t.Errorf("orch new failed: %v %v", nw.res, nw.err)
			continue
		}
		id := nw.out.Task.ID
		if ids[id] {
			t.Errorf("orch new printed the ID %s twice", id)
		}
		ids[id] = true
		if prev, dup := commitOf[nw.out.Commit]; dup {
			t.Errorf("orch new answered commit %s for both %s and %s", nw.out.Commit, prev, id)
		}
		commitOf[nw.out.Commit] = id
	}
	if t.Failed() {
		t.FailNow()
	}

	// Exactly the tasks created, each once.
	tasks := r.List()
	if len(tasks) != total {
		t.Errorf("orch list: %d tasks, want %d", len(tasks), total)
	}
	listed := map[string]bool{}
	for _, tk := range tasks {
		if listed[tk.ID] {
			t.Errorf("orch list shows %s twice", tk.ID)
		}
		listed[tk.ID] = true
		if !ids[tk.ID] {
			t.Errorf("orch list shows %s, which no orch new printed", tk.ID)
		}
		if tk.Problem != "" || tk.Queue != "incoming" {
			t.Errorf("task %s: queue %q, problem %q", tk.ID, tk.Queue, tk.Problem)
		}
	}

	// The state branch: init + one `new` commit per task, in one line, each
	// commit the one its orch new reported.
	log := r.StateLog()
	r.CheckLinear(log)
	if len(log) != total+1 {
		t.Errorf("state branch has %d commits, want %d (init + %d new)", len(log), total+1, total)
	}
	nNew := 0
	for _, c := range log {
		switch c.Action {
		case "new":
			nNew++
			if want, ok := commitOf[c.Hash]; !ok || want != c.Task {
				t.Errorf("state commit %s (Orch-Task %s) was reported by no orch new for that task (reported for %q)", c.Hash[:10], c.Task, want)
			}
		case "init":
		default:
			t.Errorf("unexpected state commit %s: action %q, %s", c.Hash[:10], c.Action, c.Subject)
		}
	}
	if nNew != total {
		t.Errorf("state branch has %d new commits, want %d", nNew, total)
	}
	if log[len(log)-1].Action != "init" {
		t.Errorf("the first state commit is %q, want the init commit", log[len(log)-1].Subject)
	}

	// The git user's commits are all on side, in order, and nothing else is.
	made := git.Made()
	if len(made) < gitCommits {
		t.Errorf("the git loop made %d commits, want at least %d", len(made), gitCommits)
	}
	onSide := strings.Split(r.Git(r.Main, "log", "--reverse", "--format=%s", "side", "^"+sideBase), "\n")
	if strings.Join(onSide, "|") != strings.Join(made, "|") {
		t.Errorf("side holds %d new commits, the git loop made %d; they differ", len(onSide), len(made))
	}

	// main, the worktrees, the view and the object store.
	if got := r.RevParse("main"); got != mainBefore {
		t.Errorf("main moved from %s to %s", mainBefore, got)
	}
	r.StatusClean()
	if files := r.ViewTaskFiles(); len(files) != total {
		t.Errorf("the view holds %d task files, want %d", len(files), total)
	}
	if res := r.Orch(r.Main, "check"); !res.OK() {
		t.Errorf("orch check: %v\n%s", res, res.Stdout)
	}
	r.Fsck()
}

// TestConcurrentNewBesideRefMaintenance: the same race, with `git
// pack-refs --all`, `git gc --auto` (gc.auto=1, so it repacks and packs refs
// over and over) and `git update-ref` of unrelated refs running in loops
// beside orch. Every orch new that exited 0 must have its commit on the
// state branch; unrelated refs keep the value git last gave them; fsck is
// clean.
func TestConcurrentNewBesideRefMaintenance(t *testing.T) {
	workers, iters := scale(8, 4), scale(50, 10)
	r := NewRepo(t)
	r.Config("gc.auto", "1")
	r.Config("gc.autoPackLimit", "2")
	mainBefore := r.RevParse("main")
	agentWTs := r.AddWorktrees("agent-wt-", workers)
	// Commits for the unrelated refs to point at.
	toolWT := r.AddWorktree("tool-wt", "tool")
	var targets []string
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("t%d.txt", i)
		if err := os.WriteFile(filepath.Join(toolWT, name), []byte(name+"\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		r.Git(toolWT, "add", name)
		r.Git(toolWT, "commit", "-q", "-m", name)
		targets = append(targets, r.RevParse("HEAD"))
	}

	packLoop := StartLoop("git pack-refs --all", 1, 5*time.Millisecond, func(int) error { return r.GitStep(r.Main, "pack-refs", "--all") })
	gcLoop := StartLoop("git gc --auto", 1, 20*time.Millisecond, func(int) error { return r.GitStep(r.Main, "gc", "--auto", "--quiet") })
	// update-ref: move ten refs around with compare-and-swap, and create a
	// tag per step, so pack-refs always has loose refs to pack.
	const nRefs = 10
	var refMu sync.Mutex
	want := map[string]string{}
	refLoop := StartLoop("git update-ref", 1, 2*time.Millisecond, func(i int) error {
		ref := fmt.Sprintf("refs/e2e/r%d", i%nRefs)
		refMu.Lock()
		old := want[ref]
		refMu.Unlock()
		next := targets[(i/nRefs)%len(targets)]
		args := []string{"update-ref", "-m", "e2e", ref, next}
		if old != "" {
			args = append(args, old)
		}
		if err := r.GitStep(toolWT, args...); err != nil {
			return err
		}
		refMu.Lock()
		want[ref] = next
		refMu.Unlock()
		return r.GitStep(toolWT, "update-ref", fmt.Sprintf("refs/tags/e2e-%d", i), next, "")
	})
	t.Cleanup(func() { packLoop.Stop(); gcLoop.Stop(); refLoop.Stop() })
	news := runNewRace(r, agentWTs, iters)
	StopAll(t, packLoop, gcLoop, refLoop)
	t.Logf("git count-objects -v: %s", strings.Join(strings.Fields(r.Git(r.Main, "count-objects", "-v")), " "))

	// Every orch new that succeeded has its commit on the state branch.
	state := r.RevList("refs/heads/orch")
	var results []Result
	ok := map[string]bool{}
	for _, nw := range news {
		results = append(results, nw.res)
		if !nw.res.OK() {
			continue
		}
		if nw.err != nil {
			t.Errorf("orch new exited 0 without a JSON answer: %v", nw.err)
			continue
		}
		if !state[nw.out.Commit] {
			t.Errorf("orch new exited 0 for %s but its commit %s is not on the state branch", nw.out.Task.ID, nw.out.Commit)
		}
		ok[nw.out.Task.ID] = true
	}
	// None should fail: orch waits for git's ref locks, as git does.
	if summary, n := Failures(results, 5); n > 0 {
		t.Errorf("%d of %d orch new failed beside pack-refs/gc/update-ref:%s", n, len(results), summary)
	}
	tasks := r.List()
	if len(tasks) != len(ok) {
		t.Errorf("orch list: %d tasks, %d orch new succeeded", len(tasks), len(ok))
	}
	for _, tk := range tasks {
		if !ok[tk.ID] {
			t.Errorf("orch list shows %s, which no successful orch new printed", tk.ID)
		}
	}
	log := r.StateLog()
	r.CheckLinear(log)
	if len(log) != len(ok)+1 {
		t.Errorf("state branch has %d commits, want %d", len(log), len(ok)+1)
	}

	// Unrelated refs hold what git last wrote; main did not move.
	r.RefsKept(t, &refMu, want, mainBefore)
	r.StatusClean()
	r.Fsck()
}

// TestSeedTasks checks the SeedTasks helper that the claim races build on:
// tasks written by git fast-import straight onto the state branch are valid
// orch tasks, and the next orch command brings them into the view.
func TestSeedTasks(t *testing.T) {
	n := scale(1000, 100)
	r := NewRepo(t)
	ids := r.SeedTasks(n, taskfile.Incoming)
	if len(ids) != n {
		t.Fatalf("SeedTasks returned %d IDs, want %d", len(ids), n)
	}
	ready := r.List("--ready")
	if len(ready) != n {
		t.Errorf("orch list --ready: %d tasks, want %d", len(ready), n)
	}
	for _, tk := range ready {
		if tk.Problem != "" {
			t.Errorf("seeded task %s: %s", tk.ID, tk.Problem)
		}
	}
	if files := r.ViewTaskFiles(); len(files) != n {
		t.Errorf("the view holds %d task files, want %d", len(files), n)
	}
	if res := r.Orch(r.Main, "check"); !res.OK() {
		t.Errorf("orch check: %v\n%s", res, res.Stdout)
	}
	r.StatusClean()
	r.Fsck()
}
