package e2e

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/taskfile"
)

// The coordinator's doors under real processes: a loop of kill -9 over
// instant agents (every give-back recorded before a dead run's state is
// dropped), two coordinators with the same config on one clone (no review
// claim taken over by the same name), and two clones with --sync (a
// reviewer on the other clone has the branch it reviews).

// steadyAgents writes agents that always do their part: an implementer that
// commits and submits, a reviewer that approves. Each writes its own
// records (runAgents' format), so overlaps show in the agents' own words.
func steadyAgents(t *testing.T, dir string, impl, rev int) string {
	t.Helper()
	common := recordingPrelude(dir)
	implement := common + `mkdir -p work && echo "$ORCH_AGENT $ORCH_ATTEMPT" >> "work/$ORCH_TASK.txt"
git add work && git commit -qm "$ORCH_TASK by $ORCH_AGENT"
if orch submit -m done; then how=submit; else how=refused; fi
`
	review := common + `if orch approve "$ORCH_TASK" -m ok; then how=approve; else how=refused; fi
`
	return agentsConfig(t, dir, "steady", implement, review, impl, rev)
}

// recordingPrelude starts an agent script that writes its records (one
// line at its start, one at its end, saying how it ended) to
// <dir>/records, runAgents' format, so that overlaps show in the agents'
// own words.
func recordingPrelude(dir string) string {
	return `rec() { echo "$1 $ORCH_TASK $ORCH_AGENT $ORCH_ROLE $ORCH_ATTEMPT $$ $(date +%s%N) $2" >> "` + filepath.Join(dir, "records") + `"; }
rec start
trap 'rec end "${how:-killed}"' EXIT
trap 'exit 143' TERM
`
}

// agentsConfig writes the scripts <name>-implement.sh and <name>-review.sh
// in dir and returns the run: section of impl implementers and rev
// reviewers running them.
func agentsConfig(t *testing.T, dir, name, implement, review string, impl, rev int) string {
	t.Helper()
	for role, text := range map[string]string{"implement": implement, "review": review} {
		if err := os.WriteFile(filepath.Join(dir, name+"-"+role+".sh"), []byte(text), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	b.WriteString("run:\n  max_crashes: 5\n  kill_grace: 1s\n  agents:\n")
	for i := 1; i <= impl; i++ {
		fmt.Fprintf(&b, "    - {name: impl-%d, cmd: 'sh %s'}\n", i, filepath.Join(dir, name+"-implement.sh"))
	}
	b.WriteString("  reviewers:\n")
	for i := 1; i <= rev; i++ {
		fmt.Fprintf(&b, "    - {name: rev-%d, cmd: 'sh %s'}\n", i, filepath.Join(dir, name+"-review.sh"))
	}
	return b.String()
}

// TestRunKillLoop: orch run is killed with kill -9 at random moments, again
// and again (at least 20 kills), each time restarted on the same clone.
// After each restart has taken over, no dead run's state is left; at the
// end every task is done (nothing stays claimed by a dead run), no agent
// outlived its coordinator, and no task was run by two agents at once.
func TestRunKillLoop(t *testing.T) {
	tasks, kills := 24, 20
	if fullSize() {
		tasks, kills = 60, 30
	}
	r := NewRepo(t)
	appendConfig(t, r, r.Main, steadyAgents(t, r.Root, 3, 1))
	r.SeedTasks(tasks, taskfile.Incoming)
	records := filepath.Join(r.Root, "records")
	runDir := filepath.Join(r.Main, ".git", "orch", "run")
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var settles []int64
	for k := 0; k < kills; k++ {
		cmd, out := startRun(r, r.Main, "--until-idle")
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// The restart takes the dead run's state over first: its files go
		// once their runs are given back.
		deadline := time.Now().Add(30 * time.Second)
		for deadRunFiles(t, runDir, cmd.Process.Pid) > 0 {
			select {
			case err := <-exited:
				exited <- err
				if deadRunFiles(t, runDir, cmd.Process.Pid) > 0 {
					files, _ := filepath.Glob(filepath.Join(runDir, "*"))
					t.Fatalf("kill %d: the restart ended (%v) and left a dead run's state: %v\n%s", k, err, files, out.String())
				}
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				files, _ := filepath.Glob(filepath.Join(runDir, "*"))
				t.Fatalf("kill %d: the restart left a dead run's state: %v\n%s", k, files, out.String())
			}
		}
		time.Sleep(time.Duration(30+rng.Intn(400)) * time.Millisecond)
		_ = cmd.Process.Kill()
		<-exited
		checkDead(t, readRunsIfAny(t, records))
		settles = append(settles, time.Now().UnixNano())
	}
	cmd, out := startRun(r, r.Main, "--until-idle")
	waitRun(t, cmd, out, 10*time.Minute)
	runs := readRunsIfAny(t, records)
	checkDead(t, runs)
	checkExclusiveSettled(t, runs, settles)
	queues := checkFinished(t, r, r.Main)
	checkLanded(t, r, r.Main, r.Main)
	if queues[string(taskfile.Done)] != tasks {
		t.Errorf("tasks: %v, want all %d done", queues, tasks)
	}
	if left, _ := filepath.Glob(filepath.Join(runDir, "*.tmp")); len(left) > 0 {
		t.Errorf("temporary state files left: %v", left)
	}
	t.Logf("%d kills, %d runs; tasks: %v", kills, len(runs), queues)
	r.Fsck()
}

// deadRunFiles counts the state files in dir that are not the coordinator
// pid's own.
func deadRunFiles(t *testing.T, dir string, pid int) int {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	n := 0
	for _, p := range paths {
		if !strings.HasPrefix(filepath.Base(p), fmt.Sprintf("%d-", pid)) {
			n++
		}
	}
	return n
}

func readRunsIfAny(t *testing.T, path string) []*agentRun {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	return readRuns(t, path)
}

// TestRunTwoCoordinatorsOneClone: two orch runs with the same config (so
// both have slots impl-1 and rev-1) on one clone. No task is run by two
// agents at once, implementer or reviewer, and each submission is reviewed
// by one review claim at a time.
func TestRunTwoCoordinatorsOneClone(t *testing.T) {
	tasks := 16
	if fullSize() {
		tasks = 40
	}
	r := NewRepo(t)
	appendConfig(t, r, r.Main, steadyAgents(t, r.Root, 2, 1))
	r.SeedTasks(tasks, taskfile.Incoming)
	records := filepath.Join(r.Root, "records")
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for i := 0; i < 2; i++ {
		cmd, out := startRun(r, r.Main, "--until-idle")
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i := range cmds {
		waitRun(t, cmds[i], outs[i], 10*time.Minute)
	}
	// One may go idle while the other still reviews: once more, bounded.
	cmd, out := startRun(r, r.Main, "--until-idle")
	waitRun(t, cmd, out, 10*time.Minute)
	runs := readRuns(t, records)
	checkDead(t, runs)
	checkExclusive(t, runs, time.Now().UnixNano())
	refused := 0
	for _, run := range runs {
		if run.role == "reviewer" && run.how == "refused" {
			refused++
		}
	}
	if refused > 0 {
		t.Errorf("%d review runs were refused their verdict: a review claim was taken over by a slot of the same name", refused)
	}
	queues := checkFinished(t, r, r.Main)
	checkLanded(t, r, r.Main, r.Main)
	if queues[string(taskfile.Done)] != tasks {
		t.Errorf("tasks: %v, want all %d done", queues, tasks)
	}
	r.Fsck()
	if t.Failed() {
		t.Logf("the last run said:\n%s", tail(out.String(), 60))
		t.Logf("the first run said:\n%s", tail(outs[0].String(), 60))
	}
}

// TestRunTwoClonesSyncAllDone: two coordinators on two clones of one bare
// remote, with --sync, agents that always do their part: every task is
// done. A reviewer on one clone reviews the work an implementer committed
// on the other (its branch is pushed, then fetched), and no task is
// escalated for a missing branch.
func TestRunTwoClonesSyncAllDone(t *testing.T) {
	tasks := 8
	if fullSize() {
		tasks = 16
	}
	r := NewRepo(t)
	appendConfig(t, r, r.Main, steadyAgents(t, r.Root, 2, 1))
	r.SeedTasks(tasks, taskfile.Incoming)
	start := r.RevParse("refs/heads/main")
	remote, clones, _ := r.fleet(2, 1)
	records := filepath.Join(r.Root, "records")
	for round := 0; round < 3; round++ {
		var cmds []*exec.Cmd
		var outs []*strings.Builder
		for _, dir := range clones {
			cmd, out := startRun(r, dir, "--until-idle", "--sync")
			cmds, outs = append(cmds, cmd), append(outs, out)
		}
		for i := range cmds {
			waitRun(t, cmds[i], outs[i], 10*time.Minute)
			if strings.Contains(outs[i].String(), " escalated") {
				t.Errorf("clone %d escalated a task:\n%s", i, tail(outs[i].String(), 30))
			}
		}
	}
	r.converge(remote, clones)
	runs := readRuns(t, records)
	checkDead(t, runs)
	checkExclusive(t, runs, time.Now().UnixNano())
	queues := checkFinished(t, r, r.Main)
	checkLanded(t, r, r.Main, remote)
	// Each task landed once, with no lost update of the remote's base.
	if landed := landedHistory(t, r, r.Main, remote, start, "none"); len(landed) != queues[string(taskfile.Done)] {
		t.Errorf("%d landings on the remote's main for %d done tasks", len(landed), queues[string(taskfile.Done)])
	}
	if queues[string(taskfile.Done)] != tasks {
		t.Errorf("tasks: %v, want all %d done", queues, tasks)
	}
}
