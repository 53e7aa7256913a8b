package standin

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// The OpenAI Responses API, as Codex uses it.

type openaiRequest struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	Input        []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	} `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

// openaiModelItem reports whether an input item is the model's own output.
func openaiModelItem(typ, role string) bool {
	switch typ {
	case "message":
		return role == "assistant"
	case "function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call":
		return true
	}
	return false
}

func openaiTurn(req *openaiRequest, h http.Header) *Turn {
	t := &Turn{API: "openai", Model: req.Model, System: req.Instructions, Session: h.Get("Session-Id")}
	for _, tool := range req.Tools {
		name := tool.Name
		if name == "" {
			name = tool.Type
		}
		t.Tools = append(t.Tools, name)
	}
	inModel := false
	for _, it := range req.Input {
		model := openaiModelItem(it.Type, it.Role)
		if model && !inModel {
			t.Step++
		}
		inModel = model
		switch {
		case it.Type == "function_call_output" || it.Type == "custom_tool_call_output" || it.Type == "local_shell_call_output":
			t.ToolResult = commandOutput(text(it.Output))
		case it.Type == "message" && it.Role == "developer" || it.Type == "message" && it.Role == "system":
			t.System = joinLines(t.System, text(it.Content))
		case it.Type == "message" && it.Role == "user" && t.Step == 0:
			var parts []struct{ Text string }
			json.Unmarshal(it.Content, &parts)
			for _, p := range parts {
				if !harnessBlock(p.Text) {
					t.Prompt = joinLines(t.Prompt, p.Text)
				}
			}
		}
	}
	return t
}

// commandOutput strips the header Codex puts before a command's output
// ("Chunk ID: ...\nWall time: ...\nProcess exited with code N\n...Output:\n")
// and unwraps the {"output": ...} form of the older shell tool.
func commandOutput(s string) string {
	if _, out, ok := strings.Cut(s, "\nOutput:\n"); ok && strings.HasPrefix(s, "Chunk ID:") {
		return out
	}
	var v struct {
		Output *string `json:"output"`
	}
	if json.Unmarshal([]byte(s), &v) == nil && v.Output != nil {
		return *v.Output
	}
	return s
}

// shellCall is the output item that asks Codex to run cmd, in the form of
// the first shell tool the request offers.
func shellCall(req *openaiRequest, id, callID, cmd string) map[string]any {
	fn := func(name string, args any) map[string]any {
		b, _ := json.Marshal(args)
		return map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": name, "arguments": string(b), "status": "completed"}
	}
	for _, tool := range req.Tools {
		switch {
		case tool.Name == "exec_command": // unified exec, 0.169.0's default
			return fn(tool.Name, map[string]any{"cmd": cmd})
		case tool.Name == "shell_command":
			return fn(tool.Name, map[string]any{"command": cmd})
		case tool.Name == "shell":
			return fn(tool.Name, map[string]any{"command": []string{"bash", "-lc", cmd}})
		case tool.Type == "local_shell":
			return map[string]any{"type": "local_shell_call", "id": id, "call_id": callID, "status": "completed",
				"action": map[string]any{"type": "exec", "command": []string{"bash", "-lc", cmd}}}
		}
	}
	return fn("exec_command", map[string]any{"cmd": cmd})
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) {
	var req openaiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		rec.Kind = "main"
		writeRaw(w, http.StatusBadRequest, nil, openaiErrorCoded("invalid_request_error", "", "standin: "+err.Error()))
		return
	}
	t := openaiTurn(&req, r.Header)
	rec.Turn = t
	var rep Reply
	if len(req.Tools) == 0 {
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
	respID := s.newID("resp")
	var output []map[string]any
	if rep.Text != "" || rep.Shell == "" {
		output = append(output, map[string]any{"type": "message", "id": s.newID("msg"), "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": rep.Text, "annotations": []any{}}}})
	}
	if rep.Shell != "" {
		output = append(output, shellCall(&req, s.newID("fc"), s.newID("call"), rep.Shell))
	}
	resp := func(status string, out any, usage any) map[string]any {
		return map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": req.Model, "output": out, "usage": usage}
	}
	usage := map[string]any{"input_tokens": u.InputTokens, "input_tokens_details": map[string]int{"cached_tokens": 0},
		"output_tokens": u.OutputTokens, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
		"total_tokens": u.InputTokens + u.OutputTokens}
	if !req.Stream {
		writeJSON(w, http.StatusOK, resp("completed", output, usage))
		return
	}
	st := newStream(s, w, r)
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		st.event(typ, fields)
	}
	ev("response.created", map[string]any{"response": resp("in_progress", []any{}, nil)})
	share := rep.Pace / time.Duration(len(output))
	alive := func() { ev("response.in_progress", map[string]any{"response": resp("in_progress", []any{}, nil)}) }
	for i, item := range output {
		if item["type"] != "message" {
			if !st.pace(share, alive) {
				return
			}
			ev("response.output_item.added", map[string]any{"output_index": i, "item": item})
			ev("response.output_item.done", map[string]any{"output_index": i, "item": item})
			continue
		}
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["content"], added["status"] = []any{}, "in_progress"
		ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
		for _, part := range chunks(map[string]any{"type": "text", "text": rep.Text}, 3) {
			if !st.pace(share/3, alive) {
				return
			}
			ev("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "delta": part})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	ev("response.completed", map[string]any{"response": resp("completed", output, usage)})
}

func openaiErrorCoded(typ, code, msg string) string {
	var c any
	if code != "" {
		c = code
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
	return string(b)
}

func openaiError(msg string) string { return openaiErrorCoded("invalid_request_error", "", msg) }
