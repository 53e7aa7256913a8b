// Package trace times the phases of an orch command: ORCH_TRACE=1 prints
// the time of each on stderr, for finding where the milliseconds go (bench/,
// not a user feature). ORCH_TRACE=mem adds the resident memory at the end
// of each phase and its high-water mark (Linux: /proc/self/status), for
// finding where the megabytes go.
package trace

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

var (
	on    = os.Getenv("ORCH_TRACE") != ""
	mem   = os.Getenv("ORCH_TRACE") == "mem"
	start = time.Now()
	mu    sync.Mutex // phases may end in goroutines of their own
	last  = start
)

// On reports whether tracing is on, for a caller that would build a phase's
// name only to print it.
func On() bool { return on }

// Phase notes the end of a phase.
func Phase(name string) {
	if !on {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	now := time.Now()
	if mem {
		name += residentMemory()
	}
	fmt.Fprintf(os.Stderr, "trace %7.2fms %+7.2fms %s\n", float64(now.Sub(start).Microseconds())/1000, float64(now.Sub(last).Microseconds())/1000, name)
	last = now
}

// residentMemory is the process's resident set (anonymous and file) and
// its peak, as /proc/self/status gives them; "" where there is none.
func residentMemory() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	field := func(key string) string {
		i := bytes.Index(b, []byte("\n"+key+":"))
		if i < 0 {
			return "?"
		}
		line, _, _ := bytes.Cut(b[i+len(key)+2:], []byte("\n"))
		return string(bytes.TrimSpace(line))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return fmt.Sprintf("  [rss %s (anon %s, file %s), peak %s; heap %d kB live+garbage, %d kB idle unreleased, %d GCs]",
		field("VmRSS"), field("RssAnon"), field("RssFile"), field("VmHWM"), ms.HeapAlloc>>10, (ms.HeapIdle-ms.HeapReleased)>>10, ms.NumGC)
}
