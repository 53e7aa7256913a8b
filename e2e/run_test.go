package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orch-tool/orch/taskfile"
)

// The coordinator (orch run, docs/design.md §7) against real agents: scripted
// implementers that work, crash, pause and submit at random, and scripted
// reviewers that reject or approve. Every agent writes its own start and
// end records (not orch's), and the test proves from them that no task was
// ever run by two agents at once. Halfway, the coordinator is killed with
// kill -9: no agent may outlive it, and a restart must finish the run with
// nothing lost. Then two coordinators on two clones of one bare remote run
// the same queue (claims decided by the remote): no double runs either.

// runAgents writes the scripted agents into dir and returns the run:
// section of config.yaml that runs impl implementers and rev reviewers.
func runAgents(t *testing.T, dir string, impl, rev int) string {
	t.Helper()
	records := filepath.Join(dir, "records")
	// Each record is one short line appended with O_APPEND: atomic.
	// Few processes per run: the machine runs hundreds of them.
	common := `rec() { echo "$1 $ORCH_TASK $ORCH_AGENT $ORCH_ROLE $ORCH_ATTEMPT $$ $(date +%s%N) $2" >> "` + records + `"; }
r=$(( ($$ * 7919 + ${#ORCH_TASK} * 31 + $(date +%N | sed 's/^0*//;s/^$/0/')) % 100 ))
rec start
trap 'rec end "${how:-killed}"' EXIT
trap 'exit 143' TERM
`
	implement := common + `if [ $r -lt 7 ]; then how=crash; echo "giving up"; exit 1; fi
if [ $r -lt 12 ] && [ "$ORCH_ATTEMPT" = 1 ]; then how=pause; orch pause -m "half done"; exit 0; fi
mkdir -p work && echo "$ORCH_AGENT $ORCH_ATTEMPT" >> "work/$ORCH_TASK.txt"
git add work && git commit -qm "$ORCH_TASK by $ORCH_AGENT"
if orch submit -m done; then how=submit; else how=refused; fi
`
	// A reviewer's first review claim of a task rejects it three times
	// in ten; any later one approves.
	review := common + `if [ "$ORCH_ATTEMPT" = 1 ] && [ $r -lt 30 ]; then
  orch reject "$ORCH_TASK" -m "Add a test." && how=reject
else
  orch approve "$ORCH_TASK" -m "ok" && how=approve
fi
`
	for name, text := range map[string]string{"implement.sh": implement, "review.sh": review} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	b.WriteString("run:\n  max_crashes: 3\n  kill_grace: 2s\n  agents:\n")
	for i := 1; i <= impl; i++ {
		fmt.Fprintf(&b, "    - {name: impl-%d, cmd: 'sh %s'}\n", i, filepath.Join(dir, "implement.sh"))
	}
	b.WriteString("  reviewers:\n")
	for i := 1; i <= rev; i++ {
		fmt.Fprintf(&b, "    - {name: rev-%d, cmd: 'sh %s'}\n", i, filepath.Join(dir, "review.sh"))
	}
	return b.String()
}

// agentRun is one run of one agent, from its own records.
type agentRun struct {
	task, agent, role, attempt string
	pid                        int
	start, end                 int64 // ns; end 0: no end record (killed)
	how                        string
}

// readRuns reads the agents' records.
func readRuns(t *testing.T, path string) []*agentRun {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byPID := map[int]*agentRun{}
	var runs []*agentRun
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 7 {
			t.Fatalf("bad record %q", sc.Text())
		}
		pid, _ := strconv.Atoi(fl[5])
		ns, _ := strconv.ParseInt(fl[6], 10, 64)
		switch fl[0] {
		case "start":
			r := &agentRun{task: fl[1], agent: fl[2], role: fl[3], attempt: fl[4], pid: pid, start: ns}
			byPID[pid] = r
			runs = append(runs, r)
		case "end":
			if r := byPID[pid]; r != nil && r.end == 0 {
				r.end = ns
				if len(fl) > 7 {
					r.how = fl[7]
				}
			}
		}
	}
	return runs
}

// checkExclusive fails the test when two runs of one task overlap: no task
// is ever run by two agents at once. A run without an end record ended
// before until (the agents were checked dead then).
func checkExclusive(t *testing.T, runs []*agentRun, until int64) {
	t.Helper()
	checkExclusiveSettled(t, runs, []int64{until})
}

// checkExclusiveSettled is checkExclusive over several kills: settles are
// the times, in order, at which every agent was checked dead; a run
// without an end record ended by the first of them after its start.
func checkExclusiveSettled(t *testing.T, runs []*agentRun, settles []int64) {
	t.Helper()
	byTask := map[string][]*agentRun{}
	for _, r := range runs {
		byTask[r.task] = append(byTask[r.task], r)
	}
	for task, rs := range byTask {
		sort.Slice(rs, func(i, k int) bool { return rs[i].start < rs[k].start })
		for i := 1; i < len(rs); i++ {
			prev, cur := rs[i-1], rs[i]
			end := prev.end
			for k := 0; end == 0 && k < len(settles); k++ {
				if settles[k] > prev.start {
					end = settles[k]
				}
			}
			if end == 0 {
				end = settles[len(settles)-1]
			}
			if cur.start < end {
				t.Errorf("%s was run by two agents at once: %s (%s attempt %s, pid %d) and %s (%s attempt %s, pid %d)",
					task, prev.agent, prev.role, prev.attempt, prev.pid, cur.agent, cur.role, cur.attempt, cur.pid)
			}
		}
	}
}

// checkDead fails the test unless every agent that started has ended.
func checkDead(t *testing.T, runs []*agentRun) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range runs {
		for alive(r.pid) {
			if time.Now().After(deadline) {
				t.Errorf("agent %s (pid %d, on %s) outlived its coordinator", r.agent, r.pid, r.task)
				syscall.Kill(r.pid, syscall.SIGKILL)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// alive reports whether pid runs (a zombie waiting to be reaped does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return !(i > 0 && len(s) > i+2 && s[i+2] == 'Z')
}

// checkFinished fails the test unless every task is done or escalated.
func checkFinished(t *testing.T, r *Repo, dir string) map[string]int {
	t.Helper()
	res := r.MustOrch(dir, "list", "--json")
	var doc struct {
		Tasks []TaskJSON `json:"tasks"`
	}
	if err := res.JSON(&doc); err != nil {
		t.Fatal(err)
	}
	queues := map[string]int{}
	shown := false
	for _, task := range doc.Tasks {
		queues[task.Queue]++
		if task.Queue != string(taskfile.Done) && task.Queue != string(taskfile.Escalated) {
			t.Errorf("%s ended %s, want done or escalated", task.ID, task.Queue)
			if !shown {
				shown = true
				t.Logf("orch show %s:\n%s", task.ID, r.Orch(dir, "show", task.ID).Stdout)
			}
		}
	}
	if queues[string(taskfile.Done)] == 0 {
		t.Errorf("no task was done: %v", queues)
	}
	if t.Failed() {
		// What landing would say now, and the last of the state's history.
		t.Logf("orch land --dry-run:\n%s", r.Orch(dir, "land", "--dry-run"))
		t.Logf("orch check:\n%s", r.Orch(dir, "check"))
	}
	return queues
}

// checkLanded checks that every done task's work is on main in gitDir (a
// repository or a bare remote): done means landed.
func checkLanded(t *testing.T, r *Repo, dir, gitDir string) {
	t.Helper()
	res := r.MustOrch(dir, "list", "--json", "--queue", "done")
	var doc struct {
		Tasks []TaskJSON `json:"tasks"`
	}
	if err := res.JSON(&doc); err != nil {
		t.Fatal(err)
	}
	for _, task := range doc.Tasks {
		if out := r.TryGit(gitDir, "cat-file", "-e", "main:work/"+task.ID+".txt"); !out.OK() {
			t.Errorf("%s is done but its work is not on main in %s", task.ID, gitDir)
		}
	}
}

func startRun(r *Repo, dir string, args ...string) (*exec.Cmd, *strings.Builder) {
	cmd := exec.Command(orchBin, append([]string{"run"}, args...)...)
	cmd.Dir = dir
	cmd.Env = r.Env
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	return cmd, out
}

func waitRun(t *testing.T, cmd *exec.Cmd, out *strings.Builder, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("orch run: %v\n%s", err, tail(out.String(), 40))
		}
	case <-time.After(d):
		cmd.Process.Kill()
		t.Fatalf("orch run did not finish in %v\n%s", d, tail(out.String(), 40))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func appendConfig(t *testing.T, r *Repo, dir, text string) {
	t.Helper()
	p := filepath.Join(dir, ".orchestrator", "config.yaml")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r.MustOrch(dir, "check")
}

// landOff sets land.mode: off in the config orch init wrote (approval ends
// in done, as before landing), for tests of something else whose tasks
// have no branches.
func landOff(t *testing.T, r *Repo) {
	t.Helper()
	p := filepath.Join(r.Main, ".orchestrator", "config.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "  mode: local ", "  mode: off   ", 1)
	if edited == string(data) {
		t.Fatalf("config.yaml has no land mode line:\n%s", data)
	}
	if err := os.WriteFile(p, []byte(edited), 0o666); err != nil {
		t.Fatal(err)
	}
	r.MustOrch(r.Main, "check")
}

// TestRunFleet: 8 implementers and 2 reviewers over 200 tasks (small: 4 and
// 1 over 30), the coordinator killed with kill -9 halfway and restarted.
func TestRunFleet(t *testing.T) {
	tasks, impl, rev := 30, 4, 1
	if fullSize() {
		tasks, impl, rev = 200, 8, 2
	}
	r := NewRepo(t)
	appendConfig(t, r, r.Main, runAgents(t, r.Root, impl, rev))
	r.SeedTasks(tasks, taskfile.Incoming)
	records := filepath.Join(r.Root, "records")

	cmd, out := startRun(r, r.Main, "--until-idle")
	// Halfway: half as many submissions as tasks.
	for deadline := time.Now().Add(5 * time.Minute); ; {
		b, _ := os.ReadFile(records)
		if strings.Count(string(b), " submit\n") >= tasks/2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no progress\n%s", tail(out.String(), 40))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed := time.Now().UnixNano()
	checkDead(t, readRuns(t, records))
	settled := time.Now().UnixNano()
	t.Logf("killed the coordinator after %d records", len(readRuns(t, records)))

	cmd, out = startRun(r, r.Main, "--until-idle")
	waitRun(t, cmd, out, 10*time.Minute)
	if !strings.Contains(out.String(), "the orch run that started it on this clone died") && strings.Count(string(must(os.ReadFile(records))), "killed") > 0 {
		t.Errorf("the restart gave back no run of the killed coordinator:\n%s", tail(out.String(), 40))
	}
	runs := readRuns(t, records)
	checkDead(t, runs)
	for _, run := range runs {
		if run.end == 0 && run.start > killed {
			t.Errorf("%s's run on %s (pid %d) started after the kill and has no end", run.agent, run.task, run.pid)
		}
	}
	checkExclusive(t, runs, settled)
	queues := checkFinished(t, r, r.Main)
	checkLanded(t, r, r.Main, r.Main)
	t.Logf("%d runs; tasks: %v", len(runs), queues)
	r.MustOrch(r.Main, "check")
	r.Fsck()
}

// TestRunTwoClones: two coordinators on two clones of one bare remote, the
// same run: section, claims decided by the remote (--sync).
func TestRunTwoClones(t *testing.T) {
	tasks, impl, rev := 10, 2, 1
	if fullSize() {
		tasks, impl, rev = 24, 3, 1
	}
	r := NewRepo(t)
	appendConfig(t, r, r.Main, runAgents(t, r.Root, impl, rev))
	r.SeedTasks(tasks, taskfile.Incoming)
	remote, clones, _ := r.fleet(2, 1)
	records := filepath.Join(r.Root, "records")

	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for _, dir := range clones {
		cmd, out := startRun(r, dir, "--until-idle", "--sync")
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i := range cmds {
		waitRun(t, cmds[i], outs[i], 10*time.Minute)
	}
	// A clone may go idle while the other still reviews or reworks: run
	// each again until both find nothing (bounded).
	for round := 0; round < 3; round++ {
		for _, dir := range clones {
			cmd, out := startRun(r, dir, "--until-idle", "--sync")
			waitRun(t, cmd, out, 10*time.Minute)
		}
	}
	r.converge(remote, clones)
	runs := readRuns(t, records)
	checkDead(t, runs)
	checkExclusive(t, runs, time.Now().UnixNano())
	queues := checkFinished(t, r, r.Main)
	checkLanded(t, r, r.Main, remote)
	t.Logf("%d runs over two clones; tasks: %v", len(runs), queues)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
