package standin

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// The Anthropic Messages API, as Claude Code uses it.

type anthropicRequest struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`
}

func anthropicTurn(req *anthropicRequest, h http.Header) *Turn {
	t := &Turn{API: "anthropic", Model: req.Model, System: stripBilling(text(req.System)), Session: h.Get("X-Claude-Code-Session-Id")}
	for _, tool := range req.Tools {
		t.Tools = append(t.Tools, tool.Name)
	}
	prev := ""
	for _, m := range req.Messages {
		if m.Role == "assistant" && prev != "assistant" {
			t.Step++
		}
		prev = m.Role
		if m.Role != "user" {
			continue
		}
		var blocks []anthropicBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			blocks = []anthropicBlock{{Type: "text", Text: text(m.Content)}}
		}
		for _, b := range blocks {
			switch {
			case b.Type == "tool_result":
				t.ToolResult = text(b.Content)
			case b.Type == "text" && t.Step == 0 && !harnessBlock(b.Text):
				t.Prompt = joinLines(t.Prompt, b.Text)
			}
		}
	}
	return t
}

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// anthropicSide reports whether a Messages request is one of Claude Code's
// own side requests (title, topic, command-prefix checks, ...), not the
// agent loop. See doc.go.
func anthropicSide(req *anthropicRequest, h http.Header) bool {
	if class := h.Get("X-Claude-Code-Request-Class"); class != "" {
		return class != "main"
	}
	return len(req.Tools) == 0
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		rec.Kind = "main"
		writeRaw(w, http.StatusBadRequest, nil, anthropicErrorTyped("invalid_request_error", "standin: "+err.Error()))
		return
	}
	t := anthropicTurn(&req, r.Header)
	rec.Turn = t
	var rep Reply
	if anthropicSide(&req, r.Header) {
		rec.Kind = "side"
		rep = Reply{Text: "{}", Usage: Usage{InputTokens: 10, OutputTokens: 1}}
	} else {
		rec.Kind = "main"
		t.Attempt = s.attempt(t)
		rep = s.play(t)
	}
	if !s.begin(w, r, rep, t) {
		return
	}
	u := rep.Usage.orDefault()
	id := s.newID("msg")
	var content []map[string]any
	if rep.Text != "" || rep.Shell == "" {
		content = append(content, map[string]any{"type": "text", "text": rep.Text})
	}
	stop := "end_turn"
	if rep.Shell != "" {
		stop = "tool_use"
		content = append(content, map[string]any{"type": "tool_use", "id": s.newID("toolu"), "name": "Bash",
			"input": map[string]string{"command": rep.Shell, "description": "Run the scripted command"}})
	}
	msg := map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
	if !req.Stream {
		writeJSON(w, http.StatusOK, msg)
		return
	}
	st := newStream(s, w, r)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	start["usage"] = map[string]int{"input_tokens": u.InputTokens, "output_tokens": 1,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	st.event("message_start", map[string]any{"type": "message_start", "message": start})
	// With a Pace, each block's deltas are spread over an equal share of it.
	share := rep.Pace / time.Duration(len(content))
	ping := func() { st.event("ping", map[string]string{"type": "ping"}) }
	for i, c := range content {
		block, delta := map[string]any{}, map[string]any{}
		switch c["type"] {
		case "text":
			block = map[string]any{"type": "text", "text": ""}
		case "tool_use":
			block = map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}
		}
		st.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": block})
		for _, part := range chunks(c, 3) {
			if !st.pace(share/3, ping) {
				return
			}
			if c["type"] == "text" {
				delta = map[string]any{"type": "text_delta", "text": part}
			} else {
				delta = map[string]any{"type": "input_json_delta", "partial_json": part}
			}
			st.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta})
		}
		st.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	st.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens}})
	st.event("message_stop", map[string]string{"type": "message_stop"})
}

// chunks splits a block's text, or its tool input as JSON, into n pieces.
func chunks(block map[string]any, n int) []string {
	var s string
	if block["type"] == "text" {
		s = block["text"].(string)
	} else {
		b, _ := json.Marshal(block["input"])
		s = string(b)
	}
	var out []string
	for size := (len(s) + n - 1) / n; len(s) > size && size > 0; s = s[size:] {
		out = append(out, s[:size])
	}
	return append(out, s)
}

func anthropicErrorTyped(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	return string(b)
}

func anthropicError(status int, msg string) string {
	typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
		529: "overloaded_error"}[status]
	if typ == "" {
		typ = "api_error"
	}
	return anthropicErrorTyped(typ, msg)
}

// anthropicModels answers GET /v1/models[/id]: any id exists.
func anthropicModels(id string) any {
	if id != "" {
		return map[string]any{"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"}
	}
	m := anthropicModels("claude-opus-5-5")
	return map[string]any{"data": []any{m}, "has_more": false, "first_id": "claude-opus-5-5", "last_id": "claude-opus-5-5"}
}

// stripBilling drops the billing header block Claude Code puts first in
// its system prompt.
func stripBilling(s string) string {
	if strings.HasPrefix(s, "x-anthropic-billing-header:") {
		_, s, _ = strings.Cut(s, "\n")
	}
	return s
}
