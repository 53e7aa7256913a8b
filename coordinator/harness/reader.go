package harness

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orch-tool/orch/internal/text"
)

// Result is what a run's output said about how it ended.
type Result struct {
	// Final: the terminal event was seen (claude's result; codex's
	// turn.completed or turn.failed). Never for plain text.
	Final bool
	// Error: the run failed. Before Finish: the final event says so
	// (claude's is_error, true even with subtype "success"; codex's
	// turn.failed). After Finish also: a non-zero exit, or a structured
	// run that ended without its final event.
	Error bool
	// Cause explains a failure, or a run that did not do its work
	// (Permission, even when Error is false); None for a run that went
	// well. See the package documentation for how each harness is read.
	Cause Cause
	// Words says Cause for a note and the inbox, short: "usage limit until
	// 20:09 UTC", "invalid API key", "permission denied: Bash(git add f)".
	Words string
	// ResetAt is when a rate or usage limit resets, when the CLI said;
	// zero when unknown. It may lie up to ten minutes in the past (a
	// limit that has just reset); the caller caps how far ahead it waits.
	ResetAt time.Time
	Usage   Usage
	// Denials names the tool calls that were denied, as Tool(argument):
	// "Bash(git commit -qm x)", one for each part of a compound command
	// that needed approval.
	Denials []string
	// Retries counts the CLI's retries of failed requests: claude's
	// api_retry events, codex's "Reconnecting..." errors.
	Retries int
}

// Usage is what a run spent, as its CLI counted. Claude's InputTokens
// leave out the cached ones (CacheRead, CacheWrite); Codex's, as OpenAI
// counts, include CacheRead. Codex reports no cost.
type Usage struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
	CostUSD                                                      float64
}

// Kinds of harness output.
const (
	Claude = "claude" // claude -p --output-format stream-json --verbose
	Codex  = "codex"  // codex exec --json
	Plain  = ""       // anything else: lines of text
)

// Widths of what Line returns.
const (
	width       = 400 // characters of a line of text
	textLines   = 40  // lines of one assistant message
	resultLines = 3   // lines of a tool's result
	resultWidth = 200 // characters of a line of a tool's result
	tailLines   = 5   // last lines of plain output read for a failure
)

// A Reader reads one run's output, line by line: what the log shows, and
// how the run ended. Its methods may be called from several goroutines.
type Reader struct {
	kind string
	now  func() time.Time

	mu       sync.Mutex
	final    bool
	failed   bool // the final event says the run failed
	usage    Usage
	retries  int
	denials  []string
	finished bool
	exit     int

	// failure evidence: the final event's, else the last error seen
	errText   string    // claude's result text, codex's turn.failed message
	errStatus int       // HTTP status (claude's api_error_status)
	errKinds  []string  // claude's typed kinds: api_error, api_error_type, the message's error
	errAt     time.Time // when the evidence came: the time limit messages are read against
	synthetic string    // claude's last API error message (a <synthetic> assistant message)
	synthAt   time.Time
	// the last retry: claude's api_retry, codex's "Reconnecting..."
	retryText   string
	retryStatus int
	retryAt     time.Time
	// claude's rate_limit_event saying "rejected"
	limitReset time.Time
	limitType  string
	// claude: the denied tool calls (by tool_use_id), with the parts of a
	// compound command that needed approval
	parts map[string][]string
	calls map[string]call // claude: tool calls, by tool_use_id
	// claude: what the result said besides the text
	subtype string
	turns   int
	// codex: commands shown at item.started
	started map[string]bool

	tail []string // the last lines of text that were not events
	echo echoState
}

// NewReader returns a Reader of kind's output ("claude", "codex"; any
// other kind, "" included, is read as plain text). now gives the time a
// line came (nil: time.Now); limit messages are read against it.
func NewReader(kind string, now func() time.Time) *Reader {
	if now == nil {
		now = time.Now
	}
	if kind != Claude && kind != Codex {
		kind = Plain
	}
	return &Reader{kind: kind, now: now, parts: map[string][]string{}, calls: map[string]call{}, started: map[string]bool{}}
}

// Line reads the next line of the run's output (stdout and stderr
// merged, in order, without its line break) and returns what the log
// shows for it: none, one or several lines of text, without control
// characters. For claude and codex an event becomes its readable form
// (assistant text, "$ command" for a shell call, a tool's result clipped
// to a few lines, errors, the result); a line that is no JSON event comes
// back as itself (made visible and clipped), except the prompt Codex
// echoes, which is left out.
func (r *Reader) Line(line string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kind != Plain && strings.HasPrefix(line, "{") {
		out, ok := r.event(line)
		if ok {
			return out
		}
		if strings.HasPrefix(line, `{"type":`) {
			// A broken event (cut short by a line limit): no use as text.
			r.keepTail("")
			return []string{"(a broken event of " + strconv.Itoa(len(line)) + " bytes)"}
		}
	}
	return r.plain(line)
}

// event reads a JSON line; ok is false when it is not one.
func (r *Reader) event(line string) (out []string, ok bool) {
	decode := func(v any) bool {
		err := json.Unmarshal([]byte(line), v)
		var typeErr *json.UnmarshalTypeError
		// A field of another type than expected is left out; the rest is read.
		return err == nil || errors.As(err, &typeErr)
	}
	switch r.kind {
	case Claude:
		var ev claudeEvent
		if !decode(&ev) {
			return nil, false
		}
		return r.claude(&ev), true
	case Codex:
		var ev codexEvent
		if !decode(&ev) {
			return nil, false
		}
		return r.codex(&ev), true
	}
	return nil, false
}

// plain reads a line of text.
func (r *Reader) plain(line string) []string {
	line = strings.TrimRight(line, "\r")
	if strings.TrimSpace(line) == "Reading prompt from stdin..." {
		return nil // Codex, when the prompt comes on stdin without "-"
	}
	out, prompt := r.echo.line(line)
	if !prompt {
		r.keepTail(line)
	}
	return out
}

// keepTail keeps the last lines of text, for a failure that left no event.
func (r *Reader) keepTail(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	if len(line) > 2000 {
		line = line[:2000]
	}
	if len(r.tail) == tailLines {
		copy(r.tail, r.tail[1:])
		r.tail = r.tail[:tailLines-1]
	}
	r.tail = append(r.tail, line)
}

// Finish tells the Reader that the run's process exited with code (-1:
// killed by a signal) and returns the Result. It is Result, with the exit
// code counted: a non-zero exit is a failure, and so is a claude or codex
// run that ended without its final event.
func (r *Reader) Finish(code int) Result {
	r.mu.Lock()
	r.finished, r.exit = true, code
	r.mu.Unlock()
	return r.Result()
}

// Result returns what the output said so far (after Finish: how the run
// ended).
func (r *Reader) Result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{Final: r.final, Usage: r.usage, Retries: r.retries, Denials: append([]string(nil), r.denials...)}
	failed := r.failed || r.finished && (r.exit != 0 || !r.final && r.kind != Plain)
	if failed {
		res.Error = true
		res.Cause, res.Words, res.ResetAt = r.cause()
	}
	if len(res.Denials) > 0 && (res.Cause == None || res.Cause == Crash) {
		res.Cause, res.ResetAt = Permission, time.Time{}
		res.Words = text.Clip("permission denied: "+strings.Join(res.Denials, ", "), 300)
	}
	// What the CLI said, from wherever it came: one line, visible.
	res.Words = text.OneLine(text.Visible(res.Words))
	for i, d := range res.Denials {
		res.Denials[i] = text.OneLine(text.Visible(d))
	}
	return res
}

// cause explains a failure from the best evidence there is: the final
// event's error; else (the run ended without it) the last API error
// message, the last retry, the last lines of text the CLI printed.
func (r *Reader) cause() (Cause, string, time.Time) {
	switch {
	case r.failed:
		return r.classify(r.errText, r.errStatus, r.errKinds, r.errAt)
	case r.final:
		return Crash, "exit status " + strconv.Itoa(r.exit) + " after a successful end", time.Time{}
	case r.synthetic != "":
		return r.classify(r.synthetic, r.errStatus, r.errKinds, r.synthAt)
	case r.errText != "": // codex: an error event, no turn.failed
		return r.classify(r.errText, 0, nil, r.errAt)
	}
	var at time.Time
	if r.finished {
		at = r.now()
	}
	for i := len(r.tail) - 1; i >= 0; i-- {
		if c, w, reset := classify(r.tail[i], 0, at); c != Crash {
			return c, w, reset
		}
	}
	if r.retryText != "" {
		c, w, reset := classify(r.retryText, r.retryStatus, r.retryAt)
		if c != Crash {
			return c, w + ", still retrying when the run ended", reset
		}
	}
	words := "exit status " + strconv.Itoa(r.exit)
	if r.kind != Plain && !r.final {
		words += ", no final event"
	}
	if n := len(r.tail); n > 0 {
		words += ": " + crashWords(r.tail[n-1])
	}
	return Crash, text.Clip(words, 160), time.Time{}
}

// classify reads an error message with what the CLI typed about it.
func (r *Reader) classify(msg string, status int, kinds []string, at time.Time) (Cause, string, time.Time) {
	c, words, reset := classify(msg, status, at)
	has := func(names ...string) bool {
		for _, k := range kinds {
			for _, n := range names {
				if k == n {
					return true
				}
			}
		}
		return false
	}
	typed := None
	switch {
	case has("insufficient_quota", "billing_error"):
		typed = Quota
	case has("usage_limit_reached"):
		typed = UsageLimit
	case has("rate_limit", "rate_limit_error"):
		typed = RateLimit
	case has("authentication_failed", "authentication_error", "oauth_org_not_allowed", "account_on_hold", "permission_error"):
		typed = Auth
	case has("model_not_found"):
		typed = Model
	case has("overloaded", "overloaded_error", "server_error", "api_error"):
		typed = API
	}
	// The typed kind wins when it says more than the text: a quota or a
	// usage limit always (a 429's text may not tell them from a rate
	// limit), anything over a crash, and a specific cause over a generic
	// API error below 500.
	overrides := typed == Quota || typed == UsageLimit && c != Quota || c == Crash ||
		c == API && typed != API && status < 500
	if typed != None && typed != c && overrides {
		c = typed
		if c == Auth || c == Model {
			if c2, w, ok := authOrModel(normalize(msg), status); ok && c2 == c {
				words = w
			} else if c == Auth {
				words = "authentication failed"
			} else {
				words = "model not found"
			}
		}
	}
	if c.Wait() && !r.limitReset.IsZero() && r.limitReset.After(at.Add(-grace)) {
		reset = r.limitReset // the rejected rate_limit_event's resetsAt
	}
	switch c {
	case RateLimit, UsageLimit, Quota:
		m := normalize(msg)
		if c == UsageLimit && r.limitType != "" && !usageRE().MatchString(m) {
			m = "hit your " + limitName(r.limitType) + " limit"
		}
		words = limitWords(c, m, status, reset, at)
	default:
		reset = time.Time{}
	}
	return c, words, reset
}

// limitName names a claude rateLimitType as Claude Code does.
func limitName(t string) string {
	switch t {
	case "five_hour":
		return "5-hour"
	case "seven_day":
		return "weekly"
	case "seven_day_opus":
		return "Opus"
	case "seven_day_sonnet":
		return "Sonnet"
	}
	return "usage"
}

// clean makes one line of output fit for the log: visible, without tabs
// or a carriage return, clipped to n characters.
func clean(s string, n int) string {
	s = text.Visible(strings.TrimRight(s, "\r"))
	s = strings.ReplaceAll(s, "\t", "    ")
	return text.Clip(s, n)
}

// lines cuts s into its first max lines (then a line that counts the
// rest), each cleaned to width, each prefixed.
func lines(s, prefix string, max, n int) []string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var out []string
	for i, l := range all {
		if i == max {
			out = append(out, prefix+"... ("+strconv.Itoa(len(all)-max)+" more lines)")
			break
		}
		out = append(out, prefix+clean(l, n))
	}
	return out
}

// echoState leaves out the prompt Codex echoes at the start of its plain
// output (codex exec without --json): after its banner ("OpenAI Codex
// v...", settings between two "--------" lines) a line "user", then the
// prompt, up to the next of its headings ("codex", "exec", "thinking",
// "ERROR: ...", ...).
type echoState struct {
	state  int // 0 text, 1 in the banner, 2 after it, 3 in the prompt, 4 done
	dashes int
	lines  int
}

// maxEcho is the most lines taken for an echoed prompt: past it, output
// of a format not recognised comes back.
const maxEcho = 5000

// line returns what the log shows for a line of text, and whether it was
// part of the echoed prompt.
func (e *echoState) line(l string) ([]string, bool) {
	switch e.state {
	case 0:
		if strings.HasPrefix(l, "OpenAI Codex v") {
			e.state = 1
		}
	case 1:
		if l == "--------" {
			if e.dashes++; e.dashes == 2 {
				e.state = 2
			}
		}
	case 2:
		e.state = 4
		if l == "user" {
			e.state = 3
			return nil, true
		}
	case 3:
		if codexHeading(l) || e.lines == maxEcho {
			e.state = 4
			return []string{"(the prompt Codex echoed, " + plural(e.lines, "line") + ", left out)", clean(l, width)}, false
		}
		e.lines++
		return nil, true
	}
	return []string{clean(l, width)}, false
}

// codexHeading reports whether a line is one that Codex's plain output
// begins a part with.
func codexHeading(l string) bool {
	switch l {
	case "codex", "exec", "thinking", "tool", "file update", "tokens used", "user", "apply_patch", "turn diff", "plan":
		return true
	}
	for _, p := range []string{"ERROR: ", "warning: ", "WARNING: ", "mcp: ", "mcp startup: ", "deprecated: ", "Reconnecting...", "tool ", "web search: ", "apply_patch "} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}
