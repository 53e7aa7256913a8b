// Command gen creates a repository with a large orch state branch for the
// benchmarks: N tasks in a realistic mix of queues and H commits of history,
// written with one git fast-import process, plus a main branch with one
// commit that is checked out. It then runs `orch list` once, which builds
// the view (.orchestrator/) and orch's caches, and reports how long that
// first run took.
//
//	go run ./bench/gen -o /tmp/bench10k -tasks 10000 -commits 1000 -orch bin/orch
//
// With -finished N the first N tasks are done and finished long ago (60
// days), due for the archive; with -open the others are open tasks only:
//
//	go run ./bench/gen -o /tmp/archive -tasks 20000 -finished 19000 -open -orch bin/orch
//
// Task IDs by queue are written to <repo>/.git/bench/<queue>.txt (and
// all.txt: "<id> <queue> <path>") for scripts that need a task to act on.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/orch-tool/orch/bench/repogen"
	"github.com/orch-tool/orch/taskfile"
)

func main() {
	out := flag.String("o", "", "directory of the new repository (must not exist, or be empty)")
	tasks := flag.Int("tasks", 10000, "number of tasks")
	commits := flag.Int("commits", 1000, "commits of history on the state branch")
	seed := flag.Int64("seed", 1, "random seed (same seed, same repository content)")
	orch := flag.String("orch", "orch", "orch binary to run `orch list` with once at the end (\"\" to skip)")
	validate := flag.Bool("validate", true, "parse every generated task file with the taskfile package")
	queue := flag.String("queue", "", "put every task in this queue (default: a realistic mix)")
	finished := flag.Int("finished", 0, "make the first N tasks done, finished 60 days ago (due for the archive)")
	open := flag.Bool("open", false, "draw the other tasks from the open queues of the mix only")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: gen -o DIR [-tasks N] [-commits H] [-seed S] [-finished N] [-open] [-orch BIN]")
		os.Exit(2)
	}
	opts := repogen.Options{Tasks: *tasks, Commits: *commits, Seed: *seed, Main: true, Validate: *validate,
		Queue: taskfile.Queue(*queue), Finished: *finished, OpenOnly: *open}
	if err := run(*out, opts, *orch); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string, opts repogen.Options, orch string) error {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("%s exists and is not empty", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	dir = abs
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		var eb bytes.Buffer
		cmd.Stderr = &eb
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(eb.String()))
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	t0 := time.Now()
	if err := git("init", "-q", "-b", "main"); err != nil {
		return err
	}
	// A local identity, so that the git commits of the baseline work in
	// any environment; orch uses it as the default agent name.
	if err := git("config", "user.name", "bench"); err != nil {
		return err
	}
	if err := git("config", "user.email", "bench@example.com"); err != nil {
		return err
	}
	res, err := repogen.Generate(dir, opts)
	if err != nil {
		return err
	}
	if err := git("reset", "-q", "--hard", "main"); err != nil {
		return err
	}
	if err := addExclude(dir); err != nil {
		return err
	}
	if err := res.WriteManifest(filepath.Join(dir, ".git", "bench")); err != nil {
		return err
	}
	genTime := time.Since(t0)
	counts := map[string]int{}
	for _, t := range res.Tasks {
		counts[string(t.Queue)]++
	}
	fmt.Printf("gen: %s: %d tasks, %d commits on refs/heads/orch in %.2fs (fast-import stream %.1f MB, pack %s)\n",
		dir, len(res.Tasks), res.Commits, genTime.Seconds(), float64(res.Bytes)/(1<<20), packSize(dir))
	fmt.Printf("gen: queues: %s\n", fmtCounts(counts))
	if orch == "" {
		return nil
	}
	bin, err := exec.LookPath(orch)
	if err != nil {
		fmt.Printf("gen: %s not found; skipping the first `orch list` (it builds the view and the cache)\n", orch)
		return nil
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	for i, label := range []string{"first `orch list` (writes the view, builds the cache)", "second `orch list`"} {
		d, rss, err := timeRun(dir, bin, "list")
		if err != nil {
			return fmt.Errorf("orch list (run %d): %v", i+1, err)
		}
		fmt.Printf("gen: %s: %.0f ms, peak RSS %.1f MB\n", label, float64(d.Microseconds())/1000, rss)
	}
	return nil
}

func addExclude(dir string) error {
	p := filepath.Join(dir, ".git", "info", "exclude")
	cur, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if bytes.Contains(cur, []byte("\n/.orchestrator/\n")) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return err
	}
	if len(cur) > 0 && !bytes.HasSuffix(cur, []byte("\n")) {
		cur = append(cur, '\n')
	}
	cur = append(cur, "# orch's view of its state branch\n/.orchestrator/\n"...)
	return os.WriteFile(p, cur, 0o666)
}

func timeRun(dir, bin string, args ...string) (time.Duration, float64, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var eb bytes.Buffer
	cmd.Stderr = &eb
	t := time.Now()
	err := cmd.Run()
	d := time.Since(t)
	if err != nil {
		return d, 0, fmt.Errorf("%v: %s", err, strings.TrimSpace(eb.String()))
	}
	rss := 0.0
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = float64(ru.Maxrss) / 1024 // kilobytes on Linux
	}
	return d, rss, nil
}

func packSize(dir string) string {
	var n int64
	ms, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	for _, m := range ms {
		if fi, err := os.Stat(m); err == nil {
			n += fi.Size()
		}
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

func fmtCounts(m map[string]int) string {
	order := []string{"incoming", "claimed", "provisional", "rejected", "needs_continuation", "blocked", "escalated", "done", "failed", "superseded"}
	var parts []string
	for _, q := range order {
		if m[q] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", q, m[q]))
		}
	}
	return strings.Join(parts, ", ")
}
