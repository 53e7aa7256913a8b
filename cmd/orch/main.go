package main

import (
	"math"
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
	// run only when a command nears docs/design.md §11's memory budget; it counts the
	// Go heap, not the binary and stacks that RSS adds, hence a limit below
	// the budget. GOGC in the environment wins.
	// No allocation sampling (ORCH_MEMPROFILE turns it back on): each
	// sample of a large allocation walks the stack, a cost every command
	// at docs/design.md §11's scale paid.
	runtime.MemProfileRate = 0
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(softMemoryLimit)
		watchLiveHeap()
	}
}

// softMemoryLimit is the heap at which the collector first runs.
const softMemoryLimit = 40 << 20

// watchLiveHeap gives up the memory limit for ordinary pacing (collect when
// the heap has grown by a quarter) once a collection finds most of the
// limit still live. Under a limit that the live heap exceeds, the runtime
// collects back to back, and a large command spends most of its time
// collecting (bench/README.md).
func watchLiveHeap() {
	sentinel := &gcSentinel{}
	runtime.SetFinalizer(sentinel, func(*gcSentinel) {
		// Just after a collection the heap is about what it found live.
		// (runtime/metrics would say so exactly, but its package
		// initialisation costs every orch process time.)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > softMemoryLimit*3/4 {
			if was := debug.SetGCPercent(25); was >= 0 {
				debug.SetGCPercent(was) // paced already: a long-running command's GOGC 100 stays
			}
			debug.SetMemoryLimit(math.MaxInt64)
			return
		}
		watchLiveHeap() // the next collection
	})
}

// gcSentinel is an object only a finalizer looks at: it runs after the
// collection that found it unreachable. It holds a pointer so that it is
// not packed with other small objects, which would delay its finalizer.
type gcSentinel struct {
	_ *int
	_ int
}
