package web

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	orch "github.com/orch-tool/orch"
	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/workflow"
)

// The tests run on real repositories in temporary directories, with a
// private git home (internal/testgit): the example state of orch init
// --example, a person called lead (the example's reviewer) and the roster's
// agents agent-a and agent-b.

// exampleRepo makes a repository with orch's example state and returns
// its directory.
func exampleRepo(t testing.TB) string {
	t.Helper()
	testgit.SetHome(t, "lead", "lead@example.com")
	t.Setenv("ORCH_AGENT", "")
	dir := testgit.EmptyRepo(t)
	e, err := workflow.Open(workflow.Options{Dir: dir, Actor: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Init(workflow.InitOptions{Example: orch.Example()}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return testgit.Git(t, dir, args...)
}

// as runs fn with an engine opened for actor, as a verb of the CLI would
// open it, and closes it.
func as(t testing.TB, dir, actor string, fn func(e *workflow.Engine) error) {
	t.Helper()
	sig := workflow.ActorSignals{Source: "--agent"}
	if strings.HasPrefix(actor, "agent-") {
		sig.EnvAgent = actor
	}
	e, err := workflow.Open(workflow.Options{Dir: dir, Actor: actor, Signals: sig})
	if err != nil {
		t.Fatal(err)
	}
	ferr := fn(e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
}

// testOptions are the options orch serve gives the server, for actor.
func testOptions(dir, actor string) Options {
	sig := workflow.ActorSignals{Source: "test (orch serve)"}
	if strings.HasPrefix(actor, "agent-") {
		sig.EnvAgent = actor
	}
	return Options{
		Read: func() (*workflow.Engine, error) {
			return workflow.Open(workflow.Options{Dir: dir, Actor: actor, NoReconcile: true, InMemoryCache: true})
		},
		Act: func(verb string) (*workflow.Engine, error) {
			return workflow.Open(workflow.Options{Dir: dir, Actor: actor, Optimistic: true, InMemoryCache: true, Verb: verb, Signals: sig})
		},
		Actor: actor,
		Token: "test-token-0123456789",
		Poll:  20 * time.Millisecond,
	}
}

// testServer serves dir's board on a loopback port.
type testServer struct {
	*httptest.Server
	srv  *Server
	dir  string
	stop func()
}

func startServer(t testing.TB, dir string, opts Options) *testServer {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	s, err := New(opts, hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = s.Handler()
	hs.Start()
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	ts := &testServer{Server: hs, srv: s, dir: dir}
	ts.stop = func() {
		cancel()
		s.Close()
		hs.Close()
	}
	t.Cleanup(ts.stop)
	return ts
}

// client is a browser without the token; login gives it the token.
func (ts *testServer) client(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (ts *testServer) login(t testing.TB, c *http.Client, token string) {
	t.Helper()
	resp, err := c.Get(ts.URL + "/?token=" + url.QueryEscape(token))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// get fetches a page and returns its status and body.
func (ts *testServer) get(t testing.TB, c *http.Client, path string) (int, string) {
	t.Helper()
	if c == nil {
		c = ts.client(t)
	}
	resp, err := c.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// post submits a form as the browser does: same origin.
func (ts *testServer) post(t testing.TB, c *http.Client, path string, form url.Values) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readBody(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// queueOf reads a task's queue from the state branch.
func queueOf(t testing.TB, dir, id string) string {
	t.Helper()
	e, err := workflow.Open(workflow.Options{Dir: dir, Actor: "lead", NoReconcile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := e.Store.SummaryByID(id)
	if s == nil {
		t.Fatalf("no task %s", id)
	}
	return string(s.Task.Queue)
}

func mustContain(t testing.TB, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s: no %q in:\n%s", what, w, clipBody(body))
		}
	}
}

func mustNotContain(t testing.TB, what, body string, bad ...string) {
	t.Helper()
	for _, w := range bad {
		if strings.Contains(body, w) {
			t.Errorf("%s: %q should not be in:\n%s", what, w, clipBody(body))
		}
	}
}

func clipBody(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "\n…"
	}
	return s
}

// nil0 is a command that does nothing but open the engine (which
// reconciles the view).
func nil0(*workflow.Engine) error { return nil }
