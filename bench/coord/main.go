// Command coord measures the coordinator (orch run, docs/design.md §11 and §7):
// its cost per task with instant scripted agents, against the same claim,
// submit and approve run back to back by a script, and its memory as the
// number of tasks grows.
//
//	coord -orch BIN [-tasks 200] [-slots 16] [-memtasks 1000] [-tsv]
//
// Each measurement runs in a repository of its own (made with git init and
// orch init in a temp dir): the script claims, submits and approves -tasks
// tasks one after another, its claim the hand-written loop's of
// docs/agents.md (orch claim --worktree --prompt: an agent needs the
// worktree and the prompt, and orch run makes both for each claim; git
// worktree add alone is most of a claim's cost); orch run --until-idle
// takes -tasks others
// through the same loop with -slots slots (three implementers to one
// reviewer), its agents doing nothing but orch submit and orch approve. The
// per-task figure is the wall time over the tasks. Then orch run takes
// 100, and -memtasks, tasks through the loop and reports its peak RSS for
// each (flat: the same).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/orch-tool/orch/bench/internal/machine"
)

func main() {
	bin := flag.String("orch", "orch", "the orch binary")
	tasks := flag.Int("tasks", 200, "tasks per measurement of cost")
	slots := flag.Int("slots", 16, "orch run's slots")
	memTasks := flag.Int("memtasks", 1000, "tasks of the memory measurement (0 skips it)")
	tsv := flag.Bool("tsv", false, "print script_ms_per_task, run_ms_per_task, ratio, rss_100_mb, rss_N_mb tab-separated")
	flag.Parse()
	abs, err := machine.Binary(*bin)
	check(err)
	*bin = abs
	tmp, err := os.MkdirTemp("", "orch-coord-bench-")
	check(err)
	defer os.RemoveAll(tmp)
	// The agents' commands call "orch": put the binary on their PATH under
	// that name, whatever the file is called.
	binDir := filepath.Join(tmp, "bin")
	check(os.Mkdir(binDir, 0o777))
	check(os.Symlink(*bin, filepath.Join(binDir, "orch")))
	*bin = filepath.Join(binDir, "orch")

	script := perTask(scriptLoop(*bin, tmp, *tasks), *tasks)
	dur, _ := runLoop(*bin, tmp, "run", *tasks, *slots)
	run := perTask(dur, *tasks)
	ratio := run / script
	var rssSmall, rssBig float64
	if *memTasks > 0 {
		_, rssSmall = runLoop(*bin, tmp, "mem-small", 100, *slots)
		_, rssBig = runLoop(*bin, tmp, "mem-big", *memTasks, *slots)
	}
	if *tsv {
		fmt.Printf("%.1f\t%.1f\t%.2f\t%.1f\t%.1f\n", script, run, ratio, rssSmall, rssBig)
		return
	}
	fmt.Printf("claim + submit + approve by a script: %.1f ms a task\n", script)
	fmt.Printf("orch run, %d slots, instant agents:  %.1f ms a task (%.2f× the script)\n", *slots, run, ratio)
	if *memTasks > 0 {
		fmt.Printf("orch run peak RSS: %.1f MB over 100 tasks, %.1f MB over %d\n", rssSmall, rssBig, *memTasks)
	}
}

func perTask(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }

// repo makes a repository with n incoming tasks and returns its directory.
func repo(bin, tmp, name string, n int, runSection string) string {
	dir := filepath.Join(tmp, name)
	check(os.MkdirAll(dir, 0o777))
	must(dir, "git", "init", "-q", "-b", "main")
	must(dir, "git", "commit", "-q", "--allow-empty", "-m", "base")
	must(dir, bin, "init")
	cfg := filepath.Join(dir, ".orchestrator", "config.yaml")
	// Approval ends in done, as for the script: the rows compare the loop,
	// not landing (make bench-land measures that).
	data, err := os.ReadFile(cfg)
	check(err)
	text := strings.Replace(string(data), "  mode: local ", "  mode: off   ", 1)
	check(os.WriteFile(cfg, []byte(text+runSection), 0o666))
	must(dir, bin, "check")
	for i := 0; i < n; i++ {
		must(dir, bin, "new", fmt.Sprintf("Bench task %d", i))
	}
	return dir
}

// scriptLoop claims, submits and approves n tasks one after another.
func scriptLoop(bin, tmp string, n int) time.Duration {
	dir := repo(bin, tmp, "script", n, "")
	start := time.Now()
	for i := 0; i < n; i++ {
		claim := strings.Fields(must(dir, bin, "claim", "--worktree", "--prompt", "--agent", "impl-1", "--json", "--jq", ".task.id, .worktree"))
		id, wt := claim[0], claim[1]
		must(wt, "git", "commit", "-q", "--allow-empty", "-m", "work") // a submission holds work
		must(dir, bin, "submit", id, "--agent", "impl-1", "-m", "done")
		must(dir, bin, "approve", id, "--agent", "lead", "-m", "ok")
	}
	return time.Since(start)
}

// runLoop takes n tasks through orch run --until-idle and returns the wall
// time and orch run's peak RSS in MB.
func runLoop(bin, tmp, name string, n, slots int) (time.Duration, float64) {
	var b strings.Builder
	b.WriteString("run:\n  agents:\n")
	reviewers := max(slots/4, 1)
	for i := 1; i <= slots-reviewers; i++ {
		fmt.Fprintf(&b, "    - {name: impl-%d, cmd: 'git commit -q --allow-empty -m work && orch submit -m done'}\n", i)
	}
	b.WriteString("  reviewers:\n")
	for i := 1; i <= reviewers; i++ {
		fmt.Fprintf(&b, "    - {name: rev-%d, cmd: 'orch approve \"$ORCH_TASK\" -m ok'}\n", i)
	}
	dir := repo(bin, tmp, name, n, b.String())
	cmd := exec.Command(bin, "run", "--until-idle")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "coord: orch run: %v\n%s", err, out.String())
		os.Exit(1)
	}
	d := time.Since(start)
	if done := strings.Count(must(dir, bin, "list", "--queue", "done", "--json", "--jq", ".tasks[].id"), "\n"); done != n {
		fmt.Fprintf(os.Stderr, "coord: %d of %d tasks done\n%s", done, n, out.String())
		os.Exit(1)
	}
	rss := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
	return d, rss
}

func must(dir, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "coord: %s %s: %v\n%s", name, strings.Join(args, " "), err, errb.String())
		os.Exit(1)
	}
	return out.String()
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "coord:", err)
		os.Exit(1)
	}
}
