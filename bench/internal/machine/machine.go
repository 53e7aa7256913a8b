// Package machine is what the bench programs say about the machine they
// measure on, and how they find the orch binary they measure.
package machine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Loadavg is the 1, 5 and 15 minute load averages, as /proc/loadavg says
// them ("?" where it cannot be read): a figure is read beside the load it
// was measured under.
func Loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Binary is the absolute path of the binary name (found on PATH when it
// has no directory), so that it stays valid in the directories the bench
// runs it in.
func Binary(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}
