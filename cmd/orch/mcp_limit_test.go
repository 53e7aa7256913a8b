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

// TestMCPTextLimit: a tool's text argument has the limit of every text
// (taskfile.MaxText), though no command line bounds it: a 5 MiB escalate
// message, over a real stdio pipe, is refused as a tool error whose text is
// the JSON error envelope, and the task file, the inbox and the state
// branch stay as they were.
func TestMCPTextLimit(t *testing.T) {
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
		out, err := exec.Command("orch", append([]string{"-C", repo}, args...)...).Output()
		if err != nil {
			t.Fatalf("orch %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	orch("init")
	id := orch("new", "Snap fork start")
	files, _ := filepath.Glob(filepath.Join(repo, ".orchestrator", "tasks", id+"-*.md"))
	if len(files) != 1 {
		t.Fatalf("task files: %v", files)
	}
	before, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	tip := git(repo, "rev-parse", "orch")

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

	message := strings.Repeat("The build log says: connection refused.\n", (5<<20)/40)
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "orch_escalate", Arguments: map[string]any{"id": id, "message": message}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError {
		t.Fatalf("a %d-byte message was taken: %.200s", len(message), text)
	}
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Error         struct {
			Code, Message, Hint string
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &doc); err != nil || doc.SchemaVersion == 0 {
		t.Fatalf("the tool error is not the JSON envelope (%v): %.200s", err, text)
	}
	if doc.Error.Code != "text_too_long" || doc.Error.Message != "the message (-m) is 5242880 bytes; the limit is 65536 bytes (64 KiB)" ||
		!strings.Contains(doc.Error.Hint, "commit a long log or listing as a file") {
		t.Errorf("refused with %s", text)
	}

	after, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the task file changed:\n%s", after)
	}
	if now := git(repo, "rev-parse", "orch"); now != tip {
		t.Errorf("the state branch moved: %s -> %s", tip, now)
	}
	if msgs, _ := filepath.Glob(filepath.Join(repo, ".orchestrator", "messages", "*.md")); len(msgs) > 0 {
		t.Errorf("an inbox message was written: %v", msgs)
	}
}
