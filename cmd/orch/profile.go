package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile of the whole command to the file named
// by ORCH_CPUPROFILE, when that is set (for bench/ and `go tool pprof`; not
// a user feature). The returned function stops the profile.
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
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
