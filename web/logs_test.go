package web

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdRun makes a live orch run of this clone, as the board sees one: a
// state file whose lock is held, listing jobs.
func holdRun(t *testing.T, dir, name string, jobs []map[string]any) {
	t.Helper()
	run := filepath.Join(dir, ".git", "orch", "run")
	if err := os.MkdirAll(run, 0o777); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, name+".json"), b, 0o666); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(run, name+".lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
}

// writeLog writes a run's log as orch run keeps it, modified at mod.
func writeLog(t *testing.T, dir, task, name, text string, mod time.Time) string {
	t.Helper()
	p := filepath.Join(dir, ".git", "orch", "logs", task, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLogsPage: /logs/ID links every attempt and review claim, shows the
// newest from its end with control characters made visible and markup as
// text, and reloads itself while a live orch run writes it.
func TestLogsPage(t *testing.T) {
	dir := exampleRepo(t)
	now := time.Now()
	writeLog(t, dir, "T-3vfp8e", "1.log", "first attempt\n", now.Add(-3*time.Hour))
	writeLog(t, dir, "T-3vfp8e", "review-1.log", "the reviewer's run\n", now.Add(-2*time.Hour))
	newest := writeLog(t, dir, "T-3vfp8e", "2.log",
		strings.Repeat("old line\n", logLines+10)+"title \x1b]0;pwned\x07 <script>alert(1)</script>\nlast line\n", now.Add(-time.Minute))
	ts := startServer(t, dir, testOptions(dir, "lead"))

	code, body := ts.get(t, nil, "/logs/T-3vfp8e")
	if code != http.StatusOK {
		t.Fatalf("GET /logs: %d\n%s", code, clipBody(body))
	}
	mustContain(t, "logs", body, `aria-label="logs"`,
		`href="/logs/T-3vfp8e?attempt=1">attempt 1</a>`, `href="/logs/T-3vfp8e?attempt=1&amp;review=1">review 1</a>`, "<b>attempt 2</b>",
		`title \x1b]0;pwned\x07 &lt;script&gt;alert(1)&lt;/script&gt;`+"\nlast line", "<code>orch logs T-3vfp8e --attempt 2</code> prints the whole log")
	mustNotContain(t, "logs", body, "\x1b", "<script>alert", "first attempt", `http-equiv="refresh"`)
	if n := strings.Count(body, "old line"); n != logLines-2 {
		t.Errorf("%d old lines shown, want the newest %d lines in all", n, logLines)
	}

	_, body = ts.get(t, nil, "/logs/T-3vfp8e?attempt=1&review=1")
	mustContain(t, "review log", body, "the reviewer&#39;s run", "<b>review 1</b>")
	if code, _ := ts.get(t, nil, "/logs/T-3vfp8e?attempt=7"); code != http.StatusNotFound {
		t.Errorf("a log that is not there: %d, want 404", code)
	}
	// A task with no log says how logs come to be; the task page links here.
	_, body = ts.get(t, nil, "/logs/T-9mwq4c")
	mustContain(t, "no logs", body, "No log of this task on this clone")
	_, body = ts.get(t, nil, "/task/T-3vfp8e")
	mustContain(t, "task page", body, `href="/logs/T-3vfp8e"`)

	// Written by a live orch run: the page reloads itself.
	holdRun(t, dir, "live", []map[string]any{{"slot": "impl-1", "task": "T-3vfp8e", "attempt": 2, "started": now.Add(-time.Minute), "log": newest, "pid": 1}})
	_, body = ts.get(t, nil, "/logs/T-3vfp8e")
	mustContain(t, "running log", body, `<meta http-equiv="refresh" content="3">`, "running now")
}
