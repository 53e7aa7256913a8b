//go:build unix

package coordinator

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// An agent runs under a supervisor of its own (Supervise, started as the
// hidden command `orch __supervise`), so that no process it starts outlives
// the coordinator: the agent's shell and everything it starts are one
// process group, which the supervisor ends when the agent's shell exits
// (leftovers), when the coordinator asks (SIGTERM: a timeout, a second
// Ctrl-C) and when the coordinator is gone (Linux sends the supervisor
// SIGTERM as its parent dies; elsewhere, and as a second line on Linux, it
// notices its parent changed within half a second). The supervisor stays in
// the coordinator's process group and the agent gets one of its own, so a
// Ctrl-C at the terminal reaches the coordinator (which drains) and not the
// agents. On Linux the supervisor is also the child subreaper of the
// agent's tree, so a process that leaves the group (setsid, a daemon) is
// reparented to it and ended with the rest once the agent's shell exits;
// the supervisor names each such process on the status pipe ("escaped PID
// COMMAND"), for the run's note. Elsewhere such a process is beyond it;
// docs/agents.md says so.

// SupervisorCommand is the hidden verb that runs Supervise.
const SupervisorCommand = "__supervise"

// Supervise runs `sh -c script` as the leader of a new process group with
// the supervisor's standard files and environment, and returns its exit
// code (128+N for a death by signal N). parent is the coordinator's pid:
// when the supervisor's parent is no longer that process, the group is
// ended. It writes the group's id on fd 3, when open, so that the
// coordinator can end the group itself should the supervisor die.
func Supervise(parent int, grace time.Duration, script string) int {
	if os.Getppid() != parent {
		return 128 + int(syscall.SIGKILL) // the coordinator is gone already
	}
	// The coordinator decides what a Ctrl-C or a hang-up means; a handler
	// (not SIG_IGN, which the agent would inherit) keeps them from
	// killing the supervisor.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)

	// The status pipe is the supervisor's: the agent must not inherit it,
	// or a process it leaves behind would hold the run open.
	syscall.CloseOnExec(3)
	status := os.NewFile(3, "status")
	becomeSubreaper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "orch run: cannot start sh: %v\n", err)
		return 127
	}
	pgid := cmd.Process.Pid
	if status != nil {
		fmt.Fprintf(status, "pgid %d\n", pgid)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	end := func(code int) int {
		endEscaped(status, grace)
		if status != nil {
			status.Close()
		}
		return code
	}
	for {
		select {
		case err := <-done:
			endGroup(pgid, grace, nil)
			return end(exitCode(err))
		case s := <-sigs:
			if s == syscall.SIGTERM {
				return end(endGroup(pgid, grace, done))
			}
		case <-tick.C:
			if os.Getppid() != parent {
				return end(endGroup(pgid, grace, done))
			}
		}
	}
}

// endEscaped ends the processes that left the agent's group and were
// reparented to the supervisor (its subreaper's children, once the agent's
// shell has been waited for): SIGTERM, SIGKILL after grace, each reaped.
// Each is named on the status pipe first.
func endEscaped(status *os.File, grace time.Duration) {
	self := os.Getpid()
	pids, names := childrenOf(self)
	if len(pids) == 0 {
		return
	}
	for i, pid := range pids {
		if status != nil {
			fmt.Fprintf(status, "escaped %s\n", names[i])
		}
		// Its own group too: a daemon's children are in it.
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline, killed := time.Now().Add(grace), false
	for {
		for {
			// Reap what has ended (reparented grandchildren included).
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		left, _ := childrenOf(self)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			if killed {
				return // past SIGKILL: nothing more a signal can do
			}
			for _, pid := range left {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			deadline, killed = time.Now().Add(time.Second), true
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// endGroup ends the process group: SIGTERM, then SIGKILL to whatever is
// left after grace. done, when not nil, is the leader's Wait; the exit code
// is the leader's.
func endGroup(pgid int, grace time.Duration, done chan error) int {
	code := 128 + int(syscall.SIGTERM)
	if syscall.Kill(-pgid, 0) != nil {
		if done != nil {
			return exitCode(<-done)
		}
		return code
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if done != nil {
			select {
			case err := <-done:
				code, done = exitCode(err), nil
			default:
			}
		}
		if done == nil && syscall.Kill(-pgid, 0) != nil {
			return code
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if done != nil {
		code = exitCode(<-done)
	}
	return code
}

// exitCode is a Wait's error as an exit code: 128+N for a death by signal N.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 127
}

// SuperviseMain runs Supervise from the hidden verb's arguments: the
// coordinator's pid, the grace period and the script.
func SuperviseMain(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "orch: "+SupervisorCommand+" is started by orch run")
		return 2
	}
	parent, err1 := strconv.Atoi(args[0])
	grace, err2 := time.ParseDuration(args[1])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "orch: "+SupervisorCommand+" is started by orch run")
		return 2
	}
	return Supervise(parent, grace, args[2])
}
