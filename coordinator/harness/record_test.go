package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/e2e/standin"
	"github.com/orch-tool/orch/internal/testgit"
)

// The fixtures in testdata are the real output of Claude Code and Codex
// run against the stand-in model server (e2e/standin), stdout and stderr
// merged as the coordinator reads them. TestRecord makes them again:
//
//	ORCH_RECORD_HARNESS=1 go test ./coordinator/harness -run TestRecord -v
//
// with the CLIs in $ORCH_AGENT_CLI_DIR/.bin or /tmp/agentcli/node_modules/.bin.
// testdata/fixtures.json says, for each, how it was run, its exit code and
// when it started (the "now" its reset times are read against).

// A fixture is one recorded run.
type fixture struct {
	Name    string    `json:"name"`    // testdata/<name>.out
	Kind    string    `json:"kind"`    // the Reader kind: claude, codex or "" (plain text)
	About   string    `json:"about"`   // what the stand-in answered
	Args    []string  `json:"args"`    // the CLI's arguments
	TZ      string    `json:"tz"`      // the CLI's TZ
	Started time.Time `json:"started"` // when the run started
	Exit    int       `json:"exit"`    // its exit code
}

const fixturesFile = "testdata/fixtures.json"

type recording struct {
	fixture
	bin    string
	script []standin.Reply
	noKey  bool                           // no API key in the environment
	env    []string                       // more environment
	proxy  func(resp *http.Response)      // changes every answer of the server
	setup  func(t *testing.T, dir string) // prepares the repository
}

func findCLI(t *testing.T, name string) string {
	return standin.FindCLI(t, name, "npm i --prefix DIR, then ORCH_AGENT_CLI_DIR=DIR/node_modules")
}

const commitCmd = "touch made-by-agent && git add made-by-agent && git commit -qm agent"

// subscriberLimit is the 429 Claude Code gets when a subscriber's limit
// (claim: five_hour, seven_day, seven_day_opus) is reached: rejected,
// with the unified reset headers.
func subscriberLimit(claim string, reset time.Duration) standin.Reply {
	at := strconv.FormatInt(time.Now().Add(reset).Unix(), 10)
	window := "5h"
	if claim != "five_hour" {
		window = "7d"
	}
	return standin.Reply{Error: &standin.Error{Status: 429, Headers: map[string]string{
		"anthropic-ratelimit-unified-status":                     "rejected",
		"anthropic-ratelimit-unified-reset":                      at,
		"anthropic-ratelimit-unified-representative-claim":       claim,
		"anthropic-ratelimit-unified-" + window + "-status":      "rejected",
		"anthropic-ratelimit-unified-" + window + "-reset":       at,
		"anthropic-ratelimit-unified-" + window + "-utilization": "1.0",
		"anthropic-ratelimit-unified-overage-status":             "rejected",
		"anthropic-ratelimit-unified-overage-disabled-reason":    "org_level_disabled",
	}, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."}}`}}
}

// oauth logs Claude Code in as a subscriber (a made-up token: the
// stand-in takes any), which makes it read the unified rate-limit headers.
var oauth = []string{"CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-standin"}

// allowedWarning adds the unified headers of a subscriber close to a limit
// to every answer.
func allowedWarning(resp *http.Response) {
	at := strconv.FormatInt(time.Now().Add(3*time.Hour).Unix(), 10)
	h := resp.Header
	h.Set("anthropic-ratelimit-unified-status", "allowed_warning")
	h.Set("anthropic-ratelimit-unified-reset", at)
	h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
	h.Set("anthropic-ratelimit-unified-5h-status", "allowed_warning")
	h.Set("anthropic-ratelimit-unified-5h-reset", at)
	h.Set("anthropic-ratelimit-unified-5h-utilization", "0.95")
	h.Set("anthropic-ratelimit-unified-5h-surpassed-threshold", "0.9")
}

func recordings(t *testing.T) []recording {
	claude, codex := findCLI(t, "claude"), findCLI(t, "codex")
	claudeArgs := append([]string(nil), standin.ClaudeArgs...)
	codexArgs := append([]string(nil), standin.CodexArgs...)
	codexPlain := []string{"exec", "--sandbox", "danger-full-access", "--skip-git-repo-check", "-"}
	work429 := "echo 'FAIL TestFetch: client gave up on HTTP 429 Too Many Requests; rate limit exceeded, try again in 20s'"
	workText := "The test gives up on HTTP 429 too early: the rate limit handling retries once. Fixed; usage limit logic untouched."
	r := []recording{
		{fixture: fixture{Name: "claude-success", Kind: "claude", About: "a commit by shell command, then text"},
			bin: claude, script: []standin.Reply{standin.Shell(commitCmd), standin.Text("Committed.")}},
		{fixture: fixture{Name: "claude-work-429", Kind: "claude", About: "work whose output and text talk of HTTP 429 and rate limits, ending well"},
			bin: claude, script: []standin.Reply{standin.Shell(work429), standin.Text(workText)}},
		{fixture: fixture{Name: "claude-429", Kind: "claude", About: "429 rate limit (retry-after 1 s)"},
			bin: claude, script: []standin.Reply{standin.RateLimit(time.Second)}},
		{fixture: fixture{Name: "claude-401", Kind: "claude", About: "401 invalid API key"},
			bin: claude, script: []standin.Reply{standin.Unauthorized()}},
		{fixture: fixture{Name: "claude-404", Kind: "claude", About: "404 model not found"},
			bin: claude, script: []standin.Reply{standin.NoModel()}},
		{fixture: fixture{Name: "claude-usage-limit", Kind: "claude", About: "429 usage_limit_reached (Codex's form), resets in an hour"},
			bin: claude, script: []standin.Reply{standin.UsageLimit(time.Hour)}},
		{fixture: fixture{Name: "claude-quota", Kind: "claude", About: "429 insufficient_quota"},
			bin: claude, script: []standin.Reply{standin.Quota()}},
		{fixture: fixture{Name: "claude-500", Kind: "claude", About: "500 server error"},
			bin: claude, script: []standin.Reply{{Error: &standin.Error{Status: 500}}}},
		{fixture: fixture{Name: "claude-529", Kind: "claude", About: "529 overloaded"},
			bin: claude, script: []standin.Reply{{Error: &standin.Error{Status: 529}}}},
		{fixture: fixture{Name: "claude-sub-5h", Kind: "claude", About: "subscriber (OAuth): 429 with the unified headers, five_hour rejected, resets in 2 h", TZ: "Europe/Berlin"},
			bin: claude, script: []standin.Reply{subscriberLimit("five_hour", 2*time.Hour)}, noKey: true, env: oauth},
		{fixture: fixture{Name: "claude-sub-weekly", Kind: "claude", About: "subscriber (OAuth): 429 with the unified headers, seven_day rejected, resets in 75 h", TZ: "America/New_York"},
			bin: claude, script: []standin.Reply{subscriberLimit("seven_day", 75*time.Hour)}, noKey: true, env: oauth},
		{fixture: fixture{Name: "claude-sub-opus", Kind: "claude", About: "subscriber (OAuth): 429 with the unified headers, seven_day_opus rejected, resets in 5 h"},
			bin: claude, script: []standin.Reply{subscriberLimit("seven_day_opus", 5*time.Hour)}, noKey: true, env: oauth},
		{fixture: fixture{Name: "claude-sub-warning", Kind: "claude", About: "subscriber (OAuth): every answer with allowed_warning unified headers (95% of five_hour), ending well"},
			bin: claude, script: []standin.Reply{standin.Shell("touch f"), standin.Text("Done.")}, proxy: allowedWarning, noKey: true, env: oauth},
		{fixture: fixture{Name: "claude-not-logged-in", Kind: "claude", About: "no API key, no login"},
			bin: claude, script: []standin.Reply{standin.Text("unreachable")}, noKey: true},
		{fixture: fixture{Name: "claude-permission", Kind: "claude", About: "only Bash(touch:*) allowed; the model asks for touch && git add && git commit, which is denied, then answers text",
			Args: []string{"-p", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash(touch:*)"}},
			bin: claude, script: []standin.Reply{standin.Shell("touch f.txt && git add f.txt && git commit -qm x"), standin.Text("I could not commit: git needs approval.")}},

		{fixture: fixture{Name: "claude-permission-single", Kind: "claude", About: "only Bash(touch:*) allowed; the model asks for one git commit whose message has a comma, which is denied, then for an Edit outside the allowed tools, then answers text",
			Args: []string{"-p", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash(touch:*)"}},
			bin: claude, script: []standin.Reply{standin.Shell("git commit -qm 'a, b'"), standin.Shell("touch ok && git status"), standin.Text("Blocked twice.")}},
		{fixture: fixture{Name: "codex-success", Kind: "codex", About: "a commit by shell command, then text"},
			bin: codex, script: []standin.Reply{standin.Shell(commitCmd), standin.Text("Committed.")}},
		{fixture: fixture{Name: "codex-work-429", Kind: "codex", About: "work whose output and text talk of HTTP 429 and rate limits, ending well"},
			bin: codex, script: []standin.Reply{standin.Shell(work429), standin.Text(workText)}},
		{fixture: fixture{Name: "codex-fail-cmd", Kind: "codex", About: "a failing shell command, then text"},
			bin: codex, script: []standin.Reply{standin.Shell("ls /nonexistent-dir"), standin.Text("The directory is missing.")}},
		{fixture: fixture{Name: "codex-429", Kind: "codex", About: "429 rate limit"},
			bin: codex, script: []standin.Reply{standin.RateLimit(time.Second)}},
		{fixture: fixture{Name: "codex-401", Kind: "codex", About: "401 invalid API key"},
			bin: codex, script: []standin.Reply{standin.Unauthorized()}},
		{fixture: fixture{Name: "codex-404", Kind: "codex", About: "404 model not found"},
			bin: codex, script: []standin.Reply{standin.NoModel()}},
		{fixture: fixture{Name: "codex-usage-limit", Kind: "codex", About: "429 usage_limit_reached, resets in an hour", TZ: "America/New_York"},
			bin: codex, script: []standin.Reply{standin.UsageLimit(time.Hour)}},
		{fixture: fixture{Name: "codex-usage-limit-days", Kind: "codex", About: "429 usage_limit_reached, resets in 3 days", TZ: "Asia/Tokyo"},
			bin: codex, script: []standin.Reply{standin.UsageLimit(75 * time.Hour)}},
		{fixture: fixture{Name: "codex-quota", Kind: "codex", About: "429 insufficient_quota"},
			bin: codex, script: []standin.Reply{standin.Quota()}},
		{fixture: fixture{Name: "codex-500", Kind: "codex", About: "500 server error"},
			bin: codex, script: []standin.Reply{{Error: &standin.Error{Status: 500}}}},
		{fixture: fixture{Name: "codex-no-key", Kind: "codex", About: "no API key in the environment"},
			bin: codex, script: []standin.Reply{standin.Text("unreachable")}, noKey: true},

		{fixture: fixture{Name: "plain-codex-success", Kind: "", About: "codex exec without --json: a commit by shell command, then text", Args: codexPlain},
			bin: codex, script: []standin.Reply{standin.Shell(commitCmd), standin.Text("Committed.")}},
		{fixture: fixture{Name: "plain-codex-usage-limit", Kind: "", About: "codex exec without --json: usage limit", Args: codexPlain, TZ: "America/New_York"},
			bin: codex, script: []standin.Reply{standin.UsageLimit(time.Hour)}},
		{fixture: fixture{Name: "plain-codex-work-429", Kind: "", About: "codex exec without --json: work talking of 429, ending well", Args: codexPlain},
			bin: codex, script: []standin.Reply{standin.Shell(work429), standin.Text(workText)}},
		{fixture: fixture{Name: "plain-claude-success", Kind: "", About: "claude -p (text output): a commit, then text", Args: []string{"-p", "--allowedTools", "Bash(git:*) Bash(touch:*)"}},
			bin: claude, script: []standin.Reply{standin.Shell(commitCmd), standin.Text("Committed.")}},
		{fixture: fixture{Name: "plain-claude-429", Kind: "", About: "claude -p (text output): 429", Args: []string{"-p"}},
			bin: claude, script: []standin.Reply{standin.RateLimit(time.Second)}},
	}
	for i := range r {
		if r[i].Args == nil {
			if r[i].bin == claude {
				r[i].Args = claudeArgs
			} else {
				r[i].Args = codexArgs
			}
		}
		if r[i].TZ == "" {
			r[i].TZ = "UTC"
		}
	}
	return r
}

func TestRecord(t *testing.T) {
	if os.Getenv("ORCH_RECORD_HARNESS") != "1" {
		t.Skip("ORCH_RECORD_HARNESS=1 records the fixtures again")
	}
	only := os.Getenv("ORCH_RECORD_ONLY") // a comma-separated list of names
	recs := recordings(t)
	old, _ := loadFixtures()
	byName := map[string]fixture{}
	for _, f := range old {
		byName[f.Name] = f
	}
	results := make([]fixture, len(recs))
	t.Run("cli", func(t *testing.T) {
		for i, rec := range recs {
			if only != "" && !strings.Contains(","+only+",", ","+rec.Name+",") {
				if f, ok := byName[rec.Name]; ok {
					results[i] = f
				}
				continue
			}
			t.Run(rec.Name, func(t *testing.T) {
				t.Parallel()
				// Made again now: a script's reset times count from now.
				results[i] = record(t, recordings(t)[i])
			})
		}
	})
	var keep []fixture
	for _, f := range results {
		if f.Name != "" {
			keep = append(keep, f)
		}
	}
	b, _ := json.MarshalIndent(keep, "", "  ")
	if err := os.WriteFile(fixturesFile, append(b, '\n'), 0o666); err != nil {
		t.Fatal(err)
	}
}

func record(t *testing.T, rec recording) fixture {
	marker := "SCRIPT:" + rec.Name
	srv, err := standin.Start(standin.ByMarker(map[string][]standin.Reply{marker: rec.script}))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := srv.URL()
	if rec.proxy != nil {
		u, _ := url.Parse(base)
		p := httputil.NewSingleHostReverseProxy(u)
		p.ModifyResponse = func(resp *http.Response) error { rec.proxy(resp); return nil }
		p.FlushInterval = -1
		ps := &http.Server{Handler: p}
		ln, err := netListen()
		if err != nil {
			t.Fatal(err)
		}
		go ps.Serve(ln)
		defer ps.Close()
		base = "http://" + ln.Addr().String()
	}
	dir := testgit.MakeRepo(t)
	home := t.TempDir()
	env, err := testgit.Home(home, "Agent", "agent@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(rec.bin) == "claude" {
		env = append(env, standin.ClaudeEnv(base, filepath.Join(home, ".claude"))...)
	} else {
		codexHome := filepath.Join(home, ".codex")
		if err := standin.WriteCodexConfig(codexHome, base); err != nil {
			t.Fatal(err)
		}
		env = append(env, standin.CodexEnv(codexHome)...)
	}
	env = append(env, "TZ="+rec.TZ)
	env = append(env, rec.env...)
	var clean []string
	for _, kv := range append(os.Environ(), env...) {
		k, _, _ := strings.Cut(kv, "=")
		if rec.noKey && (k == "ANTHROPIC_API_KEY" || k == "STANDIN_API_KEY" || k == "OPENAI_API_KEY") {
			continue
		}
		clean = append(clean, kv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rec.bin, rec.Args...)
	cmd.Dir = dir
	cmd.Env = clean
	cmd.Stdin = strings.NewReader(marker + " do the task")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out // merged, in order, as the coordinator reads them
	f := rec.fixture
	f.Started = time.Now().UTC().Truncate(time.Second)
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		f.Exit = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("did not finish:\n%s", out.String())
	}
	// The stand-in's port and the temporary directories change every run.
	s := strings.ReplaceAll(out.String(), base, "http://127.0.0.1:PORT")
	s = strings.ReplaceAll(s, strings.TrimPrefix(base, "http://"), "127.0.0.1:PORT")
	for _, p := range [][2]string{{dir, "/tmp/repo"}, {home, "/tmp/home"}, {os.TempDir(), "/tmp/T"}} {
		s = strings.ReplaceAll(s, p[0], p[1])
		s = strings.ReplaceAll(s, strings.ReplaceAll(p[0], "/", "-"), strings.ReplaceAll(p[1], "/", "-"))
	}
	if err := os.WriteFile(filepath.Join("testdata", f.Name+".out"), []byte(s), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, q := range srv.Requests() {
		t.Logf("%s %s %s -> %d", q.Kind, q.Method, q.Path, q.Status)
	}
	t.Logf("exit %d\n%s", f.Exit, s)
	return f
}

func loadFixtures() ([]fixture, error) {
	b, err := os.ReadFile(fixturesFile)
	if err != nil {
		return nil, err
	}
	var fs []fixture
	if err := json.Unmarshal(b, &fs); err != nil {
		return nil, fmt.Errorf("%s: %v", fixturesFile, err)
	}
	return fs, nil
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func TestMain(m *testing.M) { testgit.Main(m, "harness-test-") }
