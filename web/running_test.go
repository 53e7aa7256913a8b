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

	"github.com/orch-tool/orch/workflow"
)

// TestBoardRunning: the board shows what orch run runs on this clone (a
// live coordinator's state file), with its log's newest lines escaped, and
// nothing of a dead coordinator's.
func TestBoardRunning(t *testing.T) {
	dir := exampleRepo(t)
	priv := filepath.Join(dir, ".git", "orch")
	run := filepath.Join(priv, "run")
	if err := os.MkdirAll(run, 0o777); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(priv, "logs", "T-7hd3kq", "2.log")
	os.MkdirAll(filepath.Dir(log), 0o777)
	os.WriteFile(log, []byte(strings.Repeat("old line\n", 500)+"compiling <b>shapes</b>\nrunning tests\n"), 0o666)
	write := func(name string, hold bool, jobs string) {
		os.WriteFile(filepath.Join(run, name+".json"), []byte(jobs), 0o666)
		f, err := os.OpenFile(filepath.Join(run, name+".lock"), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if hold {
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Fatal(err)
			}
		}
	}
	started, _ := json.Marshal(time.Now().Add(-90 * time.Second))
	write("live", true, `[{"slot":"impl-3","task":"T-7hd3kq","attempt":2,"started":`+string(started)+`,"log":"`+log+`","pid":1},
		{"slot":"impl-4","claiming":true,"started":`+string(started)+`,"pid":1}]`)
	write("dead", false, `[{"slot":"ghost-1","task":"T-4k9x2m","attempt":1,"started":`+string(started)+`,"log":"","pid":2}]`)

	// An earlier run of the task, as orch run records one when it ends.
	as(t, dir, "lead", func(e *workflow.Engine) error {
		return e.RecordRun("T-7hd3kq", &workflow.RunRecordData{Agent: "agent-a", Role: "implementer", Attempt: 1, Input: 1200, Output: 34, CostUSD: 0.25})
	})

	ts := startServer(t, dir, testOptions(dir, "lead"))
	code, body := ts.get(t, nil, "/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	mustContain(t, "board", body, `aria-label="running"`, "impl-3", `href="/task/T-7hd3kq"`, `href="/logs/T-7hd3kq?attempt=2">attempt 2</a>`, "1m3",
		// The title, the role, and what the earlier run spent.
		`<span class="title">Add keyboard shortcuts for shape tools</span>`, `<span class="role">implementer</span>`, "1234 tokens", "$0.25", "1 earlier run",
		"compiling &lt;b&gt;shapes&lt;/b&gt;\nrunning tests")
	mustNotContain(t, "board", body, "ghost-1", "impl-4", "old line\nold line\nold line\nold line")
}
