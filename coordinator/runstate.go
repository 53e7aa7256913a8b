//go:build unix

package coordinator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/orch-tool/orch/gitstore"
)

// Every orch run on a clone keeps a state file in the private state
// (<common dir>/orch/run/<pid>.json), locked for as long as it lives: the
// runs it has going, with their logs. The board reads the live ones to
// show what runs where. A file whose lock is free belongs to a
// coordinator that died (kill -9, a crash): its agents died with it (their
// supervisors end their groups), and the next orch run on the clone gives
// their tasks back at once (a pause with a note, a released review claim)
// instead of leaving them to their leases.

// RunningJob is one run in a state file.
type RunningJob struct {
	Slot     string    `json:"slot"`
	Reviewer bool      `json:"reviewer,omitempty"`
	Task     string    `json:"task"`
	Attempt  int       `json:"attempt"`
	Started  time.Time `json:"started"`
	Log      string    `json:"log"`
	PID      int       `json:"pid"` // the coordinator's
	// Supervisor is the pid of the run's supervisor (orch __supervise):
	// a restart waits for it to end the agent's group before it gives the
	// task to anyone else.
	Supervisor int `json:"supervisor,omitempty"`
	// Claiming marks a slot that is claiming since Started: the claim may
	// have landed before the coordinator recorded it (see recover).
	Claiming bool `json:"claiming,omitempty"`
}

// runState is this coordinator's state file.
type runState struct {
	path string
	lock *os.File
}

// stateDir is where the state files of one clone are.
func stateDir(privDir string) string { return filepath.Join(privDir, gitstore.RunDir) }

// openRunState creates and locks this coordinator's state file.
func openRunState(privDir string) (*runState, error) {
	dir := stateDir(privDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()))
	f, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot lock %s: %v", f.Name(), err)
	}
	rs := &runState{path: base + ".json", lock: f}
	return rs, rs.write(nil)
}

// write records the runs going now.
func (rs *runState) write(jobs []RunningJob) error {
	if jobs == nil {
		jobs = []RunningJob{}
	}
	b, err := json.Marshal(jobs)
	if err != nil {
		return err
	}
	tmp := rs.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, rs.path)
}

// close removes the state file: nothing runs any more.
func (rs *runState) close() {
	removeState(strings.TrimSuffix(rs.path, ".json"))
	rs.lock.Close()
}

// removeState removes a coordinator's state file, the temporary file a
// write of it may have left, and its lock, last: the lock is what says the
// file is a coordinator's.
func removeState(base string) {
	os.Remove(base + ".json")
	os.Remove(base + ".json.tmp")
	os.Remove(base + ".lock")
}

// live reports whether the coordinator of a state file still runs: its
// lock is held.
func live(lockPath string) bool {
	f, err := os.OpenFile(lockPath, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// Running lists the runs of every live orch run on this clone (privDir:
// <common dir>/orch), oldest first.
func Running(privDir string) []RunningJob {
	return slices.DeleteFunc(liveEntries(privDir, nil), func(j RunningJob) bool { return j.Claiming })
}

// liveEntries is every entry of the live coordinators' state files, claims
// in flight included, but those of the dead runs this process holds.
func liveEntries(privDir string, held []*deadRun) []RunningJob {
	var jobs []RunningJob
	paths, _ := filepath.Glob(filepath.Join(stateDir(privDir), "*.json"))
	for _, p := range paths {
		base := strings.TrimSuffix(p, ".json")
		if slices.ContainsFunc(held, func(d *deadRun) bool { return d.base == base }) {
			continue
		}
		if live(base + ".lock") {
			jobs = append(jobs, readJobs(p)...)
		}
	}
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].Started.Before(jobs[k].Started) })
	return jobs
}

func readJobs(path string) []RunningJob {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var js []RunningJob
	_ = json.Unmarshal(b, &js)
	return js
}

// waitSupervisorGone waits, up to d, for a dead coordinator's supervisor to
// end its agent's group and exit (Linux sends it SIGTERM as its parent
// dies; its agent gets kill_grace). A pid that is no supervisor now (it
// ended, and the pid was reused) is not waited for.
func waitSupervisorGone(pid int, d time.Duration) {
	if pid <= 0 {
		return
	}
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !isSupervisor(pid) {
			return
		}
	}
}

// isSupervisor reports whether pid runs orch's supervisor.
func isSupervisor(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		// No /proc (not Linux): alive is all that can be told.
		return true
	}
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
		return false // a zombie: its group is ended
	}
	return strings.Contains(string(cmdline), "\x00"+SupervisorCommand+"\x00")
}

// deadRun is the state file of a coordinator of this clone that died,
// held (its lock taken by this process) until its runs are given back.
type deadRun struct {
	base string
	jobs []RunningJob
	lock *os.File
}

// release removes the dead coordinator's state: its runs are given back.
func (d *deadRun) release() {
	removeState(d.base)
	d.lock.Close()
}

// keep leaves the state for the next orch run: a give-back failed.
func (d *deadRun) keep() { d.lock.Close() }

// orphans takes the state files of every dead coordinator of this clone.
// A state file is written only once its lock is held, and its runs are
// handed over while this process holds the dead lock, so a live
// coordinator's runs are never taken, and no two coordinators give back
// the same run. The caller gives the runs back and only then releases each
// (a crash in between leaves the file for the next orch run: a give-back is
// recorded before the state that names it is dropped).
func orphans(privDir string) []*deadRun {
	var out []*deadRun
	locks, _ := filepath.Glob(filepath.Join(stateDir(privDir), "*.lock"))
	for _, lockPath := range locks {
		f, err := os.OpenFile(lockPath, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // alive
			continue
		}
		base := strings.TrimSuffix(lockPath, ".lock")
		out = append(out, &deadRun{base: base, jobs: readJobs(base + ".json"), lock: f})
	}
	return out
}
