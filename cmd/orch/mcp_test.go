package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/orch-tool/orch/internal/testgit"
)

// TestMCPSession drives orch mcp with the SDK's client over a real stdio
// pipe: the tools and their schemas, an agent's claim, prompt and submit,
// and a refused call (an agent approving) that carries the error code and
// hint.
func TestMCPSession(t *testing.T) {
	privateGitHome(t)
	repo := filepath.Join(t.TempDir(), "repo")
	git := func(dir string, args ...string) string { t.Helper(); return testgit.Git(t, dir, args...) }
	if err := os.MkdirAll(repo, 0o777); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q", "-b", "main")
	git(repo, "commit", "-q", "--allow-empty", "-m", "base")
	orch := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("orch", append([]string{"-C", repo}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("orch %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	orch("init")
	id := orch("new", "Snap fork start")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := exec.Command("orch", "mcp", "-C", repo)
	server.Env = append(os.Environ(), "ORCH_AGENT=agent-a")
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range tools.Tools {
		byName[tool.Name] = tool
	}
	for _, want := range []string{"orch_claim", "orch_prompt", "orch_respond", "orch_submit", "orch_refuse", "orch_approve", "orch_reject"} {
		if byName[want] == nil {
			t.Fatalf("no tool %s among %d", want, len(tools.Tools))
		}
	}
	schema, _ := json.Marshal(byName["orch_respond"].InputSchema)
	for _, want := range []string{`"issue"`, `"status"`, `"enum":["fixed","deferred","rejected"]`, `"commit"`, `"message"`, `"required":["issue","status"]`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("orch_respond's schema lacks %s: %s", want, schema)
		}
	}

	call := func(name string, args map[string]any) (map[string]any, string, bool) {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		doc := map[string]any{}
		_ = json.Unmarshal([]byte(text), &doc)
		return doc, text, res.IsError
	}
	doc, text, isErr := call("orch_claim", map[string]any{"worktree": true, "prompt": true})
	if isErr {
		t.Fatalf("claim: %s", text)
	}
	task := doc["task"].(map[string]any)
	if task["id"] != id || task["claimed_by"] != "agent-a" || !strings.Contains(doc["prompt"].(string), "# Task "+id) {
		t.Fatalf("claim answered %s", text)
	}
	wt := doc["worktree"].(string)
	git(wt, "commit", "-q", "--allow-empty", "-m", "work")

	// The actor is fixed: an agent may not approve, and the refusal says
	// why and what to do, as on the command line.
	if _, text, isErr := call("orch_submit", map[string]any{"id": id, "message": "snaps now"}); isErr {
		t.Fatalf("submit: %s", text)
	}
	doc, text, isErr = call("orch_approve", map[string]any{"id": id})
	if !isErr {
		t.Fatalf("an agent's approve passed: %s", text)
	}
	e := doc["error"].(map[string]any)
	if e["code"] != "refused" || !strings.Contains(e["message"].(string), "agent-a worked on "+id) || e["hint"] == "" {
		t.Errorf("approve refused with %s", text)
	}
	if _, text, isErr := call("orch_show", map[string]any{"id": id, "agent": "lead"}); !isErr || !strings.Contains(text, `takes no parameter \"agent\"`) {
		t.Errorf("a call naming another actor: %s", text)
	}
	// A document goes through stdin (-F -).
	doc, text, isErr = call("orch_reject", map[string]any{"id": id, "document": "Not yet: the start still jumps."})
	if !isErr || !strings.Contains(text, "nobody reviews their own work") {
		t.Errorf("reject by the author: %s", text)
	}
	if out := orch("show", id, "--json"); !strings.Contains(out, `"queue":"provisional"`) {
		t.Errorf("the task moved: %s", out)
	}
}
