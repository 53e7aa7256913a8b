package web

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orch-tool/orch/workflow"
)

const testToken = "test-token-0123456789"

// csrfOf reads the form token from a page the browser may act on.
func csrfOf(t *testing.T, body string) string {
	t.Helper()
	const mark = `name="csrf" value="`
	i := strings.Index(body, mark)
	if i < 0 {
		t.Fatalf("no csrf field in:\n%s", clipBody(body))
	}
	rest := body[i+len(mark):]
	return rest[:strings.IndexByte(rest, '"')]
}

// TestLogin: the link orch serve prints turns the token into a cookie and
// drops it from the address; a wrong token gives nothing.
func TestLogin(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))

	c := ts.client(t)
	_, body := ts.get(t, c, "/task/T-5ncg1r")
	mustContain(t, "before login", body, "read-only in this browser")
	mustNotContain(t, "before login", body, `name="csrf"`, `action="/task/T-5ncg1r/approve"`)

	// A wrong token: redirected without it, and still no buttons.
	resp, err := c.Get(ts.URL + "/task/T-5ncg1r?token=wrong&x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/task/T-5ncg1r?x=1" {
		t.Errorf("wrong token: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if len(resp.Cookies()) != 0 {
		t.Errorf("a wrong token set a cookie: %v", resp.Cookies())
	}

	ts.login(t, c, testToken)
	u, _ := url.Parse(ts.URL)
	var tok *http.Cookie
	for _, ck := range c.Jar.Cookies(u) {
		if strings.HasPrefix(ck.Name, "orch_serve_") {
			tok = ck
		}
	}
	if tok == nil || tok.Value != testToken {
		t.Fatalf("no token cookie after login: %v", c.Jar.Cookies(u))
	}
	_, body = ts.get(t, c, "/task/T-5ncg1r")
	mustContain(t, "after login", body, "acting as <b>lead</b>", `action="/task/T-5ncg1r/approve"`, `action="/task/T-5ncg1r/reject"`, `name="csrf"`)
	// The queue decides the buttons: a provisional task is not requeued
	// from incoming, nor decided without a refusal.
	mustNotContain(t, "after login", body, `action="/task/T-5ncg1r/decide"`)
}

// TestActionApprove: a same-origin POST with the cookie and the form's token
// runs orch approve as the person who started the server: one commit by
// them, and the page again (Post/Redirect/Get) saying what happened.
func TestActionApprove(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	c := ts.client(t)
	ts.login(t, c, testToken)
	_, page := ts.get(t, c, "/task/T-5ncg1r")
	csrf := csrfOf(t, page)

	resp := ts.post(t, c, "/task/T-5ncg1r/approve", url.Values{"csrf": {csrf}, "text": {"Reads well."}})
	readBody(t, resp)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "/task/T-5ncg1r?") || !strings.Contains(loc, "did=approve") || !strings.Contains(loc, "to=approved") {
		t.Errorf("approve redirects to %q", loc)
	}
	if q := queueOf(t, dir, "T-5ncg1r"); q != "approved" { // the example lands its work
		t.Fatalf("T-5ncg1r is %s after approve, want approved", q)
	}
	// The commit is lead's, made the way the CLI makes it; and as after
	// the CLI's transitions, the example's tasks finished in February are
	// archived after it, in a commit of their own.
	msg := git(t, dir, "log", "-1", "--grep=^Orch-Action: approve$", "--format=%an%n%B", "orch")
	mustContain(t, "commit", msg, "lead\n", "Orch-Action: approve", "Orch-Actor: lead", "provisional -> approved")
	mustContain(t, "the commit after it", git(t, dir, "log", "-1", "--format=%B", "orch"), "orch: archive ", "Orch-Archived: ")

	_, after := ts.get(t, c, loc)
	mustContain(t, "after approve", after, `class="flash"`, "approve: provisional → approved (commit ", `<span class="badge q-approved">approved</span>`)

	// A crafted flash shows only known words.
	_, crafted := ts.get(t, c, "/task/T-5ncg1r?did=approve&from=<b>x</b>&to=done&commit=zz")
	mustContain(t, "crafted flash", crafted, "approve: done")
	mustNotContain(t, "crafted flash", crafted, "<b>x</b>", "&lt;b&gt;x")
}

// TestActionRejectRequeueDecide: the other verbs, each under its own rules.
func TestActionRejectRequeueDecide(t *testing.T) {
	dir := exampleRepo(t)
	refuseAs(t, dir, "agent-b", "T-9mwq4c")
	ts := startServer(t, dir, testOptions(dir, "lead"))
	c := ts.client(t)
	ts.login(t, c, testToken)
	_, page := ts.get(t, c, "/task/T-5ncg1r")
	csrf := csrfOf(t, page)

	// reject needs its text: the page again, 400, the CLI's message.
	resp := ts.post(t, c, "/task/T-5ncg1r/reject", url.Values{"csrf": {csrf}, "text": {"  "}})
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("reject without text: %d", resp.StatusCode)
	}
	mustContain(t, "reject without text", body, `class="error"`, "a rejection needs its text")

	resp = ts.post(t, c, "/task/T-5ncg1r/reject", url.Values{"csrf": {csrf}, "text": {"The export drops the layers.\r\nKeep them."}})
	readBody(t, resp)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("reject: %d", resp.StatusCode)
	}
	if q := queueOf(t, dir, "T-5ncg1r"); q != "rejected" {
		t.Fatalf("T-5ncg1r is %s after reject", q)
	}
	_, task := ts.get(t, c, "/task/T-5ncg1r")
	mustContain(t, "rejected task", task, "Rejection #1", "From lead via orch reject", "The export drops the layers.\nKeep them.")

	// An illegal transition: the page again with the CLI's message and
	// hint, and what was typed kept in its box.
	resp = ts.post(t, c, "/task/T-5ncg1r/approve", url.Values{"csrf": {csrf}, "text": {"typed notes"}})
	body = readBody(t, resp)
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("approve of a rejected task: %d", resp.StatusCode)
	}
	mustContain(t, "illegal approve", body, `class="error"`, "rejected")

	// requeue: the escalated task back to incoming. Kept for agent-b, it
	// is refused by the engine's rule (agent-b is locked out of it).
	resp = ts.post(t, c, "/task/T-1qzk7w/requeue", url.Values{"csrf": {csrf}, "to": {"agent-b"}})
	body = readBody(t, resp)
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("requeue --to a locked-out agent: %d", resp.StatusCode)
	}
	mustContain(t, "requeue to agent-b", body, "agent-b is locked out of T-1qzk7w", `name="to" value="agent-b"`)
	resp = ts.post(t, c, "/task/T-1qzk7w/requeue", url.Values{"csrf": {csrf}})
	if body := readBody(t, resp); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("requeue: %d\n%s", resp.StatusCode, clipBody(body))
	}
	if q := queueOf(t, dir, "T-1qzk7w"); q != "incoming" {
		t.Fatalf("T-1qzk7w is %s after requeue", q)
	}

	// decide: the protocol's default for a BLOCKER is defer.
	_, blocked := ts.get(t, c, "/task/T-9mwq4c")
	mustContain(t, "blocked task", blocked, `action="/task/T-9mwq4c/decide"`)
	resp = ts.post(t, c, "/task/T-9mwq4c/decide", url.Values{"csrf": {csrf}, "decision": {"override"}, "text": {"The staging API is back; go on."}})
	readBody(t, resp)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("decide: %d", resp.StatusCode)
	}
	if q := queueOf(t, dir, "T-9mwq4c"); q != "claimed" {
		t.Fatalf("T-9mwq4c is %s after decide override, want claimed", q)
	}

	// An unknown verb is no action at all.
	resp = ts.post(t, c, "/task/T-7hd3kq/archive", url.Values{"csrf": {csrf}})
	readBody(t, resp)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST archive: %d, want 404", resp.StatusCode)
	}
}

// TestActionGuards: without the cookie, with a wrong form token, from
// another site, under another Host, on a read-only server, and as an agent,
// nothing moves.
func TestActionGuards(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	tip := git(t, dir, "rev-parse", "orch")
	c := ts.client(t)
	ts.login(t, c, testToken)
	_, page := ts.get(t, c, "/task/T-5ncg1r")
	csrf := csrfOf(t, page)
	form := url.Values{"csrf": {csrf}, "text": {"ok"}}

	// No cookie (a browser that never opened the printed link).
	anon := ts.client(t)
	resp := ts.post(t, anon, "/task/T-5ncg1r/approve", form)
	if readBody(t, resp); resp.StatusCode != http.StatusForbidden {
		t.Errorf("approve without the cookie: %d", resp.StatusCode)
	}
	// The cookie but not the form's token.
	resp = ts.post(t, c, "/task/T-5ncg1r/approve", url.Values{"csrf": {"0000"}, "text": {"ok"}})
	if readBody(t, resp); resp.StatusCode != http.StatusForbidden {
		t.Errorf("approve with a wrong form token: %d", resp.StatusCode)
	}
	// A form on another site posting here: the browser says so.
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		{"Origin": "https://evil.example"},
	} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/task/T-5ncg1r/approve", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
			t.Errorf("cross-site approve %v: %d %s", h, resp.StatusCode, body)
		}
	}
	// A name that is not this server's (DNS rebinding): refused, for reads too.
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(m, ts.URL+"/task/T-5ncg1r/approve", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Host = "attacker.example:" + ts.Listener.Addr().String()[strings.LastIndexByte(ts.Listener.Addr().String(), ':')+1:]
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if readBody(t, resp); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("%s with Host %s: %d", m, req.Host, resp.StatusCode)
		}
	}
	if now := git(t, dir, "rev-parse", "orch"); now != tip {
		t.Fatalf("a refused action moved the state branch")
	}

	// A read-only server: no token, no buttons, every POST refused.
	ro := testOptions(dir, "lead")
	ro.Token = ""
	rs := startServer(t, dir, ro)
	if rs.srv.Actions() || rs.srv.ReadOnly() == "" {
		t.Errorf("a server without a token takes actions")
	}
	rc := rs.client(t)
	_, body := rs.get(t, rc, "/?token="+testToken)
	resp = rs.post(t, rc, "/task/T-5ncg1r/approve", form)
	if readBody(t, resp); resp.StatusCode != http.StatusForbidden {
		t.Errorf("approve on a read-only server: %d", resp.StatusCode)
	}
	_, body = rs.get(t, rc, "/task/T-5ncg1r")
	mustContain(t, "read-only", body, "read-only: started read-only")
	mustNotContain(t, "read-only", body, `name="csrf"`)

	// --public: read-only whatever the token.
	pub := testOptions(dir, "lead")
	pub.Public = true
	if ps := startServer(t, dir, pub); ps.srv.Actions() {
		t.Errorf("a public server takes actions")
	}

	// ORCH_AGENT set, or a name in the roster: an agent, read-only.
	for _, actor := range []string{"agent-a", "lead"} {
		o := testOptions(dir, actor)
		if actor == "lead" {
			o.Signals.EnvAgent = "lead"
		}
		as := startServer(t, dir, o)
		if as.srv.Actions() {
			t.Errorf("a server run by agent %s takes actions", actor)
		}
		ac := as.client(t)
		as.login(t, ac, testToken)
		resp := as.post(t, ac, "/task/T-5ncg1r/approve", form)
		if readBody(t, resp); resp.StatusCode != http.StatusForbidden {
			t.Errorf("approve by agent %s: %d", actor, resp.StatusCode)
		}
		_, body := as.get(t, ac, "/task/T-5ncg1r")
		mustContain(t, "agent's board", body, actor+" is an agent", "the board&#39;s actions are a human&#39;s")
	}
	if now := git(t, dir, "rev-parse", "orch"); now != tip {
		t.Fatalf("a refused action moved the state branch")
	}
}

// TestActionAgentByRoster: a server started by a person whose name the
// roster then gives to an agent refuses the action with the engine's
// verdict (the check runs on the engine the action opens).
func TestActionAgentByRoster(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	c := ts.client(t)
	ts.login(t, c, testToken)
	_, page := ts.get(t, c, "/task/T-5ncg1r")
	csrf := csrfOf(t, page)
	// A hand edit of config.yaml, committed by lead's next command.
	p := filepath.Join(dir, ".orchestrator", "config.yaml")
	cfg, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "agents:\n", "agents:\n  - {name: lead, roles: [reviewer]}\n", 1))
	if err := os.WriteFile(p, cfg, 0o666); err != nil {
		t.Fatal(err)
	}
	as(t, dir, "lead", func(e *workflow.Engine) error { return nil })
	if !strings.Contains(git(t, dir, "show", "orch:config.yaml"), "name: lead") {
		t.Fatal("the roster was not committed")
	}
	resp := ts.post(t, c, "/task/T-5ncg1r/approve", url.Values{"csrf": {csrf}})
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("approve by lead, now an agent: %d", resp.StatusCode)
	}
	mustContain(t, "refused", body, "lead is an agent: the board&#39;s actions are a human&#39;s")
	if q := queueOf(t, dir, "T-5ncg1r"); q != "provisional" {
		t.Errorf("T-5ncg1r is %s", q)
	}
}
