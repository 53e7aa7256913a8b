package gitstore

import (
	"fmt"
	"os"
	"time"
)

// Tracing: ORCH_TRACE=1 prints the time of each phase of a command on
// stderr, for finding where the milliseconds go (bench/, not a user feature).
var (
	traceOn    = os.Getenv("ORCH_TRACE") != ""
	traceStart = time.Now()
	traceLast  = traceStart
)

// Trace notes the end of a phase.
func Trace(phase string) {
	if !traceOn {
		return
	}
	now := time.Now()
	fmt.Fprintf(os.Stderr, "trace %7.2fms %+7.2fms %s\n", float64(now.Sub(traceStart).Microseconds())/1000, float64(now.Sub(traceLast).Microseconds())/1000, phase)
	traceLast = now
}
