package harness

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orch-tool/orch/internal/text"
)

// Claude Code's stream-json events (claude -p --output-format stream-json
// --verbose), the fields orch reads. One struct for every type: a field
// that is of another type in some event (error, message) is raw.
type claudeEvent struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`

	// system init
	Model   string `json:"model"`
	Version string `json:"claude_code_version"`

	// system api_retry
	Attempt      int             `json:"attempt"`
	MaxRetries   int             `json:"max_retries"`
	RetryDelayMS float64         `json:"retry_delay_ms"`
	ErrorStatus  *int            `json:"error_status"`
	Error        json.RawMessage `json:"error"` // api_retry, assistant: a string

	// system permission_denied
	ToolName  string `json:"tool_name"`
	ToolUseID string `json:"tool_use_id"`

	// assistant, user: an object; permission_denied: a string
	Message json.RawMessage `json:"message"`

	// assistant (an API error: a <synthetic> message)
	IsAPIErrorMessage bool `json:"is_api_error_message"`

	// result (api_error_status, api_error_type and api_error also on the
	// synthetic assistant message)
	IsError           bool           `json:"is_error"`
	Result            string         `json:"result"`
	TerminalReason    string         `json:"terminal_reason"`
	APIErrorStatus    *int           `json:"api_error_status"`
	APIErrorType      string         `json:"api_error_type"`
	APIError          string         `json:"api_error"`
	NumTurns          int            `json:"num_turns"`
	TotalCostUSD      float64        `json:"total_cost_usd"`
	Usage             *claudeUsage   `json:"usage"`
	PermissionDenials []claudeDenial `json:"permission_denials"`
	Errors            []string       `json:"errors"`

	// rate_limit_event
	RateLimitInfo *struct {
		Status        string   `json:"status"`
		ResetsAt      float64  `json:"resetsAt"`
		RateLimitType string   `json:"rateLimitType"`
		Utilization   *float64 `json:"utilization"`
	} `json:"rate_limit_info"`
}

type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

type claudeDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

type claudeMessage struct {
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"` // blocks, or (user) a string
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or blocks
	IsError   bool            `json:"is_error"`
	ToolUseID string          `json:"tool_use_id"`
}

// maxCalls bounds the tool calls remembered for naming their denials.
const maxCalls = 1000

func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

func (r *Reader) claude(ev *claudeEvent) []string {
	switch ev.Type {
	case "system":
		return r.claudeSystem(ev)
	case "assistant", "user":
		var msg claudeMessage
		json.Unmarshal(ev.Message, &msg)
		var blocks []claudeBlock
		if json.Unmarshal(msg.Content, &blocks) != nil {
			return nil // a user message given as a string: the prompt
		}
		if ev.Type == "assistant" && (ev.IsAPIErrorMessage || msg.Model == "<synthetic>") {
			// An API error, worded by Claude Code; the result repeats it.
			var b strings.Builder
			for _, bl := range blocks {
				b.WriteString(bl.Text)
			}
			if ev.IsAPIErrorMessage {
				r.synthetic, r.synthAt = b.String(), r.now()
				r.errKinds = append(r.errKinds[:0], rawString(ev.Error), ev.APIError, ev.APIErrorType)
				if ev.APIErrorStatus != nil {
					r.errStatus = *ev.APIErrorStatus
				}
			}
			return nil
		}
		var out []string
		for _, bl := range blocks {
			out = append(out, r.claudeBlockText(ev.Type, &bl)...)
		}
		return out
	case "rate_limit_event":
		info := ev.RateLimitInfo
		if info == nil || info.Status == "allowed" || info.Status == "" {
			return nil
		}
		reset := time.Unix(int64(info.ResetsAt), 0)
		if info.Status == "rejected" && info.ResetsAt > 0 {
			r.limitReset, r.limitType = reset, info.RateLimitType
		} else if info.Status == "rejected" {
			r.limitType = info.RateLimitType
		}
		s := "rate limit: " + clean(info.Status, 40)
		if info.RateLimitType != "" {
			s += ", " + clean(limitName(info.RateLimitType), 40) + " limit"
		}
		if info.Utilization != nil {
			s += fmt.Sprintf(" %.0f%% used", *info.Utilization*100)
		}
		if info.ResetsAt > 0 {
			s += ", resets " + when(reset, r.now())
		}
		return []string{s}
	case "result":
		return r.claudeResult(ev)
	}
	return nil // stream_event, tool_progress, ...: nothing for the log
}

func (r *Reader) claudeSystem(ev *claudeEvent) []string {
	switch ev.Subtype {
	case "init":
		s := "claude"
		if ev.Version != "" {
			s += " " + clean(ev.Version, 20)
		}
		if ev.Model != "" {
			s += ", model " + clean(ev.Model, 60)
		}
		return []string{s}
	case "api_retry":
		r.retries++
		r.retryText, r.retryStatus, r.retryAt = rawString(ev.Error), 0, r.now()
		if ev.ErrorStatus != nil {
			r.retryStatus = *ev.ErrorStatus
		}
		if r.retryText == "rate_limit" {
			r.retryText = "rate limit"
		}
		s := fmt.Sprintf("retry %d/%d in %.1fs", ev.Attempt, ev.MaxRetries, ev.RetryDelayMS/1000)
		if r.retryText != "" {
			s += ": " + clean(r.retryText, 60)
		}
		if r.retryStatus != 0 {
			s += " (" + strconv.Itoa(r.retryStatus) + ")"
		}
		return []string{s}
	case "permission_denied":
		msg := rawString(ev.Message)
		r.parts[ev.ToolUseID] = nil
		if _, parts, ok := strings.Cut(msg, "parts require approval: "); ok {
			r.parts[ev.ToolUseID] = strings.Split(parts, ", ")
		}
		// Counted now, for a run that ends without its result.
		c := r.calls[ev.ToolUseID]
		if c.named == "" {
			c.named = ev.ToolName
		}
		r.denials = dedupe(append(r.denials, r.denialNames(ev.ToolName, ev.ToolUseID, c)...))
		return lines("denied: "+ev.ToolName+": "+msg, "", 2, width)
	}
	return nil
}

// claudeBlockText is what the log shows of one content block.
func (r *Reader) claudeBlockText(role string, bl *claudeBlock) []string {
	switch {
	case role == "assistant" && bl.Type == "text":
		if strings.TrimSpace(bl.Text) == "" {
			return nil
		}
		return lines(bl.Text, "", textLines, width)
	case role == "assistant" && bl.Type == "tool_use":
		if len(r.calls) >= maxCalls {
			clear(r.calls)
		}
		c := newCall(bl.Name, bl.Input)
		r.calls[bl.ID] = c
		if bl.Name == "Bash" {
			return lines(c.command, "$ ", 5, width)
		}
		return []string{"tool: " + clean(c.named, width)}
	case role == "user" && bl.Type == "tool_result":
		if _, denied := r.parts[bl.ToolUseID]; denied {
			return nil // the permission_denied event said it
		}
		out := toolResultText(bl.Content)
		if strings.TrimSpace(out) == "" {
			return nil
		}
		prefix := "  "
		if bl.IsError {
			prefix = "  ! "
		}
		return lines(out, prefix, resultLines, resultWidth)
	}
	return nil // thinking, images, the prompt's own blocks
}

// toolResultText is the text of a tool_result's content: a string or
// text blocks.
func toolResultText(raw json.RawMessage) string {
	if s := rawString(raw); s != "" {
		return s
	}
	var blocks []claudeBlock
	json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// toolCall names a tool call as Claude Code's permission rules do:
// Name(argument), the argument that says what it touches.
func toolCall(name string, input json.RawMessage) string {
	var in map[string]json.RawMessage
	json.Unmarshal(input, &in)
	for _, k := range []string{"command", "file_path", "notebook_path", "path", "pattern", "url", "query", "description", "prompt", "skill"} {
		if s := rawString(in[k]); s != "" {
			return name + "(" + text.Clip(text.OneLine(s), 100) + ")"
		}
	}
	if len(in) == 0 {
		return name
	}
	return name + "(" + text.Clip(text.OneLine(string(input)), 100) + ")"
}

func (r *Reader) claudeResult(ev *claudeEvent) []string {
	r.final, r.failed = true, ev.IsError
	r.subtype, r.turns = ev.Subtype, ev.NumTurns
	if u := ev.Usage; u != nil {
		r.usage = Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
	}
	r.usage.CostUSD = ev.TotalCostUSD
	r.errAt = r.now()
	if ev.IsError {
		r.errText = ev.Result
		if r.errText == "" {
			r.errText = strings.Join(ev.Errors, "; ")
		}
		if r.errText == "" {
			r.errText = strings.TrimPrefix(ev.Subtype, "error_")
		}
		if ev.APIErrorStatus != nil {
			r.errStatus = *ev.APIErrorStatus
		}
		kinds := []string{ev.APIError, ev.APIErrorType}
		if r.synthetic != "" { // the synthetic message's error, when it was this one
			kinds = append(kinds, r.errKinds...)
		}
		r.errKinds = kinds
		switch ev.Subtype {
		case "error_max_turns", "error_max_budget_usd", "error_max_structured_output_retries":
			// The loop's own limits: a crash, but in words.
			r.errText = strings.ReplaceAll(strings.TrimPrefix(ev.Subtype, "error_"), "_", " ") + " reached: " + r.errText
		}
	}
	var denials []string
	for _, d := range ev.PermissionDenials {
		denials = append(denials, r.denialNames(d.ToolName, d.ToolUseID, newCall(d.ToolName, d.ToolInput))...)
	}
	if ev.PermissionDenials != nil {
		r.denials = dedupe(denials)
	}

	status := "success"
	if ev.IsError {
		status = "error"
		if ev.Subtype != "success" && ev.Subtype != "" {
			status = ev.Subtype
		}
	}
	s := fmt.Sprintf("result: %s, %s, $%.4f, %s", clean(status, 40), plural(ev.NumTurns, "turn"), ev.TotalCostUSD, r.usage.words())
	if n := len(r.denials); n > 0 {
		s += ", " + plural(n, "permission denial")
	}
	if ev.IsError {
		return append([]string{s}, lines(r.errText, "  ", 3, width)...)
	}
	return []string{s}
}

// A call is what is kept of a tool call: its name with its argument
// (toolCall), and a Bash call's command.
type call struct{ named, command string }

func newCall(name string, input json.RawMessage) call {
	c := call{named: toolCall(name, input)}
	if name == "Bash" {
		var in struct{ Command string }
		json.Unmarshal(input, &in)
		c.command = in.Command
		if len(c.command) > 4000 {
			c.command = c.command[:4000]
		}
	}
	return c
}

// denialNames names a denied tool call: Tool(argument), for Bash one per
// part of a compound command that needed approval.
func (r *Reader) denialNames(tool, id string, c call) []string {
	if parts := joinParts(r.parts[id], c.command); tool == "Bash" && len(parts) > 0 {
		var out []string
		for _, p := range parts {
			out = append(out, "Bash("+text.Clip(text.OneLine(p), 100)+")")
		}
		return out
	}
	return []string{c.named}
}

// joinParts mends the parts of a command that Claude Code listed as
// "a, b, c": a part whose own text has ", " was split; pieces that stand
// together in the command are one part.
func joinParts(pieces []string, command string) []string {
	var out []string
	for _, p := range pieces {
		if n := len(out); n > 0 && strings.Contains(command, out[n-1]+", "+p) {
			out[n-1] += ", " + p
			continue
		}
		out = append(out, p)
	}
	return out
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// words says the usage for the log: "12345 in / 678 out tokens", with the
// cached input when there was some.
func (u Usage) words() string {
	s := fmt.Sprintf("%d in / %d out tokens", u.InputTokens, u.OutputTokens)
	if u.CacheReadTokens > 0 || u.CacheWriteTokens > 0 {
		s += fmt.Sprintf(" (cache: %d read, %d written)", u.CacheReadTokens, u.CacheWriteTokens)
	}
	return s
}
