package harness

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/internal/text"
)

// Codex's exec --json events (codex-rs/exec/src/exec_events.rs), the
// fields orch reads.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"` // error
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"` // turn.failed
	Usage *struct {
		InputTokens           int64 `json:"input_tokens"`
		CachedInputTokens     int64 `json:"cached_input_tokens"`
		CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
		OutputTokens          int64 `json:"output_tokens"`
	} `json:"usage"` // turn.completed
	Item *codexItem `json:"item"`
}

type codexItem struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	Text             string `json:"text"`    // agent_message, reasoning, plan
	Message          string `json:"message"` // error
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	Status           string `json:"status"`
	Changes          []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`
	Query string `json:"query"`
}

// reconnectRE is Codex's retry: "Reconnecting... 1/5 (the error)".
var reconnectRE = lazyregexp.New(`^Reconnecting\.\.\.\s*(?:\d+/\d+)?\s*(?:\((.*)\))?`)

func (r *Reader) codex(ev *codexEvent) []string {
	switch ev.Type {
	case "thread.started", "turn.started", "item.updated":
		if ev.Type == "turn.started" {
			r.final, r.failed = false, false // a new turn (exec runs one)
		}
		return nil
	case "error":
		if sm := reconnectRE().FindStringSubmatch(ev.Message); sm != nil {
			r.retries++
			r.retryText, r.retryStatus, r.retryAt = sm[1], 0, r.now()
			if r.retryText == "" {
				r.retryText = ev.Message
			}
			return lines("retry: "+ev.Message, "", 2, width)
		}
		r.errText, r.errAt = ev.Message, r.now()
		return lines("error: "+ev.Message, "", 5, width)
	case "turn.completed":
		r.final, r.failed = true, false
		if u := ev.Usage; u != nil {
			// The thread's running total (exec reports usage.total):
			// the last one counts, adding them up would count twice.
			r.usage = Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				CacheReadTokens: u.CachedInputTokens, CacheWriteTokens: u.CacheWriteInputTokens}
		}
		return []string{"result: success, " + r.usage.words()}
	case "turn.failed":
		r.final, r.failed = true, true
		if ev.Error != nil && ev.Error.Message != "" {
			r.errText = ev.Error.Message
		} else if r.errText == "" {
			r.errText = "turn failed"
		}
		r.errAt = r.now()
		return lines("result: failed: "+r.errText, "", 5, width)
	case "item.started", "item.completed":
		if ev.Item == nil {
			return nil
		}
		return r.codexItem(ev.Type == "item.completed", ev.Item)
	}
	return nil
}

func (r *Reader) codexItem(done bool, it *codexItem) []string {
	switch it.Type {
	case "agent_message":
		if !done || strings.TrimSpace(it.Text) == "" {
			return nil
		}
		return lines(it.Text, "", textLines, width)
	case "reasoning":
		if !done || strings.TrimSpace(it.Text) == "" {
			return nil
		}
		first, _, _ := strings.Cut(strings.TrimSpace(it.Text), "\n")
		return []string{"thinking: " + clean(first, width)}
	case "command_execution":
		var out []string
		if !r.started[it.ID] || it.ID == "" {
			out = lines(shellCommand(it.Command), "$ ", 5, width)
			r.started[it.ID] = true
		}
		if !done {
			return out
		}
		delete(r.started, it.ID)
		if it.Status == "declined" {
			r.denials = dedupe(append(r.denials, "shell("+text.Clip(text.OneLine(shellCommand(it.Command)), 100)+")"))
			return append(out, "  ! declined")
		}
		if strings.TrimSpace(it.AggregatedOutput) != "" {
			out = append(out, lines(it.AggregatedOutput, "  ", resultLines, resultWidth)...)
		}
		if it.ExitCode != nil {
			out = append(out, "  (exit "+strconv.Itoa(*it.ExitCode)+")")
		}
		return out
	case "file_change":
		if !done {
			return nil
		}
		var parts []string
		for _, c := range it.Changes {
			parts = append(parts, text.Clip(text.OneLine(c.Path), 100)+" ("+c.Kind+")")
		}
		s := "edit: " + strings.Join(parts, ", ")
		if it.Status == "failed" {
			s += ": failed"
		}
		return []string{clean(s, width)}
	case "mcp_tool_call":
		if !done {
			return []string{"tool: " + clean(it.Server+"."+it.Tool+"("+text.Clip(text.OneLine(string(it.Arguments)), 100)+")", width)}
		}
		if it.Error != nil && it.Error.Message != "" {
			return lines("  ! "+it.Error.Message, "", resultLines, resultWidth)
		}
		return nil
	case "web_search":
		if !done {
			return nil
		}
		return []string{"search: " + clean(it.Query, width)}
	case "error":
		// Not fatal (a warning, a config notice): shown, never a cause.
		return lines("warning: "+it.Message, "", 3, width)
	}
	return nil // todo_list, plan, collab_tool_call, ...
}

// shellCommand is the command inside Codex's /bin/bash -lc '...'.
func shellCommand(c string) string {
	for _, p := range []string{"/bin/bash -lc ", "bash -lc ", "/bin/bash -c ", "bash -c ", "/bin/zsh -lc ", "zsh -lc ", "/bin/sh -c ", "sh -c "} {
		rest, ok := strings.CutPrefix(c, p)
		if !ok || len(rest) < 2 {
			continue
		}
		switch q := rest[0]; {
		case q == '\'' && rest[len(rest)-1] == '\'':
			return strings.ReplaceAll(rest[1:len(rest)-1], `'\''`, `'`)
		case q == '"' && rest[len(rest)-1] == '"':
			return strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`").Replace(rest[1 : len(rest)-1])
		}
		return rest
	}
	return c
}
