package coordinator

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// supervisorAttr has Linux send the supervisor SIGTERM when the coordinator
// dies (kill -9 included), so that it ends the agent's group at once.
func supervisorAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// becomeSubreaper makes the supervisor the parent of every orphan among the
// agent's descendants: a process that leaves the agent's group and session
// (setsid, a daemon's double fork) is still the supervisor's to end.
func becomeSubreaper() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// childrenOf lists the processes whose parent is pid, each as "PID
// COMMAND LINE" (clipped): /proc's view.
func childrenOf(pid int) (pids []int, names []string) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(pid) || f[0] == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		name := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		if name == "" {
			name = s[strings.IndexByte(s, '(')+1 : i]
		}
		if len(name) > 200 {
			name = name[:200]
		}
		pids, names = append(pids, n), append(names, e.Name()+" "+name)
	}
	return pids, names
}
