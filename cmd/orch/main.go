// Command orch turns a git repository into a work queue for coding agents
// and their reviewers. See README.md.
package main

import (
	"os"
	"runtime"
	"runtime/debug"
)

func main() {
	tuneRuntime()
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// tuneRuntime sets the runtime up for a process that lives for tens of
// milliseconds (the test scripts' orch calls it too, so that they run orch
// as it ships).
func tuneRuntime() {
	// orch lives briefly and allocates little: collecting garbage would
	// cost more than it frees. The soft memory limit makes the collector
	// run only when a command nears DESIGN's memory budget (building a cold
	// cache); it counts the Go heap, not the binary and stacks that RSS
	// adds, hence a limit below the budget. GOGC in the environment wins.
	// No allocation sampling (ORCH_MEMPROFILE turns it back on): each
	// sample of a large allocation walks the stack, a cost every command
	// at DESIGN's scale paid.
	runtime.MemProfileRate = 0
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(40 << 20)
	}
}
