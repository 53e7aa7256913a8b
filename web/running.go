package web

import (
	"io"
	"os"
	"strings"
	"time"

	"github.com/orch-tool/orch/coordinator"
	"github.com/orch-tool/orch/workflow"
)

// runningRow is one agent orch run runs on this clone now: the board's
// "running" panel: the task's title, the agent's role, how long it has
// run, what the task's earlier runs spent (the coordinator's state file
// does not count a run's tokens until it ends: the event log does), and
// the newest lines of its log.
type runningRow struct {
	Slot     string
	Reviewer bool
	Task     string
	Title    string
	Role     string
	Attempt  int
	Elapsed  string
	Tail     string
	LogHref  string
	Runs     int // the task's runs that ended, and what they spent
	Tokens   int64
	Cost     float64
}

// tailBytes is how much of a log's end the board reads.
const tailBytes = 2048

// running lists what every live orch run of this clone runs (privDir:
// <git common dir>/orch).
func running(e *workflow.Engine, memo map[string]any, now time.Time) ([]runningRow, error) {
	jobs := coordinator.Running(e.Store.PrivDir())
	if len(jobs) == 0 {
		return nil, nil
	}
	evs, err := eventsByTask(e, memo)
	if err != nil {
		return nil, err
	}
	var out []runningRow
	for _, j := range jobs {
		r := runningRow{Slot: j.Slot, Reviewer: j.Reviewer, Task: j.Task, Attempt: j.Attempt,
			Elapsed: now.Sub(j.Started).Round(time.Second).String(), Tail: logTail(j.Log, 3),
			LogHref: "/logs/" + j.Task + "?attempt=" + itoa(j.Attempt)}
		if j.Reviewer {
			r.Role, r.LogHref = "reviewer", r.LogHref+"&review=1"
		}
		if s := e.Store.SummaryByID(j.Task); s != nil {
			r.Title = s.Task.Title
			if r.Role == "" {
				r.Role = s.Task.Role
			}
		}
		if r.Role == "" {
			r.Role = e.Config.DefaultRole
		}
		if te := evs[j.Task]; te != nil {
			r.Runs, r.Tokens, r.Cost = len(te.Runs), te.Tokens, te.Cost
		}
		out = append(out, r)
	}
	return out, nil
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
