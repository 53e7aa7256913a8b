//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orch-tool/orch/taskfile"
)

// Landing under load: agents whose work touches shared files (some of it
// conflicts on the base, some breaks the check), landed by orch run while
// they work, with kill -9 at points inside a landing.

// sharedFiles is how many shared files the base holds; a task that edits
// one changes its second line, so two such tasks on one file conflict.
const sharedFiles = 4

// landingAgents writes agents whose work meets the base: an implementer
// that, on a first attempt, writes its own file, for one task in three
// also the second line of a shared file (a conflict with any other task on
// that file), and for one in seven a file the check refuses; sent back, it
// merges the base into its branch (a conflict resolved to the base's
// shared lines), removes what broke the check and submits again. The
// reviewer approves. It records as steadyAgents' do (recordingPrelude).
func landingAgents(t *testing.T, dir string, impl, rev int) string {
	t.Helper()
	common := recordingPrelude(dir)
	implement := common + `n=$(printf %s "$ORCH_TASK" | cksum | cut -d' ' -f1)
mkdir -p work
if [ -f "work/$ORCH_TASK.txt" ]; then
	if ! git merge -q --no-edit main >/dev/null 2>&1; then
		git checkout -q --theirs -- shared
		git add -A shared
		git commit -q --no-edit
	fi
	rm -f "work/$ORCH_TASK.broken"
	echo "$ORCH_AGENT $ORCH_ATTEMPT caught up" >> "work/$ORCH_TASK.txt"
else
	echo "$ORCH_AGENT $ORCH_ATTEMPT" > "work/$ORCH_TASK.txt"
	if [ $((n % 3)) -eq 0 ]; then
		f=shared/s$((n % ` + fmt.Sprint(sharedFiles) + `)).txt
		sed "2s/.*/$ORCH_TASK/" "$f" > "$f.new" && mv "$f.new" "$f"
	fi
	if [ $((n % 7)) -eq 0 ]; then echo broken > "work/$ORCH_TASK.broken"; fi
fi
git add -A work shared && git commit -qm "$ORCH_TASK by $ORCH_AGENT"
if orch submit -m done; then how=submit; else how=refused; fi
`
	review := common + `if orch approve "$ORCH_TASK" -m ok; then how=approve; else how=refused; fi
`
	return agentsConfig(t, dir, "land", implement, review, impl, rev)
}

// landingBase commits the shared files on main and returns that commit:
// the start of the history the landings write.
func landingBase(t *testing.T, r *Repo) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(r.Main, "shared"), 0o777); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < sharedFiles; i++ {
		text := fmt.Sprintf("shared file %d\nline two\nline three\n", i)
		if err := os.WriteFile(filepath.Join(r.Main, "shared", fmt.Sprintf("s%d.txt", i)), []byte(text), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	r.Git(r.Main, "add", "shared")
	r.Git(r.Main, "commit", "-q", "-m", "shared files")
	return r.RevParse("refs/heads/main")
}

// setLanding replaces the land: block orch init wrote with land, and
// checks the config.
func setLanding(t *testing.T, r *Repo, land string) {
	t.Helper()
	p := filepath.Join(r.Main, ".orchestrator", "config.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "\nland:\n")
	if i < 0 {
		t.Fatalf("config.yaml has no land: block:\n%s", text)
	}
	rest := text[i+len("\nland:\n"):]
	end := 0 // the block ends at the next line that is not indented
	for end < len(rest) && rest[end] == ' ' {
		nl := strings.IndexByte(rest[end:], '\n')
		if nl < 0 {
			end = len(rest)
			break
		}
		end += nl + 1
	}
	text = text[:i] + "\nland:\n" + land + rest[end:]
	if err := os.WriteFile(p, []byte(text), 0o666); err != nil {
		t.Fatal(err)
	}
	r.MustOrch(r.Main, "check")
}

// landedHistory checks the base's first-parent history since start in
// gitDir: every commit on it is a landing (it names its task), no task
// landed twice, and each is a done task whose state records that commit as
// landed with the check's result check ("passed"; "none" with no
// land.check). It returns the landed tasks.
func landedHistory(t *testing.T, r *Repo, dir, gitDir, start, check string) map[string]string {
	t.Helper()
	out := r.Git(gitDir, "log", "--first-parent", "--format=%H%x00%B%x01", start+"..main")
	landed := map[string]string{}
	for _, entry := range strings.Split(out, "\x01") {
		h, msg, ok := strings.Cut(strings.TrimSpace(entry), "\x00")
		if !ok {
			continue
		}
		var task string
		for _, line := range strings.Split(msg, "\n") {
			if v, ok := strings.CutPrefix(line, "Orch-Landed-Task: "); ok {
				task = v
			}
		}
		if task == "" {
			t.Errorf("%s on main's first-parent history is not a landing:\n%s", h[:12], msg)
			continue
		}
		if prev, ok := landed[task]; ok {
			t.Errorf("%s landed twice: %s and %s", task, prev[:12], h[:12])
		}
		landed[task] = h
	}
	// The state's record of each landing: the commit and the check's result.
	records := r.Git(dir, "log", "--format=%(trailers:key=Orch-Task,valueonly)%x00%B%x01", "refs/heads/orch")
	green := map[string]string{}
	for _, entry := range strings.Split(records, "\x01") {
		task, body, _ := strings.Cut(strings.TrimSpace(entry), "\x00")
		task = strings.TrimSpace(task)
		if _, ok := landed[task]; ok && strings.Contains(body, "on main as "+landed[task][:12]+" (check: "+check+")") {
			green[task] = landed[task]
		}
	}
	for task, commit := range landed {
		if green[task] == "" {
			t.Errorf("%s landed as %s with no check %s recorded", task, commit[:12], check)
		}
	}
	return landed
}

// checkNoneApproved: no approved work was left behind.
func checkNoneApproved(t *testing.T, r *Repo, dir string) {
	t.Helper()
	if left := r.List("--queue", "approved"); len(left) > 0 {
		t.Errorf("%d approved tasks were never landed", len(left))
	}
}

// TestRunLandShared: orch run with 8 implementers and 2 reviewers over
// tasks that touch shared files (some conflict on the base, some break the
// check), landed three at a time (land.batch: 3, bisected on red). Every
// task ends done or escalated, every done task's work is on main, main's
// first-parent history since the start holds only landings with a green
// check, each task once, and git fsck is clean.
func TestRunLandShared(t *testing.T) {
	tasks := 30
	if fullSize() {
		tasks = 100
	}
	r := NewRepo(t)
	start := landingBase(t, r)
	check := filepath.Join(r.Root, "check.sh")
	if err := os.WriteFile(check, []byte("! ls work/*.broken >/dev/null 2>&1\n"), 0o777); err != nil {
		t.Fatal(err)
	}
	setLanding(t, r, fmt.Sprintf("  mode: local\n  check: 'sh %s'\n  batch: 3\n  max_failures: 3\n", check))
	appendConfig(t, r, r.Main, landingAgents(t, r.Root, 8, 2))
	r.SeedTasks(tasks, taskfile.Incoming)
	cmd, out := startRun(r, r.Main, "--until-idle")
	waitRun(t, cmd, out, 15*time.Minute)
	runs := readRuns(t, filepath.Join(r.Root, "records"))
	checkDead(t, runs)
	checkExclusive(t, runs, time.Now().UnixNano())
	queues := checkFinished(t, r, r.Main)
	checkLanded(t, r, r.Main, r.Main)
	checkNoneApproved(t, r, r.Main)
	landed := landedHistory(t, r, r.Main, r.Main, start, "passed")
	if len(landed) != queues[string(taskfile.Done)] {
		t.Errorf("%d landings on main for %d done tasks", len(landed), queues[string(taskfile.Done)])
	}
	// The load meant something: work came back from landing, and landed.
	for _, want := range []string{"rejected: .*it conflicts with", "rejected: .*the check `sh .*` failed"} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("no landing went back as %q:\n%s", want, tail(out.String(), 40))
		}
	}
	r.Fsck()
	if t.Failed() {
		t.Logf("orch run said:\n%s", tail(out.String(), 80))
	}
}

// TestRunLandKill: the coordinator is killed with kill -9 inside a
// landing, at each point in turn: after the merge (while the check runs)
// and after the base ref moved (before the state records it). A restart
// neither lands a task twice nor loses one: every task ends done, its work
// on main once, and no agent outlives its coordinator.
func TestRunLandKill(t *testing.T) {
	tasks, kills := 12, 4
	if fullSize() {
		tasks, kills = 30, 8
	}
	r := NewRepo(t)
	start := landingBase(t, r)
	armMerge := filepath.Join(r.Root, "arm-merge")
	armRef := filepath.Join(r.Root, "arm-ref")
	check := filepath.Join(r.Root, "check.sh")
	killer := func(arm string) string {
		return `if [ -f "` + arm + `" ]; then pid=$(cat "` + arm + `"); rm -f "` + arm + `"; kill -9 "$pid"; sleep 1; fi
`
	}
	if err := os.WriteFile(check, []byte(killer(armMerge)+"! ls work/*.broken >/dev/null 2>&1\n"), 0o777); err != nil {
		t.Fatal(err)
	}
	// git runs this hook once the base ref has moved: the state has not
	// recorded the landing yet.
	hook := "#!/bin/sh\n[ \"$1\" = committed ] || exit 0\ngrep -q ' refs/heads/main$' || exit 0\n" + killer(armRef)
	if err := os.WriteFile(filepath.Join(r.Main, ".git", "hooks", "reference-transaction"), []byte(hook), 0o777); err != nil {
		t.Fatal(err)
	}
	setLanding(t, r, fmt.Sprintf("  mode: local\n  check: 'sh %s'\n  max_failures: 5\n", check))
	appendConfig(t, r, r.Main, steadyAgents(t, r.Root, 3, 1))
	r.SeedTasks(tasks, taskfile.Incoming)
	killed := 0
	for k := 0; k < kills; k++ {
		arm := armMerge
		if k%2 == 1 {
			arm = armRef
		}
		cmd, out := startRun(r, r.Main, "--until-idle")
		if err := os.WriteFile(arm, []byte(fmt.Sprint(cmd.Process.Pid)), 0o666); err != nil {
			t.Fatal(err)
		}
		err := waitExit(cmd, 5*time.Minute)
		os.Remove(arm)
		if err == nil {
			break // idle before any landing was left to kill
		}
		if ee, ok := err.(*exec.ExitError); !ok || !strings.Contains(ee.String(), "killed") {
			t.Fatalf("orch run: %v\n%s", err, tail(out.String(), 40))
		}
		killed++
	}
	if killed < 2 {
		t.Errorf("only %d kills inside a landing: the test did not test", killed)
	}
	var said strings.Builder
	for round := 0; round < 2; round++ {
		cmd, out := startRun(r, r.Main, "--until-idle")
		waitRun(t, cmd, out, 10*time.Minute)
		said.WriteString(out.String())
	}
	defer func() {
		if t.Failed() {
			t.Logf("the runs after the kills said:\n%s", tail(said.String(), 60))
		}
	}()
	runs := readRuns(t, filepath.Join(r.Root, "records"))
	checkDead(t, runs)
	queues := checkFinished(t, r, r.Main)
	if queues[string(taskfile.Done)] != tasks {
		t.Errorf("tasks: %v, want all %d done", queues, tasks)
	}
	checkLanded(t, r, r.Main, r.Main)
	checkNoneApproved(t, r, r.Main)
	landedHistory(t, r, r.Main, r.Main, start, "passed")
	r.Fsck()
}

// waitExit waits for cmd, killing it after d.
func waitExit(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		return fmt.Errorf("did not exit in %v", d)
	}
}

// A landing's check ends with orch: kill -9 of orch run while land.check
// runs (a shell with a child of its own) leaves none of the check's
// processes behind.
func TestRunLandCheckDiesWithOrch(t *testing.T) {
	r := NewRepo(t)
	pids := filepath.Join(r.Root, "check-pids")
	check := filepath.Join(r.Root, "check.sh")
	script := "sleep 300 &\necho $$ $! > " + pids + ".tmp && mv " + pids + ".tmp " + pids + "\nwait\n"
	if err := os.WriteFile(check, []byte(script), 0o777); err != nil {
		t.Fatal(err)
	}
	setLanding(t, r, fmt.Sprintf("  mode: local\n  check: 'sh %s'\n", check))
	appendConfig(t, r, r.Main, steadyAgents(t, r.Root, 1, 1))
	r.SeedTasks(1, taskfile.Incoming)
	cmd, out := startRun(r, r.Main, "--until-idle")
	var procs []int
	for deadline := time.Now().Add(2 * time.Minute); len(procs) == 0; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the check never started:\n%s", tail(out.String(), 30))
		}
		if b, err := os.ReadFile(pids); err == nil {
			for _, f := range strings.Fields(string(b)) {
				var pid int
				fmt.Sscan(f, &pid)
				procs = append(procs, pid)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range procs {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the check's process %d outlived orch run's kill -9", pid)
		}
	}
}
