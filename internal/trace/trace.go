// Package trace times the phases of an orch command: ORCH_TRACE=1 prints
// the time of each on stderr, for finding where the milliseconds go (bench/,
// not a user feature).
package trace

import (
	"fmt"
	"os"
	"time"
)

var (
	on    = os.Getenv("ORCH_TRACE") != ""
	start = time.Now()
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
	now := time.Now()
	fmt.Fprintf(os.Stderr, "trace %7.2fms %+7.2fms %s\n", float64(now.Sub(start).Microseconds())/1000, float64(now.Sub(last).Microseconds())/1000, name)
	last = now
}
