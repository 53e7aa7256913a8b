package web

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/orch-tool/orch/bench/repogen"
	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/workflow"
)

// BenchmarkBoard10k is the server time of the board of 10,000 tasks (the
// issue's budget is 200 ms): the handler alone, no network, with the
// realistic mix of queues bench/gen makes (about 6,000 tasks in open
// queues).
//
//   - warm: the state branch has not moved since the last page (the
//     snapshot is in memory): the cost of every live update's fetch;
//   - new-tip: the branch moved, so the page opens the store again first
//     (lock, snapshot read, release) before it renders;
//   - all-cards: every card of the open queues (?limit=0), not the first
//     100 of each column.
func BenchmarkBoard10k(b *testing.B) {
	dir := benchRepo(b, 10_000)
	hs := httptest.NewUnstartedServer(nil)
	defer hs.Listener.Close()
	addr := hs.Listener.Addr().String()
	s, err := New(testOptions(dir, "lead"), addr)
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	get := func(b *testing.B, path string) int {
		req := httptest.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d\n%s", path, rec.Code, clipBody(rec.Body.String()))
		}
		return rec.Body.Len()
	}
	for _, c := range []struct {
		name, path string
		newTip     bool
	}{
		{"warm", "/", false},
		{"new-tip", "/", true},
		{"all-cards", "/?limit=0", false},
	} {
		b.Run(c.name, func(b *testing.B) {
			size := get(b, c.path) // the first page opens the store
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if c.newTip {
					s.src.mu.Lock()
					s.src.e = nil // as if the ref had moved
					s.src.mu.Unlock()
				}
				get(b, c.path)
			}
			b.ReportMetric(float64(size)/1024, "KiB/page")
		})
	}
}

// benchRepo makes a repository whose state branch holds n generated tasks
// in every queue, with a view and a state cache written by one command.
func benchRepo(b *testing.B, n int) string {
	b.Helper()
	testgit.SetHome(b, "lead", "lead@example.com")
	b.Setenv("ORCH_AGENT", "")
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	git(b, dir, "init", "-q", "-b", "main")
	git(b, dir, "commit", "-q", "--allow-empty", "-m", "base")
	if _, err := repogen.Generate(dir, repogen.Options{Tasks: n, Commits: 100, Seed: 1, Now: time.Now()}); err != nil {
		b.Fatal(err)
	}
	e, err := workflow.Open(workflow.Options{Dir: dir, Actor: "lead"})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}
