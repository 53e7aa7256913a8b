package web

import (
	"io"
	"os"
	"strings"
	"time"

	"github.com/orch-tool/orch/coordinator"
)

// runningRow is one agent orch run runs on this clone now: the board's
// "running" panel, with the newest lines of its log.
type runningRow struct {
	Slot     string
	Reviewer bool
	Task     string
	Attempt  int
	Elapsed  string
	Tail     string
}

// tailBytes is how much of a log's end the board reads.
const tailBytes = 2048

// running lists what every live orch run of this clone runs (privDir:
// <git common dir>/orch).
func running(privDir string, now time.Time) []runningRow {
	var out []runningRow
	for _, j := range coordinator.Running(privDir) {
		out = append(out, runningRow{Slot: j.Slot, Reviewer: j.Reviewer, Task: j.Task, Attempt: j.Attempt,
			Elapsed: now.Sub(j.Started).Round(time.Second).String(), Tail: logTail(j.Log, 3)})
	}
	return out
}

// logTail is the last n lines of a log (of its last tailBytes).
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	} else if fi.Size() > tailBytes {
		if _, err := f.Seek(-tailBytes, io.SeekEnd); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, tailBytes))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
