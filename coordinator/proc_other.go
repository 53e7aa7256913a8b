//go:build unix && !linux

package coordinator

import "syscall"

// supervisorAttr: without a parent-death signal, the supervisor notices
// that the coordinator is gone by polling its parent (see Supervise).
func supervisorAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
