package web

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/orch-tool/orch/internal/repostate"
	"github.com/orch-tool/orch/workflow"
)

// What a person types into a form of the board exists nowhere else: an
// action that is refused or fails shows it back in full, whatever queue
// the task is now in, and keeps a copy on disk (as the CLI keeps a failed
// command's stdin).

// typedText is n bytes or more of feedback as a browser sends it (CRLF
// line ends), with markup, entities, quotes and a leading newline that a
// careless <textarea> would drop. It has no '+' and no NUL, which
// html/template escapes differently from html.EscapeString.
func typedText(n int) string {
	var b strings.Builder
	b.WriteString("\r\nThe export drops the layers & the <b>masks</b>.\r\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d. <script>alert(\"x%d\")</script> &amp; it's </textarea><pre> é 🚀\r\n", i, i)
	}
	b.WriteString("   the last line keeps its spaces   ")
	return b.String()
}

// repoState is what an action must leave alone: every ref and every file
// of the work tree and the view (not .git/orch/edits/, where a copy of the
// typed text is kept on purpose).
func repoState(t testing.TB, dir string) map[string]string {
	t.Helper()
	st := map[string]string{"refs": git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)")}
	if err := repostate.AddFiles(st, dir); err != nil {
		t.Fatal(err)
	}
	return st
}

func mustBeUnchanged(t testing.TB, what, dir string, before map[string]string) {
	t.Helper()
	if d := repostate.Diff(before, repoState(t, dir)); len(d) > 0 {
		t.Errorf("%s changed the repository: %v", what, d)
	}
}

// mustShowOnce: the typed text is on the page exactly once, escaped, with
// the newline after its box's start tag that keeps its own leading newline.
func mustShowOnce(t testing.TB, what, body, text string) {
	t.Helper()
	esc := html.EscapeString(text)
	if n := strings.Count(body, esc); n != 1 {
		t.Errorf("%s: the typed text is on the page %d times, want 1:\n%s", what, n, clipBody(body))
		return
	}
	if !strings.Contains(body, "data-kept") {
		t.Errorf("%s: no data-kept: a live update would replace the page and its text", what)
	}
	if strings.HasPrefix(text, "\r\n") || strings.HasPrefix(text, "\n") {
		if !strings.Contains(body, ">\n"+esc+"</textarea>") {
			t.Errorf("%s: the text's box would drop its leading newline:\n%s", what, clipBody(body))
		}
	}
	if strings.Contains(text, "<script>") && strings.Contains(body, "<script>alert") {
		t.Errorf("%s: the typed markup is on the page unescaped", what)
	}
}

var savedRe = regexp.MustCompile(`saved in <code>([^<]+)</code>`)

// mustBeSaved: the page names the copy on disk, and it holds the text as
// sent, byte for byte.
func mustBeSaved(t testing.TB, what, dir, body, text string) {
	t.Helper()
	m := savedRe.FindStringSubmatch(body)
	if m == nil {
		t.Errorf("%s: the page names no saved copy:\n%s", what, clipBody(body))
		return
	}
	p := html.UnescapeString(m[1])
	if rel, err := filepath.Rel(filepath.Join(dir, ".git", "orch", "edits"), p); err != nil || strings.HasPrefix(rel, "..") {
		t.Errorf("%s: the copy %s is not under .git/orch/edits/", what, p)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Errorf("%s: %v", what, err)
	} else if string(got) != text {
		t.Errorf("%s: the copy on disk differs from the text typed (%d bytes, want %d)", what, len(got), len(text))
	}
}

// allowAgentReviewer lets agent-b review, as a config edit by lead would.
func allowAgentReviewer(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, ".orchestrator", "config.yaml")
	cfg, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "reviewers: [lead]", "reviewers: [lead, agent-b]", 1))
	if err := os.WriteFile(p, cfg, 0o666); err != nil {
		t.Fatal(err)
	}
	as(t, dir, "lead", nil0)
	if !strings.Contains(git(t, dir, "show", "orch:config.yaml"), "reviewers: [lead, agent-b]") {
		t.Fatal("the reviewers were not committed")
	}
}

// TestRejectAfterApprovalKeepsText is issue 27's case: a person opens a
// provisional task's page, an agent approves the task meanwhile, and the
// person's rejection is refused. The done task's page has no reject form;
// the text is on the answer all the same, once, with the reason.
func TestRejectAfterApprovalKeepsText(t *testing.T) {
	dir := exampleRepo(t)
	allowAgentReviewer(t, dir)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	c := ts.client(t)
	ts.login(t, c, testToken)
	_, page := ts.get(t, c, "/task/T-5ncg1r")
	mustContain(t, "provisional task", page, `action="/task/T-5ncg1r/reject"`)
	csrf := csrfOf(t, page)

	as(t, dir, "agent-b", func(e *workflow.Engine) error {
		_, err := e.Approve("T-5ncg1r", "")
		return err
	})
	if q := queueOf(t, dir, "T-5ncg1r"); q != "approved" {
		t.Fatalf("T-5ncg1r is %s after agent-b's approve", q)
	}
	before := repoState(t, dir)

	text := typedText(20 << 10)
	resp := ts.post(t, c, "/task/T-5ncg1r/reject", url.Values{"csrf": {csrf}, "text": {text}})
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("reject of a done task: %d, want 409", resp.StatusCode)
	}
	mustContain(t, "refused reject", body, `class="error"`, "cannot reject T-5ncg1r: it is approved", `<span class="badge q-approved">approved</span>`)
	mustNotContain(t, "refused reject", body, `action="/task/T-5ncg1r/reject"`)
	mustShowOnce(t, "refused reject", body, text)
	mustBeSaved(t, "refused reject", dir, body, text)
	mustBeUnchanged(t, "a refused reject", dir, before)

	// Approval notes on the same done task: refused, kept.
	notes := typedText(3 << 10)
	resp = ts.post(t, c, "/task/T-5ncg1r/approve", url.Values{"csrf": {csrf}, "text": {notes}})
	body = readBody(t, resp)
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("approve of a done task: %d, want 409", resp.StatusCode)
	}
	mustContain(t, "refused approve", body, "cannot approve T-5ncg1r: it is approved")
	mustShowOnce(t, "refused approve", body, notes)
	mustBeSaved(t, "refused approve", dir, body, notes)
	mustBeUnchanged(t, "a refused approve", dir, before)
}

// TestDecideAndRequeueKeepText: decide's reason and requeue's agent, each
// refused after the task left the queue whose page had their form.
func TestDecideAndRequeueKeepText(t *testing.T) {
	dir := exampleRepo(t)
	refuseAs(t, dir, "agent-b", "T-9mwq4c")
	ts := startServer(t, dir, testOptions(dir, "lead"))
	c := ts.client(t)
	ts.login(t, c, testToken)
	_, page := ts.get(t, c, "/task/T-9mwq4c")
	mustContain(t, "blocked task", page, `action="/task/T-9mwq4c/decide"`)
	_, page = ts.get(t, c, "/task/T-1qzk7w")
	mustContain(t, "escalated task", page, `action="/task/T-1qzk7w/requeue"`)
	csrf := csrfOf(t, page)

	// Someone else, at a terminal, acts first on both.
	as(t, dir, "lead", func(e *workflow.Engine) error {
		if _, err := e.Decide("T-9mwq4c", "override", "Go on: the API is back.", false); err != nil {
			return err
		}
		_, err := e.Requeue("T-1qzk7w", "")
		return err
	})
	before := repoState(t, dir)

	reason := typedText(8 << 10)
	resp := ts.post(t, c, "/task/T-9mwq4c/decide", url.Values{"csrf": {csrf}, "decision": {"override"}, "text": {reason}})
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("decide of a claimed task: %d, want 409", resp.StatusCode)
	}
	mustContain(t, "refused decide", body, "cannot decide T-9mwq4c: it is claimed", "decide (override)")
	mustNotContain(t, "refused decide", body, `action="/task/T-9mwq4c/decide"`)
	mustShowOnce(t, "refused decide", body, reason)
	mustBeSaved(t, "refused decide", dir, body, reason)

	resp = ts.post(t, c, "/task/T-1qzk7w/requeue", url.Values{"csrf": {csrf}, "to": {"agent-zz"}})
	body = readBody(t, resp)
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("requeue of an incoming task: %d, want 409", resp.StatusCode)
	}
	mustContain(t, "refused requeue", body, "cannot requeue T-1qzk7w: it is incoming")
	mustNotContain(t, "refused requeue", body, `action="/task/T-1qzk7w/requeue"`)
	mustShowOnce(t, "refused requeue", body, "agent-zz")
	mustBeUnchanged(t, "refused decide and requeue", dir, before)
}

// TestTypedTextKeptInItsBox: when the task's page still has the form, the
// text goes back in its own box (once), ready to send again.
func TestTypedTextKeptInItsBox(t *testing.T) {
	dir := exampleRepo(t)
	refuseAs(t, dir, "agent-b", "T-9mwq4c")
	ts := startServer(t, dir, testOptions(dir, "lead"))
	c := ts.client(t)
	ts.login(t, c, testToken)
	_, page := ts.get(t, c, "/task/T-9mwq4c")
	csrf := csrfOf(t, page)
	before := repoState(t, dir)

	reason := typedText(2 << 10)
	resp := ts.post(t, c, "/task/T-9mwq4c/decide", url.Values{"csrf": {csrf}, "decision": {"bogus"}, "text": {reason}})
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("decide bogus: %d, want 400", resp.StatusCode)
	}
	mustContain(t, "decide bogus", body, `is not a decision`, `action="/task/T-9mwq4c/decide"`, "data-kept")
	mustShowOnce(t, "decide bogus", body, reason)
	mustBeSaved(t, "decide bogus", dir, body, reason)
	mustBeUnchanged(t, "decide bogus", dir, before)
}

// TestRefusedFormsKeepText: every other way an action with text is refused
// (the guards, an unknown verb, a task gone, a text too large) shows the
// text back; only a request that passed the guards gets a copy on disk.
func TestRefusedFormsKeepText(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	c := ts.client(t)
	ts.login(t, c, testToken)
	_, page := ts.get(t, c, "/task/T-5ncg1r")
	csrf := csrfOf(t, page)
	before := repoState(t, dir)
	text := typedText(20 << 10)

	// A browser without the cookie, and a form token of another server
	// (orch serve started again since the page was opened).
	anon := ts.client(t)
	for _, tc := range []struct {
		name string
		c    *http.Client
		csrf string
	}{{"no cookie", anon, csrf}, {"stale form token", c, "0000"}} {
		resp := ts.post(t, tc.c, "/task/T-5ncg1r/reject", url.Values{"csrf": {tc.csrf}, "text": {text}})
		body := readBody(t, resp)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", tc.name, resp.StatusCode)
		}
		mustContain(t, tc.name, body, "This browser may not act on this server.")
		mustShowOnce(t, tc.name, body, text)
		mustNotContain(t, tc.name, body, "saved in")
	}

	// An unknown verb (a page of another version of orch).
	resp := ts.post(t, c, "/task/T-5ncg1r/archive", url.Values{"csrf": {csrf}, "text": {text}})
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("archive: %d, want 404", resp.StatusCode)
	}
	mustShowOnce(t, "unknown verb", body, text)

	// A task gone from the branch (archived, or a mistyped address).
	resp = ts.post(t, c, "/task/T-zzzzzz/reject", url.Values{"csrf": {csrf}, "text": {text}})
	body = readBody(t, resp)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("reject of no task: %d, want 404", resp.StatusCode)
	}
	mustShowOnce(t, "no such task", body, text)
	mustBeSaved(t, "no such task", dir, body, text)

	// A text larger than an action takes.
	big := typedText(maxText + 1)
	resp = ts.post(t, c, "/task/T-5ncg1r/reject", url.Values{"csrf": {csrf}, "text": {big}})
	body = readBody(t, resp)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a text of %d bytes: %d, want 413", len(big), resp.StatusCode)
	}
	mustContain(t, "too large", body, "KiB")
	mustShowOnce(t, "too large", body, big)
	mustBeSaved(t, "too large", dir, body, big)
	mustBeUnchanged(t, "refused forms", dir, before)

	// A read-only server (started again with --read-only).
	ro := testOptions(dir, "lead")
	ro.Token = ""
	rs := startServer(t, dir, ro)
	resp = rs.post(t, rs.client(t), "/task/T-5ncg1r/reject", url.Values{"csrf": {csrf}, "text": {text}})
	body = readBody(t, resp)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("read-only: %d, want 403", resp.StatusCode)
	}
	mustShowOnce(t, "read-only", body, text)
	mustNotContain(t, "read-only", body, "saved in")
	mustBeUnchanged(t, "refused forms", dir, before)
}

// TestFormTooLargeToRead: a form beyond what the server reads at all is
// refused with a clear 413; it cannot be shown back, and the page says so.
func TestFormTooLargeToRead(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	form := url.Values{"csrf": {ts.srv.csrf}, "text": {strings.Repeat("x", maxForm)}}
	req := httptest.NewRequest(http.MethodPost, ts.URL+"/task/T-5ncg1r/reject", strings.NewReader(form.Encode()))
	req.Host = ts.Listener.Addr().String()
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.AddCookie(&http.Cookie{Name: ts.srv.cookie, Value: testToken})
	w := httptest.NewRecorder()
	ts.srv.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a form of %d bytes: %d, want 413", len(form.Encode()), w.Code)
	}
	mustContain(t, "form too large", w.Body.String(), "MiB", "cannot show it back")
}
