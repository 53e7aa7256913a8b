package web

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/workflow"
)

// sseStream reads a Server-Sent Events stream's "tip" events.
type sseStream struct {
	resp *http.Response
	tips chan string
}

func openEvents(t *testing.T, ts *testServer, ctx context.Context) *sseStream {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{resp: resp, tips: make(chan string, 16)}
	go func() {
		defer close(s.tips)
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "tip":
				s.tips <- strings.TrimPrefix(line, "data: ")
			case line == "":
				event = ""
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// next waits for the next tip; a stream that says nothing for long is a
// failure, not a hang.
func (s *sseStream) next(t *testing.T) (string, bool) {
	t.Helper()
	select {
	case tip, ok := <-s.tips:
		return tip, ok
	case <-time.After(20 * time.Second):
		t.Fatal("no event from /events")
		return "", false
	}
}

// TestEvents: the stream sends the tip at once, then every new tip when
// the state branch moves, whoever moved it (here another process's claim);
// Close ends it.
func TestEvents(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := openEvents(t, ts, ctx)

	first, _ := ev.next(t)
	if want := git(t, dir, "rev-parse", "orch"); first != want {
		t.Errorf("first tip %s, want %s", first, want)
	}
	as(t, dir, "agent-a", func(e *workflow.Engine) error {
		_, err := e.Claim(workflow.ClaimOptions{Task: "T-7hd3kq"})
		return err
	})
	moved := git(t, dir, "rev-parse", "orch")
	if tip, _ := ev.next(t); tip != moved {
		t.Errorf("tip after the claim %s, want %s", tip, moved)
	}
	// A change made by git itself (as a fetch or a person would) is the
	// same.
	byGit := git(t, dir, "commit-tree", "-p", moved, "-m", "moved by git", moved+"^{tree}")
	git(t, dir, "update-ref", "refs/heads/orch", byGit)
	if tip, _ := ev.next(t); tip != byGit {
		t.Errorf("tip after update-ref %s, want %s", tip, byGit)
	}

	// The page a live update fetches: the part below the header, with the
	// tip it shows.
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/", nil)
	req.Header.Set("X-Orch-Fragment", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	if resp.Header.Get("X-Orch-Tip") != git(t, dir, "rev-parse", "orch") {
		t.Errorf("X-Orch-Tip %q", resp.Header.Get("X-Orch-Tip"))
	}
	mustContain(t, "fragment", body, `<main id="main"`, `aria-label="incoming"`)
	mustNotContain(t, "fragment", body, "<html", "<header")

	// A rewound branch is told as the CLI tells it, and written to by
	// nobody.
	git(t, dir, "update-ref", "refs/heads/orch", moved+"~1")
	if tip, _ := ev.next(t); tip != git(t, dir, "rev-parse", "orch") {
		t.Errorf("tip after the rewind %s", tip)
	}
	code, page := ts.get(t, nil, "/")
	if code != http.StatusInternalServerError {
		t.Errorf("GET / after a rewind: %d", code)
	}
	mustContain(t, "after a rewind", page, "orch moved backwards", "nothing was written")

	// Close ends the stream (so that Shutdown does not wait for it).
	ts.srv.Close()
	for {
		if _, ok := ev.next(t); !ok {
			break
		}
	}
}

// TestAssetsAndHeaders: the style sheet and the script come from the
// binary; every answer carries the security headers; unknown names are 404.
func TestAssetsAndHeaders(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	for path, ctype := range map[string]string{"/assets/style.css": "text/css; charset=utf-8", "/assets/live.js": "text/javascript; charset=utf-8"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ctype || len(body) < 100 {
			t.Errorf("GET %s: %d %s, %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
	}
	for _, path := range []string{"/assets/nothing.js", "/assets/..%2ftemplates%2flayout.html", "/assets/"} {
		if code, _ := ts.get(t, nil, path); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, code)
		}
	}
	resp, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	h := resp.Header
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy allows unsafe sources: %q", csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("headers: %v", h)
	}
	if h.Get("Cache-Control") != "no-store" {
		t.Errorf("a page may be cached: %q", h.Get("Cache-Control"))
	}
}
