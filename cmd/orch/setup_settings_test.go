package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/orch-tool/orch/workflow"
)

// FuzzSessionHook: whatever settings orch accepts, it only inserts text
// (and, in an empty object or array, the blanks inside it go), the result
// is the settings plus the hook, and a second run changes nothing.
func FuzzSessionHook(f *testing.F) {
	for _, s := range []string{
		"", " \n", "{}", "{ }\n", "{\n}\n", "[]", "null", "1", `"x"`, "{", `{"a":1,}`,
		`{"hooks":null}`, `{"hooks":[]}`, `{"hooks":{"SessionStart":{}}}`,
		"{\n\t\"a\": 12345678901234567890,\n\t\"b\": \"<\\u003c>\"\n}",
		"{\r\n    \"hooks\": {}\r\n}\r\n",
		`{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo"}]}]}}`,
		"{\n  \"hooks\": {\n    \"SessionStart\": [\n      {\"hooks\": [{\"command\": \"x\"}]}\n    ]\n  }\n}",
		`{"hooks":{"SessionStart":[{"hooks":[{"command":"orch prime"}]}]}}`,
		`{"hooks":{},"hooks":{"SessionStart":[]}}`,
		`{"ho\u006fks": {"SessionStart": [1, "a", {"hooks": 2}]}}`,
		"{\"a\": [\n  1,\n  2\n], \"b\": {}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		next, err := withSessionHook("settings.json", data, "orch prime")
		if err != nil {
			var usage *workflow.UsageError
			if !errors.As(err, &usage) || !strings.HasPrefix(usage.Msg, "settings.json:") {
				t.Fatalf("%q: %v", data, err)
			}
			return
		}
		if !json.Valid(next) {
			t.Fatalf("%q: invalid JSON out: %q", data, next)
		}
		if len(bytes.TrimSpace(data)) > 0 {
			p := 0
			for p < len(data) && p < len(next) && data[p] == next[p] {
				p++
			}
			s := 0
			for s < len(data)-p && s < len(next)-p && data[len(data)-1-s] == next[len(next)-1-s] {
				s++
			}
			if gone := data[p : len(data)-s]; len(bytes.TrimSpace(gone)) > 0 {
				t.Fatalf("%q: lost %q: %q", data, gone, next)
			}
		}
		want := decodeSettings(t, data)
		addHook(want, "orch prime")
		if got := decodeSettings(t, next); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", data, got, want)
		}
		again, err := withSessionHook("settings.json", next, "orch prime")
		if err != nil || !bytes.Equal(again, next) {
			t.Fatalf("%q: second run: %v\n%q\n%q", data, err, next, again)
		}
	})
}

func decodeSettings(t *testing.T, data []byte) map[string]any {
	m := map[string]any{}
	if len(bytes.TrimSpace(data)) == 0 {
		return m
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%q: %v", data, err)
	}
	return m
}

// addHook is what orch setup claude means to do, on decoded settings.
func addHook(m map[string]any, command string) {
	hooks, _ := m["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
		m["hooks"] = hooks
	}
	starts, _ := hooks["SessionStart"].([]any)
	for _, s := range starts {
		e, _ := s.(map[string]any)
		inner, _ := e["hooks"].([]any)
		for _, h := range inner {
			if hm, _ := h.(map[string]any); hm["command"] == command {
				return
			}
		}
	}
	hooks["SessionStart"] = append(starts, map[string]any{"hooks": []any{map[string]any{"type": "command", "command": command}}})
}
