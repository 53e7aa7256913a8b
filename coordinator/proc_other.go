//go:build unix && !linux

package coordinator

import "syscall"

// supervisorAttr: without a parent-death signal, the supervisor notices
// that the coordinator is gone by polling its parent (see Supervise).
func supervisorAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// Without a child subreaper, a process that leaves the agent's group is
// beyond the supervisor (docs/agents.md says so).
func becomeSubreaper() {}

func childrenOf(int) ([]int, []string) { return nil, nil }
