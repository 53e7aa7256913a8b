package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orch-tool/orch/internal/text"
)

// isolatedEnv is the environment of every command: a HOME of its own with
// a fixed identity, no system git config, none of orch's or git's
// variables that would redirect a command.
func isolatedEnv(work string) ([]string, error) {
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(home, 0o777); err != nil {
		return nil, err
	}
	gc := "[user]\n\tname = bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gc), 0o666); err != nil {
		return nil, err
	}
	env := envWithout(os.Environ(), "HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_NOSYSTEM", "ORCH_AGENT", "ORCH_STATE_BRANCH",
		"ORCH_TRACE", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", "FLEET_GITLOG")
	return append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"), nil
}

func envWithout(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// percentile is the nearest-rank percentile of sorted values (NaN when
// there are none).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

func msSince(start, t time.Time) float64 {
	return float64(t.Sub(start).Microseconds()) / 1000
}

func fmtMs(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtLatency(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q is not a duration (0, 150ms, 1s)", f)
		}
		out = append(out, d)
	}
	return out, nil
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// oneLine puts s on one line, cut at 300 characters.
func oneLine(s string) string { return text.Clip(text.OneLine(s), 300) }

func short(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 7 {
		return s[:7]
	}
	if s == "" {
		return "(none)"
	}
	return s
}

func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func fatal(err error) {
	cleanup()
	fmt.Fprintln(os.Stderr, "fleet:", err)
	os.Exit(1)
}
