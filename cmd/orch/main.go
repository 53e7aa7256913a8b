// Command orch turns a git repository into a work queue for coding agents
// and their reviewers. See README.md.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	// orch lives for tens of milliseconds and allocates a few tens of MB:
	// collecting garbage would cost more than it frees. The soft memory
	// limit makes the collector run only if a command nears DESIGN's 50 MB
	// budget (a cold cache at 10,000 tasks). GOGC in the environment wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(48 << 20)
	}
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
