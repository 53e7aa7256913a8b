package web

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/orch-tool/orch/coordinator"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/workflow"
)

// The logs page shows the end of a log: logLines lines of its last
// logBytes. orch logs prints it whole.
const (
	logBytes = 256 << 10
	logLines = 500
)

type logsPage struct {
	ID, Title, Queue string
	Logs             []logLink
	Chosen           *logLink
	Text             string // the chosen log's end, control characters made visible
	Cut              bool   // the log is longer than the page shows
	Running          bool   // a live orch run writes it: the page reloads itself
	Command          string // the command that prints it whole
	Runs             []runSpent
	Tokens           int64
	Cost             float64
}

// logLink is one run's log, and its address.
type logLink struct {
	coordinator.LogFile
	Name, Href, Modified string
	Here                 bool
}

// logRefresh is how often a page whose log is being written reloads
// itself (seconds): the state branch does not move as a log grows, so the
// live updates do not see it.
const logRefresh = 3

// logs is a task's run logs on this clone (orch logs ID): every attempt
// and review claim linked, the newest (or ?attempt=N, with &review=1 the
// review claim) shown from its end.
func (s *Server) logs(r *http.Request, e *workflow.Engine, memo map[string]any, f *frame) (view, error) {
	sm, _, err := e.LookupArchived(r.PathValue("id"))
	if err != nil {
		return view{}, err
	}
	t := &sm.Task
	p := &logsPage{ID: t.ID, Title: t.Title, Queue: string(t.Queue)}
	q := r.URL.Query()
	want, _ := strconv.Atoi(q.Get("attempt"))
	review := q.Get("review") == "1"
	priv := e.Store.PrivDir()
	for _, l := range coordinator.Logs(priv, t.ID) {
		ll := logLink{LogFile: l, Modified: when(l.Modified)}
		v := "attempt=" + itoa(l.Attempt)
		ll.Name = "attempt " + itoa(l.Attempt)
		if l.Reviewer {
			ll.Name = "review " + itoa(l.Attempt)
			v += "&review=1"
		}
		ll.Href = "/logs/" + t.ID + "?" + v
		p.Logs = append(p.Logs, ll)
	}
	for i := range p.Logs {
		l := &p.Logs[i]
		if want == 0 || (l.Attempt == want && l.Reviewer == review) {
			p.Chosen = l // the newest, or the one named
		}
	}
	if want > 0 && p.Chosen == nil {
		f.Title, f.Error, f.Hint = "No such log", "task "+t.ID+" has no log of that run on this clone", "the task's logs are listed at /logs/"+t.ID
		return view{name: "error", status: http.StatusNotFound}, nil
	}
	if c := p.Chosen; c != nil {
		c.Here = true
		p.Text, p.Cut = readLogEnd(c.Path)
		p.Command = "orch logs " + t.ID + " --attempt " + itoa(c.Attempt)
		if c.Reviewer {
			p.Command += " --review"
		}
		for _, j := range coordinator.Running(priv) {
			if j.Log == c.Path {
				p.Running = true
			}
		}
		if p.Running {
			f.Refresh = logRefresh
		}
	}
	if evs, err := eventsByTask(e, memo); err != nil {
		return view{}, err
	} else if te := evs[t.ID]; te != nil {
		p.Runs, p.Tokens, p.Cost = te.Runs, te.Tokens, te.Cost
	}
	f.Title = t.ID + " logs"
	return view{name: "logs", data: p}, nil
}

// readLogEnd reads the last logLines lines of a log's last logBytes, with
// its control characters made visible; cut says there is more before.
func readLogEnd(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	cut := false
	if fi.Size() > logBytes {
		if _, err := f.Seek(-logBytes, io.SeekEnd); err != nil {
			return "", false
		}
		cut = true
	}
	b, _ := io.ReadAll(io.LimitReader(f, logBytes))
	s := string(b)
	if cut {
		// The first line is cut somewhere: it goes.
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > logLines {
		lines, cut = lines[len(lines)-logLines:], true
	}
	return text.Visible(strings.Join(lines, "")), cut
}
