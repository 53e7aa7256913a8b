package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orch-tool/orch/internal/testgit"
)

func TestMain(m *testing.M) { testgit.Main(m, "standin-test-") }

const commitCmd = "touch made-by-agent && git add made-by-agent && git commit -qm agent"

// findCLI finds an agent CLI or skips the test, saying how to install it.
func findCLI(t *testing.T, name string) string {
	return FindCLI(t, name, "npm i --prefix DIR, then ORCH_AGENT_CLI_DIR=DIR/node_modules")
}

type result struct {
	stdout, stderr string
	code           int
	events         []map[string]any // stdout's JSON lines
}

func (r result) String() string {
	return "exit " + strconv.Itoa(r.code) + "\nstdout:\n" + r.stdout + "\nstderr:\n" + r.stderr
}

// runCLI runs bin in dir with the prompt on stdin and env added. The
// timeout only keeps a broken run from hanging the suite.
func runCLI(t *testing.T, bin, dir, prompt string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(prompt)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", bin, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish: %s", bin, r)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil {
			r.events = append(r.events, ev)
		}
	}
	return r
}

// home is a private HOME with the test git identity.
func home(t *testing.T) (string, []string) {
	dir := t.TempDir()
	env, err := testgit.Home(dir, "Agent", "agent@example.com")
	if err != nil {
		t.Fatal(err)
	}
	return dir, env
}

func claude(t *testing.T, srv *Server, dir, prompt string) result {
	bin := findCLI(t, "claude")
	h, env := home(t)
	env = append(env, ClaudeEnv(srv.URL(), filepath.Join(h, ".claude"))...)
	return runCLI(t, bin, dir, prompt, env, ClaudeArgs...)
}

func codex(t *testing.T, srv *Server, dir, prompt string) result {
	bin := findCLI(t, "codex")
	h, env := home(t)
	codexHome := filepath.Join(h, ".codex")
	if err := WriteCodexConfig(codexHome, srv.URL()); err != nil {
		t.Fatal(err)
	}
	env = append(env, CodexEnv(codexHome)...)
	return runCLI(t, bin, dir, prompt, env, CodexArgs...)
}

// commitScript runs commitCmd, then answers slowly (Pace), which the CLIs
// must take as a healthy stream.
func commitScript(marker string) Player {
	return ByMarker(map[string][]Reply{marker: {Shell(commitCmd), {Text: "Committed.", Pace: 1500 * time.Millisecond}}})
}

func assertCommitted(t *testing.T, dir string, r result) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "made-by-agent")); err != nil {
		t.Errorf("no file made by the agent: %v\n%s", err, r)
	}
	if msg := testgit.Git(t, dir, "log", "-1", "--format=%s"); msg != "agent" {
		t.Errorf("last commit %q, want the agent's\n%s", msg, r)
	}
}

func lastEvent(t *testing.T, r result) map[string]any {
	t.Helper()
	if len(r.events) == 0 {
		t.Fatalf("no JSON events\n%s", r)
	}
	return r.events[len(r.events)-1]
}

func mainTurns(srv *Server) []*Turn {
	var turns []*Turn
	for _, q := range srv.Requests() {
		if q.Kind == "main" {
			turns = append(turns, q.Turn)
		}
	}
	return turns
}

func logRequests(t *testing.T, srv *Server) {
	for _, q := range srv.Requests() {
		t.Logf("%s %s %s -> %d", q.Kind, q.Method, q.Path, q.Status)
	}
}

// checkTurns checks what the server made of the two requests of
// commitScript's conversation.
func checkTurns(t *testing.T, srv *Server, prompt string) {
	t.Helper()
	turns := mainTurns(srv)
	if len(turns) != 2 {
		logRequests(t, srv)
		t.Fatalf("%d main turns, want 2", len(turns))
	}
	for i, turn := range turns {
		if turn.Step != i || turn.Attempt != 0 || strings.TrimSpace(turn.Prompt) != prompt || turn.Session == "" ||
			turn.Model == "" || turn.System == "" || len(turn.Tools) == 0 {
			t.Errorf("turn %d: %+v", i, *turn)
		}
	}
	if turns[0].ToolResult != "" || strings.Contains(turns[1].ToolResult, "Chunk ID") ||
		turns[1].ToolResult != "" && turns[1].ToolResult != "(Bash completed with no output)" {
		t.Errorf("tool results %q, %q: want none, then commitCmd's (empty) output", turns[0].ToolResult, turns[1].ToolResult)
	}
}

func TestClaudeCommits(t *testing.T) {
	srv, err := Start(commitScript("SCRIPT:commit"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := testgit.MakeRepo(t)
	r := claude(t, srv, dir, "SCRIPT:commit make a commit")
	logRequests(t, srv)
	if r.code != 0 {
		t.Fatalf("claude failed\n%s", r)
	}
	assertCommitted(t, dir, r)
	last := lastEvent(t, r)
	if last["type"] != "result" || last["subtype"] != "success" || last["is_error"] != false ||
		last["total_cost_usd"] == nil || last["usage"] == nil {
		t.Errorf("last event %v, want a successful result with cost and usage\n%s", last, r)
	}
	checkTurns(t, srv, "SCRIPT:commit make a commit")
}

func TestCodexCommits(t *testing.T) {
	srv, err := Start(commitScript("SCRIPT:commit"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := testgit.MakeRepo(t)
	r := codex(t, srv, dir, "SCRIPT:commit make a commit")
	logRequests(t, srv)
	if r.code != 0 {
		t.Fatalf("codex failed\n%s", r)
	}
	assertCommitted(t, dir, r)
	last := lastEvent(t, r)
	if last["type"] != "turn.completed" || last["usage"] == nil {
		t.Errorf("last event %v, want turn.completed with usage\n%s", last, r)
	}
	checkTurns(t, srv, "SCRIPT:commit make a commit")
}

// The errors, and what each CLI makes of them (doc.go has the table). The
// CLIs run with one retry (ClaudeEnv, WriteCodexConfig).
var errorCases = []struct {
	name  string
	reply Reply
	// Claude: the result's api_error_status and text, and whether an
	// api_retry event comes first.
	claudeStatus float64
	claudeText   string
	claudeRetry  bool
	// Codex: turn.failed's message, and whether a "Reconnecting... 1/1"
	// error event comes first.
	codexText      string
	codexReconnect bool
}{
	{"429", RateLimit(time.Second), 429, "API Error: Request rejected (429) · This request would exceed the rate limit", true,
		"exceeded retry limit, last status: 429 Too Many Requests", true},
	{"401", Unauthorized(), 401, "Invalid API key · Fix external API key", true,
		"unexpected status 401 Unauthorized: Incorrect API key provided", true},
	{"404", NoModel(), 404, "There's an issue with the selected model (claude-opus-5-5). It may not exist or you may not have access to it.", false,
		"The model `gpt-5.5` does not exist or you do not have access to it.", false},
	{"usage-limit", UsageLimit(time.Hour), 0, "", false, "You\u2019ve hit your usage limit.", false},
	{"quota", Quota(), 0, "", false, "Quota exceeded. Check your plan and billing details.", false},
}

// checkAttempts checks that a CLI's retries of the first request are
// counted as attempts of Step 0.
func checkAttempts(t *testing.T, srv *Server) {
	t.Helper()
	for i, turn := range mainTurns(srv) {
		if turn.Step != 0 || turn.Attempt != i {
			t.Errorf("request %d: step %d attempt %d, want 0 and %d", i, turn.Step, turn.Attempt, i)
		}
	}
}

func errorPlayer(r Reply) Player { return ByMarker(map[string][]Reply{"SCRIPT:fail": {r}}) }

func TestClaudeErrors(t *testing.T) {
	findCLI(t, "claude")
	for _, c := range errorCases {
		if c.claudeStatus == 0 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, err := Start(errorPlayer(c.reply))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			r := claude(t, srv, testgit.MakeRepo(t), "SCRIPT:fail")
			t.Logf("claude on %s: %s", c.name, r)
			if r.code != 1 || r.stderr != "" {
				t.Errorf("exit %d, stderr %q: want 1 and nothing", r.code, r.stderr)
			}
			retried := false
			for _, ev := range r.events {
				if ev["type"] == "system" && ev["subtype"] == "api_retry" && ev["error_status"] == c.claudeStatus {
					retried = true
				}
			}
			checkAttempts(t, srv)
			last := lastEvent(t, r)
			res, _ := last["result"].(string)
			if retried != c.claudeRetry || last["type"] != "result" || last["is_error"] != true ||
				last["api_error_status"] != c.claudeStatus || !strings.Contains(res, c.claudeText) {
				t.Errorf("api_retry seen %v (want %v); last event %v", retried, c.claudeRetry, last)
			}
		})
	}
}

func TestCodexErrors(t *testing.T) {
	findCLI(t, "codex")
	for _, c := range errorCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, err := Start(errorPlayer(c.reply))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			r := codex(t, srv, testgit.MakeRepo(t), "SCRIPT:fail")
			t.Logf("codex on %s: %s", c.name, r)
			if r.code != 1 {
				t.Errorf("exit %d, want 1", r.code)
			}
			reconnected := false
			for _, ev := range r.events {
				msg, _ := ev["message"].(string)
				if ev["type"] == "error" && strings.HasPrefix(msg, "Reconnecting... 1/1") {
					reconnected = true
				}
			}
			checkAttempts(t, srv)
			last := lastEvent(t, r)
			failure, _ := last["error"].(map[string]any)
			msg, _ := failure["message"].(string)
			if reconnected != c.codexReconnect || last["type"] != "turn.failed" || !strings.Contains(msg, c.codexText) {
				t.Errorf("reconnect seen %v (want %v); last event %v", reconnected, c.codexReconnect, last)
			}
		})
	}
}

// TestShared runs an implementer (Codex) and a reviewer (Claude) against
// one server at once, each picking its script by marker.
func TestShared(t *testing.T) {
	findCLI(t, "claude")
	findCLI(t, "codex")
	srv, err := Start(ByMarker(map[string][]Reply{
		"SCRIPT:implement": {Shell(commitCmd), Text("Implemented.")},
		"SCRIPT:review":    {Shell("git log -1 --format=%s"), Text("Approved.")},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	implDir, reviewDir := testgit.MakeRepo(t), testgit.MakeRepo(t)
	testgit.Git(t, reviewDir, "commit", "-q", "--allow-empty", "-m", "to review")
	t.Run("agents", func(t *testing.T) {
		t.Run("implementer", func(t *testing.T) {
			t.Parallel()
			assertCommitted(t, implDir, codex(t, srv, implDir, "SCRIPT:implement the task"))
		})
		t.Run("reviewer", func(t *testing.T) {
			t.Parallel()
			r := claude(t, srv, reviewDir, "SCRIPT:review the task")
			if r.code != 0 || lastEvent(t, r)["result"] != "Approved." {
				t.Errorf("review failed\n%s", r)
			}
		})
	})
	for _, turn := range mainTurns(srv) {
		if turn.API == "anthropic" && turn.Step == 1 && strings.TrimSpace(turn.ToolResult) != "to review" {
			t.Errorf("reviewer saw %q, want its git log", turn.ToolResult)
		}
	}
}

func post(t *testing.T, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestServer checks, without a CLI, what the CLIs do not always reach:
// non-streaming answers, side requests, count_tokens, a missing marker,
// and a Hang ended by the client.
func TestServer(t *testing.T) {
	var played atomic.Int32
	srv, err := Start(func(turn *Turn) Reply {
		played.Add(1)
		if strings.Contains(turn.Prompt, "hang") {
			return Reply{Hang: true}
		}
		return ByMarker(map[string][]Reply{"SCRIPT:x": {Shell("true")}})(turn)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	msgs := srv.URL() + "/v1/messages?beta=true"
	tools := `"tools":[{"name":"Bash"}]`
	_, body := post(t, msgs, `{"model":"m","stream":false,`+tools+`,"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"SCRIPT:x go"}]}]}`)
	if !strings.Contains(body, `"stop_reason":"tool_use"`) || !strings.Contains(body, `"command":"true"`) {
		t.Errorf("non-streaming tool call: %s", body)
	}
	if resp, body := post(t, msgs, `{"model":"m",`+tools+`,"messages":[{"role":"user","content":"no marker"}]}`); resp.StatusCode != 400 || !strings.Contains(body, "0 script markers") {
		t.Errorf("no marker: %d %s", resp.StatusCode, body)
	}
	// Side requests: labelled by Claude Code, or offering no tools.
	post(t, msgs, `{"model":"m",`+tools+`,"messages":[{"role":"user","content":"SCRIPT:x"}]}`, "X-Claude-Code-Request-Class", "auxiliary")
	post(t, msgs, `{"model":"m","stream":true,"messages":[{"role":"user","content":"SCRIPT:x title"}]}`)
	post(t, srv.URL()+"/v1/responses", `{"model":"m","stream":true,"input":[]}`)
	if _, body := post(t, msgs[:len(msgs)-10]+"/count_tokens", `{}`); !strings.Contains(body, "input_tokens") {
		t.Errorf("count_tokens: %s", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL()+"/v1/responses", strings.NewReader(`{"model":"m","tools":[{"type":"function","name":"exec_command"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hang"}]}]}`))
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Errorf("a Hang answered")
	}
	if n := played.Load(); n != 3 {
		t.Errorf("the Player was asked %d times, want 3 (no side requests)", n)
	}
	var kinds []string
	for _, q := range srv.Requests() {
		kinds = append(kinds, q.Kind)
	}
	if got := strings.Join(kinds, " "); !strings.HasPrefix(got, "main main side side side count_tokens") {
		t.Errorf("request kinds %s", got)
	}
}
