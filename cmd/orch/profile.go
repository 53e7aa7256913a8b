package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfile writes a CPU profile of the whole command to the file named
// by ORCH_CPUPROFILE, when that is set, and with it an allocation profile to
// ORCH_MEMPROFILE (for bench/ and `go tool pprof`; not a user feature). The
// returned function stops the profiles.
func startProfile() func() {
	p := os.Getenv("ORCH_CPUPROFILE")
	if p == "" {
		return func() {}
	}
	f, err := os.Create(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "orch: ORCH_CPUPROFILE:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "orch: ORCH_CPUPROFILE:", err)
		f.Close()
		return func() {}
	}
	mem := os.Getenv("ORCH_MEMPROFILE")
	if mem != "" {
		runtime.MemProfileRate = 4096
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if mem != "" {
			// The profile is as of the last collection: without one
			// here, what was allocated since (a list's output) is missing.
			runtime.GC()
			if mf, err := os.Create(mem); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(mf, 0)
				mf.Close()
			}
		}
	}
}
