package harness

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite testdata/*.log from the fixtures")

// replay reads a recorded run as the coordinator would: every line, the
// time of each being when the run started, in the zone it ran in.
func replay(t *testing.T, f fixture) (Result, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", f.Name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	now := f.Started.In(zoneOf(t, f.TZ))
	r := NewReader(f.Kind, func() time.Time { return now })
	var log []string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		out := r.Line(line)
		checkVisible(t, out)
		log = append(log, out...)
	}
	mid := r.Result()
	res := r.Finish(f.Exit)
	if mid.Final != res.Final || mid.Usage != res.Usage || mid.Retries != res.Retries {
		t.Errorf("Result before Finish %+v, after %+v", mid, res)
	}
	return res, log
}

// checkVisible fails the test on a line that is not valid UTF-8, has a
// control character or spans lines.
func checkVisible(t testing.TB, lines []string) {
	t.Helper()
	for _, l := range lines {
		if !utf8.ValidString(l) {
			t.Errorf("invalid UTF-8 %q", l)
		}
		for _, r := range l {
			if unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
				t.Errorf("control character %U in %q", r, l)
				break
			}
		}
	}
}

func fixtures(t *testing.T) map[string]fixture {
	fs, err := loadFixtures()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]fixture{}
	for _, f := range fs {
		m[f.Name] = f
	}
	return m
}

// within reports whether got is about want: the messages give the
// minute (the reset falls within it), and the stand-in's reset times were
// set when the recording began, up to a minute before the run.
func within(got, want time.Time) bool {
	d := got.Sub(want)
	return !got.IsZero() && d > -2*time.Minute && d < time.Minute
}

func TestFixtures(t *testing.T) {
	fs := fixtures(t)
	type want struct {
		errored  bool
		final    bool
		cause    Cause
		words    string        // exact, or a prefix ending in "*"
		resetIn  time.Duration // from the start of the run; 0: no reset time
		usage    Usage
		denials  []string
		retries  int
		logHas   []string // lines the log must have
		logLacks []string // substrings no line may have
	}
	success := Usage{InputTokens: 200, OutputTokens: 40, CostUSD: 0.0016}
	codexUsage := Usage{InputTokens: 200, OutputTokens: 40}
	tests := map[string]want{
		"claude-success": {final: true, usage: success, logHas: []string{
			"claude 2.1.328, model claude-opus-5-5",
			"$ touch made-by-agent && git add made-by-agent && git commit -qm agent",
			"  (Bash completed with no output)",
			"Committed.",
			"result: success, 2 turns, $0.0016, 200 in / 40 out tokens"}},
		"claude-work-429": {final: true, usage: success, logHas: []string{
			"The test gives up on HTTP 429 too early: the rate limit handling retries once. Fixed; usage limit logic untouched."}},
		"claude-429": {errored: true, final: true, cause: RateLimit, words: "rate limited (429), no reset time given", retries: 1,
			logHas: []string{"retry 1/1 in *s: rate limit (429)", "result: error, 1 turn, $0.0000, 0 in / 0 out tokens"}},
		"claude-401": {errored: true, final: true, cause: Auth, words: "invalid API key", retries: 1,
			logHas: []string{"  Invalid API key · Fix external API key"}},
		"claude-404":         {errored: true, final: true, cause: Model, words: "model not found: claude-opus-5-5"},
		"claude-usage-limit": {errored: true, final: true, cause: UsageLimit, words: "usage limit, no reset time given", retries: 1},
		"claude-quota":       {errored: true, final: true, cause: Quota, words: "quota exhausted (plan and billing)", retries: 1},
		"claude-500":         {errored: true, final: true, cause: API, words: "API error (500)", retries: 1},
		"claude-529":         {errored: true, final: true, cause: API, words: "API overloaded (529)", retries: 1},
		"claude-sub-5h": {errored: true, final: true, cause: UsageLimit, words: "5-hour limit until *", resetIn: 2 * time.Hour,
			logHas: []string{"  You've hit your 5-hour limit · resets *(Europe/Berlin)"}},
		"claude-sub-weekly": {errored: true, final: true, cause: UsageLimit, words: "weekly limit until Dec *", resetIn: 75 * time.Hour,
			logHas: []string{"  You've hit your weekly limit · resets Dec *(America/New_York)"}},
		"claude-sub-opus": {errored: true, final: true, cause: UsageLimit, words: "Opus limit until *", resetIn: 5 * time.Hour,
			logHas: []string{"rate limit: rejected, Opus limit, resets *"}},
		"claude-sub-warning": {final: true, usage: Usage{InputTokens: 200, OutputTokens: 40, CostUSD: 0.0008},
			logHas: []string{"rate limit: allowed_warning, 5-hour limit 95% used, resets *"}},
		"claude-not-logged-in": {errored: true, final: true, cause: Auth, words: "not logged in"},
		"claude-permission": {final: true, usage: success, cause: Permission,
			words:   "permission denied: Bash(git add f.txt), Bash(git commit -qm x)",
			denials: []string{"Bash(git add f.txt)", "Bash(git commit -qm x)"},
			logHas: []string{"denied: Bash: This Bash command contains multiple operations. The following parts require approval: git add f.txt, git commit -qm x",
				"result: success, 2 turns, $0.0016, 200 in / 40 out tokens, 2 permission denials"}},
		"claude-permission-single": {final: true, usage: Usage{InputTokens: 300, OutputTokens: 60, CostUSD: 0.0024000000000000002}, cause: Permission,
			words: "permission denied: Bash(git commit -qm 'a, b')", denials: []string{"Bash(git commit -qm 'a, b')"}},

		"codex-success": {final: true, usage: codexUsage, logHas: []string{
			"$ touch made-by-agent && git add made-by-agent && git commit -qm agent", "  (exit 0)", "Committed.",
			"result: success, 200 in / 40 out tokens"}},
		"codex-work-429": {final: true, usage: codexUsage, logHas: []string{
			"$ echo 'FAIL TestFetch: client gave up on HTTP 429 Too Many Requests; rate limit exceeded, try again in 20s'"}},
		"codex-fail-cmd": {final: true, usage: codexUsage, logHas: []string{
			"$ ls /nonexistent-dir", "  ls: cannot access '/nonexistent-dir': No such file or directory", "  (exit 2)"}},
		"codex-429": {errored: true, final: true, cause: RateLimit, words: "rate limited (429), no reset time given", retries: 1,
			logHas: []string{"retry: Reconnecting... 1/1 (exceeded retry limit, last status: 429 Too Many Requests)",
				"result: failed: exceeded retry limit, last status: 429 Too Many Requests"}},
		"codex-401":    {errored: true, final: true, cause: Auth, words: "invalid API key", retries: 1},
		"codex-404":    {errored: true, final: true, cause: Model, words: "model not found: gpt-5.5"},
		"codex-quota":  {errored: true, final: true, cause: Quota, words: "quota exhausted (plan and billing)"},
		"codex-500":    {errored: true, final: true, cause: API, words: "API overloaded", retries: 1},
		"codex-no-key": {errored: true, final: true, cause: Auth, words: "missing API key: STANDIN_API_KEY"},
		"codex-usage-limit": {errored: true, final: true, cause: UsageLimit, words: "usage limit until *", resetIn: time.Hour,
			logHas: []string{"error: You’ve hit your usage limit. * try again at *"}},
		"codex-usage-limit-days": {errored: true, final: true, cause: UsageLimit, words: "usage limit until Dec *", resetIn: 75 * time.Hour,
			logHas: []string{"result: failed: You’ve hit your usage limit. * try again at Dec *, 2026 *"}},

		"plain-codex-success": {logHas: []string{"(the prompt Codex echoed, 1 line, left out)", "Committed."},
			logLacks: []string{"do the task"}},
		"plain-codex-usage-limit": {errored: true, cause: UsageLimit, words: "usage limit until *", resetIn: time.Hour,
			logLacks: []string{"do the task"}},
		"plain-codex-work-429": {logHas: []string{"FAIL TestFetch: client gave up on HTTP 429 Too Many Requests; rate limit exceeded, try again in 20s"},
			logLacks: []string{"do the task"}},
		"plain-claude-success": {logHas: []string{"Committed."}},
		"plain-claude-429":     {errored: true, cause: RateLimit, words: "rate limited (429), no reset time given"},
	}
	for name := range fs {
		if _, ok := tests[name]; !ok {
			t.Errorf("fixture %s has no test", name)
		}
	}
	for name, w := range tests {
		t.Run(name, func(t *testing.T) {
			f, ok := fs[name]
			if !ok {
				t.Fatalf("no fixture %s: record it (ORCH_RECORD_HARNESS=1)", name)
			}
			res, log := replay(t, f)
			if res.Error != w.errored || res.Final != w.final || res.Cause != w.cause || !match(res.Words, w.words) {
				t.Errorf("got Error %v Final %v Cause %q Words %q; want %v %v %q %q", res.Error, res.Final, res.Cause, res.Words,
					w.errored, w.final, w.cause, w.words)
			}
			if w.resetIn == 0 && !res.ResetAt.IsZero() || w.resetIn != 0 && !within(res.ResetAt, f.Started.Add(w.resetIn)) {
				t.Errorf("ResetAt %v, want the start (%v) + %v", res.ResetAt, f.Started, w.resetIn)
			}
			if res.Usage != w.usage || res.Retries != w.retries || !slices.Equal(res.Denials, w.denials) {
				t.Errorf("Usage %+v Retries %d Denials %q; want %+v %d %q", res.Usage, res.Retries, res.Denials, w.usage, w.retries, w.denials)
			}
			for _, l := range w.logHas {
				if !slices.ContainsFunc(log, func(s string) bool { return match(s, l) }) {
					t.Errorf("no log line %q in\n%s", l, strings.Join(log, "\n"))
				}
			}
			for _, s := range w.logLacks {
				for _, l := range log {
					if strings.Contains(l, s) {
						t.Errorf("log line %q has %q", l, s)
					}
				}
			}
		})
	}
}

// match reports whether s is pattern, where a "*" in the pattern stands
// for any text.
func match(s, pattern string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return s == pattern
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(s, p)
		}
		j := strings.Index(s, p)
		if j < 0 {
			return false
		}
		s = s[j+len(p):]
	}
	return true
}

// TestLogs compares what Line makes of each fixture with testdata/*.log
// (go test -run TestLogs -update rewrites them): the log as a person
// reads it.
func TestLogs(t *testing.T) {
	for name, f := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			res, log := replay(t, f)
			got := strings.Join(log, "\n") + "\n--\n" + describe(res) + "\n"
			path := filepath.Join("testdata", name+".log")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o666); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestLogs -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs (go test -run TestLogs -update rewrites it); got:\n%s", path, got)
			}
		})
	}
}

func describe(r Result) string {
	var b strings.Builder
	b.WriteString("final=" + boolWord(r.Final) + " error=" + boolWord(r.Error))
	if r.Cause != None {
		b.WriteString(" cause=" + string(r.Cause) + " words=" + r.Words)
	}
	if !r.ResetAt.IsZero() {
		b.WriteString(" reset=" + r.ResetAt.UTC().Format(time.RFC3339))
	}
	if r.Retries > 0 {
		b.WriteString(" retries=" + itoa(int64(r.Retries)))
	}
	return b.String()
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// lines of a fixture, for the tests that cut one short or change it.
func fixtureLines(t *testing.T, name string) []string {
	b, err := os.ReadFile(filepath.Join("testdata", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func feed(r *Reader, lines []string) (log []string) {
	for _, l := range lines {
		log = append(log, r.Line(l)...)
	}
	return log
}

var fixed = func() time.Time { return time.Date(2026, 12, 1, 18, 30, 0, 0, time.UTC) }

// A run killed while Claude Code retries a 429: no result, the retry says
// why.
func TestClaudeKilledRetrying(t *testing.T) {
	lines := fixtureLines(t, "claude-429")
	r := NewReader(Claude, fixed)
	feed(r, lines[:2]) // init, api_retry
	if res := r.Result(); res.Error || res.Cause != None || res.Retries != 1 {
		t.Errorf("while running: %+v", res)
	}
	res := r.Finish(-1)
	if !res.Error || res.Final || res.Cause != RateLimit || res.Words != "rate limited (429), no reset time given, still retrying when the run ended" {
		t.Errorf("killed: %+v", res)
	}
}

// A run killed before its result, after the synthetic error message.
func TestClaudeKilledAfterError(t *testing.T) {
	lines := fixtureLines(t, "claude-404")
	r := NewReader(Claude, fixed)
	feed(r, lines[:len(lines)-1])
	if res := r.Finish(-1); !res.Error || res.Cause != Model || res.Words != "model not found: claude-opus-5-5" {
		t.Errorf("killed: %+v", res)
	}
}

// A run killed in the middle of its work is a crash; a success with a
// non-zero exit too.
func TestClaudeCrash(t *testing.T) {
	lines := fixtureLines(t, "claude-success")
	r := NewReader(Claude, fixed)
	feed(r, lines[:len(lines)-1])
	if res := r.Finish(-1); !res.Error || res.Final || res.Cause != Crash || res.Words != "exit status -1, no final event" {
		t.Errorf("killed: %+v", res)
	}
	r = NewReader(Claude, fixed)
	feed(r, lines)
	if res := r.Finish(2); !res.Error || !res.Final || res.Cause != Crash || res.Words != "exit status 2 after a successful end" {
		t.Errorf("exit 2: %+v", res)
	}
	// A CLI that fails before its stream says why on stderr.
	r = NewReader(Claude, fixed)
	feed(r, []string{"Error: Invalid API key · Please run /login"})
	if res := r.Finish(1); res.Cause != Auth || res.Words != "not logged in" {
		t.Errorf("stderr only: %+v", res)
	}
	r = NewReader(Claude, fixed)
	feed(r, []string{"node: bad option: --foo"})
	if res := r.Finish(9); res.Cause != Crash || res.Words != "exit status 9, no final event: node: bad option: --foo" {
		t.Errorf("stderr crash: %+v", res)
	}
}

// Subtypes of a failed result other than an API error.
func TestClaudeErrorSubtypes(t *testing.T) {
	r := NewReader(Claude, fixed)
	log := feed(r, []string{`{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"total_cost_usd":0.5,"errors":["Reached maximum number of turns (3)"],"permission_denials":[],"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":1000,"cache_creation_input_tokens":20}}`})
	res := r.Finish(1)
	if res.Cause != Crash || res.Words != "max turns reached: Reached maximum number of turns (3)" {
		t.Errorf("%+v", res)
	}
	if res.Usage != (Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 1000, CacheWriteTokens: 20, CostUSD: 0.5}) {
		t.Errorf("usage %+v", res.Usage)
	}
	want := []string{"result: error_max_turns, 3 turns, $0.5000, 10 in / 5 out tokens (cache: 1000 read, 20 written)",
		"  max turns reached: Reached maximum number of turns (3)"}
	if !slices.Equal(log, want) {
		t.Errorf("log %q, want %q", log, want)
	}
}

// The typed fields decide when the text does not: a usage limit worded
// as a plain 429.
func TestClaudeTypedKinds(t *testing.T) {
	for _, tt := range []struct {
		event string
		cause Cause
		words string
	}{
		{`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error_type":"rate_limit_error","api_error":"usage_limit_reached","result":"API Error: Request rejected (429) · slow down"}`, UsageLimit, "usage limit, no reset time given"},
		{`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error_type":"insufficient_quota","result":"API Error: Request rejected (429) · no"}`, Quota, "quota exhausted (plan and billing)"},
		{`{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"result":"something new"}`, Crash, "something new"},
		{`{"type":"result","subtype":"success","is_error":true,"api_error_type":"authentication_error","result":"API Error: something new"}`, Auth, "authentication failed"},
	} {
		r := NewReader(Claude, fixed)
		r.Line(tt.event)
		if res := r.Finish(1); res.Cause != tt.cause || res.Words != tt.words {
			t.Errorf("%s: %q %q, want %q %q", tt.event, res.Cause, res.Words, tt.cause, tt.words)
		}
	}
}

// A rejected rate_limit_event gives the reset time even when the result
// text has none.
func TestClaudeRateLimitEvent(t *testing.T) {
	reset := fixed().Add(90 * time.Minute)
	r := NewReader(Claude, fixed)
	log := feed(r, []string{
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":` + itoa(reset.Unix()) + `,"rateLimitType":"seven_day"}}`,
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error":"usage_limit_reached","result":"API Error: Request rejected (429)"}`,
	})
	res := r.Finish(1)
	if res.Cause != UsageLimit || !res.ResetAt.Equal(reset) || res.Words != "weekly limit until 20:00 UTC" {
		t.Errorf("%+v", res)
	}
	if log[0] != "rate limit: rejected, weekly limit, resets 20:00 UTC" {
		t.Errorf("log %q", log)
	}
}

func TestCodexEndings(t *testing.T) {
	// Killed while reconnecting.
	r := NewReader(Codex, fixed)
	feed(r, []string{`{"type":"thread.started","thread_id":"x"}`, `{"type":"turn.started"}`,
		`{"type":"error","message":"Reconnecting... 2/5 (exceeded retry limit, last status: 429 Too Many Requests)"}`})
	if res := r.Finish(-1); res.Cause != RateLimit || res.Retries != 1 || !strings.HasSuffix(res.Words, "still retrying when the run ended") {
		t.Errorf("killed reconnecting: %+v", res)
	}
	// Waiting for the network, forever (a refused connection).
	r = NewReader(Codex, fixed)
	feed(r, []string{`{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}`,
		`{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}`})
	if res := r.Finish(-1); res.Cause != API || res.Retries != 2 {
		t.Errorf("network: %+v", res)
	}
	// An error event and an exit, no turn.failed.
	r = NewReader(Codex, fixed)
	feed(r, []string{`{"type":"error","message":"You've hit your usage limit. Try again at 8:00 PM."}`})
	if res := r.Finish(1); res.Cause != UsageLimit || !res.ResetAt.Equal(time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)) {
		t.Errorf("error event: %+v", res)
	}
	// A warning item is no cause.
	r = NewReader(Codex, fixed)
	log := feed(r, []string{`{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`x`" + ` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}`,
		`{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":2,"output_tokens":1}}`,
		`{"type":"turn.started"}`,
		`{"type":"turn.completed","usage":{"input_tokens":9,"cached_input_tokens":4,"output_tokens":3}}`})
	if res := r.Finish(0); res.Error || res.Cause != None || res.Usage != (Usage{InputTokens: 9, OutputTokens: 3, CacheReadTokens: 4}) {
		t.Errorf("warning: %+v", res)
	}
	if !strings.HasPrefix(log[0], "warning: Model metadata for `x` not found.") {
		t.Errorf("log %q", log)
	}
	// A declined command is a denial.
	r = NewReader(Codex, fixed)
	log = feed(r, []string{`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'git push'","aggregated_output":"","exit_code":null,"status":"declined"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":0,"output_tokens":1}}`})
	if res := r.Finish(0); res.Cause != Permission || res.Words != "permission denied: shell(git push)" {
		t.Errorf("declined: %+v", res)
	}
	if !slices.Equal(log, []string{"$ git push", "  ! declined", "result: success, 5 in / 1 out tokens"}) {
		t.Errorf("log %q", log)
	}
}

func TestCodexItems(t *testing.T) {
	r := NewReader(Codex, fixed)
	log := feed(r, []string{
		`{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Planning**\n\nI will look."}}`,
		`{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"/r/a.go","kind":"update"},{"path":"/r/b.go","kind":"add"}],"status":"completed"}}`,
		`{"type":"item.started","item":{"id":"item_2","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":null,"error":null,"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"item_2","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":null,"error":{"message":"server gone"},"status":"failed"}}`,
		`{"type":"item.completed","item":{"id":"item_3","type":"web_search","query":"go time zones"}}`,
		`{"type":"item.started","item":{"id":"item_4","type":"todo_list","items":[{"text":"a","completed":false}]}}`,
		`{"type":"item.completed","item":{"id":"item_5","type":"command_execution","command":"/bin/bash -lc \"printf '%s\\n' 1 2 3 4 5\"","aggregated_output":"1\n2\n3\n4\n5\n","exit_code":0,"status":"completed"}}`,
		`{"type":"something.new","x":1}`,
	})
	want := []string{
		"thinking: **Planning**", "edit: /r/a.go (update), /r/b.go (add)", `tool: docs.search({"q":"x"})`, "  ! server gone",
		"search: go time zones", `$ printf '%s\n' 1 2 3 4 5`, "  1", "  2", "  3", "  ... (2 more lines)", "  (exit 0)",
	}
	if !slices.Equal(log, want) {
		t.Errorf("log\n%q\nwant\n%q", log, want)
	}
}

func TestShellCommand(t *testing.T) {
	for in, want := range map[string]string{
		`/bin/bash -lc 'touch a && git add a'`:  `touch a && git add a`,
		`/bin/bash -lc 'echo '\''hi'\'''`:       `echo 'hi'`,
		`/bin/bash -lc "echo 'a' \"b\" \$HOME"`: `echo 'a' "b" $HOME`,
		`bash -lc ls`:                           `ls`,
		`git status`:                            `git status`,
		`/bin/bash -lc '`:                       `/bin/bash -lc '`,
	} {
		if got := shellCommand(in); got != want {
			t.Errorf("shellCommand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJoinParts(t *testing.T) {
	cmd := "touch a && git commit -qm 'a, b, c' && git add x, y"
	got := joinParts(strings.Split("git commit -qm 'a, b, c', git add x, y", ", "), cmd)
	if want := []string{"git commit -qm 'a, b, c'", "git add x, y"}; !slices.Equal(got, want) {
		t.Errorf("joinParts = %q", got)
	}
	got = joinParts([]string{"git add f.txt", "git commit -qm x"}, "touch f.txt && git add f.txt && git commit -qm x")
	if want := []string{"git add f.txt", "git commit -qm x"}; !slices.Equal(got, want) {
		t.Errorf("joinParts = %q", got)
	}
}

// Plain text: only a failed run's last lines count.
func TestPlain(t *testing.T) {
	work := []string{"running tests", "FAIL TestFetch: HTTP 429 Too Many Requests, rate limit exceeded, try again in 20s", "fixed it"}
	r := NewReader(Plain, fixed)
	feed(r, work)
	if res := r.Finish(0); res.Error || res.Cause != None {
		t.Errorf("exit 0: %+v", res)
	}
	r = NewReader(Plain, fixed)
	feed(r, append(work, "Error: You've hit your 5-hour limit · resets 8:09pm (UTC)"))
	if res := r.Finish(1); !res.Error || res.Cause != UsageLimit || res.Words != "5-hour limit until 20:09 UTC" {
		t.Errorf("limit: %+v", res)
	}
	// Only the last five lines: an old limit message is no evidence.
	r = NewReader(Plain, fixed)
	feed(r, []string{"You've hit your 5-hour limit · resets 8:09pm (UTC)", "a", "b", "c", "d", "", "e", "panic: boom"})
	if res := r.Finish(2); res.Cause != Crash || res.Words != "exit status 2: panic: boom" {
		t.Errorf("old limit: %+v", res)
	}
	r = NewReader("aider", fixed) // any other kind is plain text
	if log := feed(r, []string{`{"type":"result","is_error":true}`}); !slices.Equal(log, []string{`{"type":"result","is_error":true}`}) {
		t.Errorf("JSON in plain text: %q", log)
	}
	if res := r.Finish(0); res.Final || res.Error {
		t.Errorf("JSON in plain text: %+v", res)
	}
}

// The prompt Codex echoes in its plain output is left out, however long.
func TestPromptEcho(t *testing.T) {
	prompt := []string{"# Task", "", "Do the thing.", "codex is a word here", "ERROR in the prompt is not a heading without its colon"}
	lines := append([]string{"Reading prompt from stdin...", "OpenAI Codex v0.169.0", "--------", "workdir: /r", "model: gpt-5.5", "--------", "user"}, prompt...)
	lines = append(lines, "", "exec", "/bin/bash -lc ls in /r", " succeeded in 3ms:", "a", "codex", "Done.")
	r := NewReader(Plain, fixed)
	log := feed(r, lines)
	want := []string{"OpenAI Codex v0.169.0", "--------", "workdir: /r", "model: gpt-5.5", "--------",
		"(the prompt Codex echoed, 6 lines, left out)", "exec", "/bin/bash -lc ls in /r", " succeeded in 3ms:", "a", "codex", "Done."}
	if !slices.Equal(log, want) {
		t.Errorf("log\n%q\nwant\n%q", log, want)
	}
	// The prompt's lines are no evidence either.
	r = NewReader(Plain, fixed)
	feed(r, []string{"OpenAI Codex v0.169.0", "--------", "--------", "user", "You've hit your 5-hour limit · resets 8:09pm (UTC)"})
	if res := r.Finish(1); res.Cause != Crash {
		t.Errorf("prompt as evidence: %+v", res)
	}
}

// Garbage: not JSON, broken JSON, unknown events, control characters,
// huge lines.
func TestGarbage(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	for _, kind := range []string{Claude, Codex, Plain} {
		r := NewReader(kind, fixed)
		for _, tt := range []struct {
			line string
			want []string
		}{
			{"plain words", []string{"plain words"}},
			{"\x1b]52;c;AAAA\x07 evil\r", []string{`\x1b]52;c;AAAA\x07 evil`}},
			{"tab\there", []string{"tab    here"}},
			{`{"not":"an event"}`, nil},
			{`[1,2,3]`, []string{"[1,2,3]"}},
			{`{"type":"assistant","message":{"content":[{"type":"te`, []string{"(a broken event of 53 bytes)"}},
			{`{"type":"brand_new","payload":{"a":[1,2]}}`, nil},
			{`{"type":"assistant","message":"a string","error":{"nested":true}}`, nil},
			{`{"type":"result","usage":"none","permission_denials":"none","errors":[1]}`, nil},
			{`{"type":"item.completed","item":"none"}`, nil},
		} {
			got := r.Line(tt.line)
			checkVisible(t, got)
			if kind == Plain {
				continue
			}
			if tt.line[0] == '{' && (tt.want == nil) && got != nil && !strings.HasPrefix(got[0], "result:") {
				t.Errorf("%s: Line(%q) = %q, want nothing", kind, tt.line, got)
			} else if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Errorf("%s: Line(%q) = %q, want %q", kind, tt.line, got, tt.want)
			}
		}
		got := r.Line(huge)
		checkVisible(t, got)
		if len(got) != 1 || utf8.RuneCountInString(got[0]) > width+3 {
			t.Errorf("%s: huge line gave %d lines of %d", kind, len(got), len(got[0]))
		}
		r.Finish(1)
	}
	// Assistant text: control characters made visible, long text cut.
	r := NewReader(Claude, fixed)
	long := strings.Repeat("line\n", 100)
	got := r.Line(`{"type":"assistant","message":{"content":[{"type":"text","text":"hi \u001b[31mred\u001b[0m\u202e"},{"type":"text","text":` + quote(long) + `},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/etc/passwd"}},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"echo a\necho b"}},{"type":"tool_use","id":"t3","name":"Mystery","input":{"x":1}}]}}`)
	checkVisible(t, got)
	if got[0] != `hi \x1b[31mred\x1b[0m\u202e` || len(got) != 1+textLines+1+1+2+1 || got[textLines+1] != "... (60 more lines)" {
		t.Errorf("assistant: %q", got)
	}
	if tail := got[len(got)-4:]; !slices.Equal(tail, []string{"tool: Read(/etc/passwd)", "$ echo a", "$ echo b", `tool: Mystery({"x":1})`}) {
		t.Errorf("tools: %q", tail)
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"` }

// Result may be asked while lines come.
func TestConcurrent(t *testing.T) {
	lines := fixtureLines(t, "claude-success")
	r := NewReader(Claude, nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 100 {
			r.Result()
		}
	}()
	for range 20 {
		feed(r, lines)
	}
	wg.Wait()
	if res := r.Finish(0); !res.Final || res.Error {
		t.Errorf("%+v", res)
	}
}
