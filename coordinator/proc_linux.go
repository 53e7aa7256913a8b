package coordinator

import "syscall"

// supervisorAttr has Linux send the supervisor SIGTERM when the coordinator
// dies (kill -9 included), so that it ends the agent's group at once.
func supervisorAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
