package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzReader feeds Line any lines, of every kind: it must not panic, and
// what it returns (the log's lines, Words, Denials) must be visible text.
func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.out"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		// The short lines: large inputs make the fuzzer slow to minimise
		// what it finds, and the long events are all alike.
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if len(l) < 600 {
				keep = append(keep, l)
			}
		}
		f.Add(strings.Join(keep, "\n"), uint8(len(name)))
	}
	for _, s := range []string{
		`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"api_error_type":"rate_limit_error","api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 2:17am (Europe/Berlin)","num_turns":1,"total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":2},"permission_denials":[]}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"a\nb"},{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}}` + "\n" +
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}],"is_error":true}]}}`,
		`{"type":"result","is_error":true,"result":"You've hit your 5-hour limit · resets 8:09pm (Mars/Base)"}`,
		`{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"x","message":"The following parts require approval: a\u001b, b"}` + "\n" +
			`{"type":"result","is_error":false,"permission_denials":[{"tool_name":"Bash","tool_use_id":"x","tool_input":{"command":"a\u001b, b"}}]}`,
		`{"type":"turn.failed","error":{"message":"There's an issue with the selected model (\u001b[2J)"}}`,
		"OpenAI Codex v1\n--------\n--------\nuser\nprompt\ncodex\nhi",
		`{"type":"item.completed","item":{"id":"","type":"command_execution","command":"/bin/bash -lc '","exit_code":-1}}`,
		"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\xfe\u2028\"}]}}",
	} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(1))
		f.Add(s, uint8(2))
	}
	now := time.Date(2026, 12, 1, 18, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data string, k uint8) {
		kind := []string{Claude, Codex, Plain}[k%3]
		r := NewReader(kind, func() time.Time { return now })
		for _, line := range strings.Split(data, "\n") {
			checkVisible(t, r.Line(line))
		}
		mid := r.Result()
		res := r.Finish(int(k) - 128)
		for _, x := range []Result{mid, res} {
			checkVisible(t, append([]string{x.Words}, x.Denials...))
			if x.Error && x.Cause == None || x.Cause != None && x.Words == "" {
				t.Errorf("Error %v, Cause %q, Words %q", x.Error, x.Cause, x.Words)
			}
			if !x.Cause.Wait() && !x.ResetAt.IsZero() {
				t.Errorf("a reset time for %q", x.Cause)
			}
		}
		if int(k)-128 != 0 && !res.Error {
			t.Errorf("exit %d, no error", int(k)-128)
		}
	})
}
