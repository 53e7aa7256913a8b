// Command claim makes one claim of the coordinator's, in a repository of
// its own, for walk's -cover: built with -cover -covermode=atomic and run
// with GOCOVERDIR set, it leaves there the coverage of that claim alone
// (the counters are cleared once the repository is made), and walk then
// follows only the calls that ran (make walk-ran).
//
//	GOCOVERDIR=DIR claim -orch BIN
//
// The repository: git init, orch init, and one task made with orch new (by
// the orch binary BIN, in processes of their own); then a slot, impl-1,
// claims it through coordinator.NewQueue's Claim, as orch run's slots do
// (without --sync), which makes its worktree and its prompt.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/coverage"

	"github.com/orch-tool/orch/coordinator"
	"github.com/orch-tool/orch/workflow"
)

func main() {
	bin := flag.String("orch", "orch", "the orch binary that makes the repository")
	flag.Parse()
	if os.Getenv("GOCOVERDIR") == "" {
		fail(fmt.Errorf("GOCOVERDIR names no directory for the coverage"))
	}
	tmp, err := os.MkdirTemp("", "orch-walk-claim-")
	fail(err)
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "repo")
	fail(os.Mkdir(dir, 0o777))
	must(dir, "git", "init", "-q", "-b", "main")
	must(dir, "git", "commit", "-q", "--allow-empty", "-m", "base")
	must(dir, *bin, "init")
	must(dir, *bin, "new", "Walk the claim")

	fail(coverage.ClearCounters())
	q := coordinator.NewQueue(workflow.Options{Dir: dir, Actor: "lead", Verb: "run", HoldPolicyEdits: true}, nil, nil, nil)
	j, err := q.Claim(&coordinator.Slot{Name: "impl-1"})
	fail(err)
	if j == nil || j.Worktree == "" || j.Prompt == "" {
		fail(fmt.Errorf("the slot claimed nothing, or has no worktree or prompt: %+v", j))
	}
	fmt.Fprintf(os.Stderr, "claim: impl-1 claimed %s (attempt %d)\n", j.Task, j.Attempt)
}

func must(dir, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Walk", "GIT_AUTHOR_EMAIL=walk@example.com",
		"GIT_COMMITTER_NAME=Walk", "GIT_COMMITTER_EMAIL=walk@example.com")
	if b, err := cmd.CombinedOutput(); err != nil {
		fail(fmt.Errorf("%s %v: %v\n%s", name, args, err, b))
	}
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "claim:", err)
		os.Exit(1)
	}
}
