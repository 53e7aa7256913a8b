package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	"github.com/orch-tool/orch/internal/testgit"
)

// TestMCPSession drives orch mcp with the SDK's client over a real stdio
// pipe: the tools and their schemas, an agent's claim, prompt and submit,
// and a refused call (an agent approving) that carries the error code and
// hint.
func TestMCPSession(t *testing.T) {
	repo, orch := mcpRepo(t)
	git := func(dir string, args ...string) string { t.Helper(); return testgit.Git(t, dir, args...) }
	id := orch("new", "Snap fork start")

	ctx, session := mcpClient(t, "-C", repo)

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
		return mcpCallTool(t, ctx, session, name, args)
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

// mcpRepo makes a repository with orch set up, and a function that runs
// orch in it and returns its stdout.
func mcpRepo(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	privateGitHome(t)
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(repo, 0o777); err != nil {
		t.Fatal(err)
	}
	testgit.Git(t, repo, "init", "-q", "-b", "main")
	testgit.Git(t, repo, "commit", "-q", "--allow-empty", "-m", "base")
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
	return repo, orch
}

// mcpClient starts orch mcp with args as agent-a and connects the SDK's
// client to it over a real stdio pipe.
func mcpClient(t *testing.T, args ...string) (context.Context, *mcp.ClientSession) {
	t.Helper()
	return mcpClientAs(t, "agent-a", args...)
}

// mcpClientAs is mcpClient as another agent.
func mcpClientAs(t *testing.T, agent string, args ...string) (context.Context, *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	server := exec.Command("orch", append([]string{"mcp"}, args...)...)
	server.Env = append(os.Environ(), "ORCH_AGENT="+agent)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { session.Close() })
	return ctx, session
}

// mcpCallTool calls a tool and returns its answer (the JSON text, parsed
// when it parses), the text, and whether it is a tool error.
func mcpCallTool(t *testing.T, ctx context.Context, session *mcp.ClientSession, name string, args map[string]any) (map[string]any, string, bool) {
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

// TestMCPValuesAreNotFlags: a tool's positional values (an id) reach the
// verb as arguments, never as flags or a subcommand, whatever they start
// with; a flag's value is a value, even "--help".
func TestMCPValuesAreNotFlags(t *testing.T) {
	repo, orch := mcpRepo(t)
	id := orch("new", "Snap fork start")
	ctx, session := mcpClient(t, "-C", repo)
	for _, c := range []struct{ tool, id string }{
		{"orch_show", "--help"},
		{"orch_show", "-h"},
		{"orch_show", "--state-branch=zzz"},
		{"orch_worktree", "prune"},
		{"orch_approve", "--help"},
		{"orch_escalate", "--json=queue"},
	} {
		doc, text, isErr := mcpCallTool(t, ctx, session, c.tool, map[string]any{"id": c.id})
		e, _ := doc["error"].(map[string]any)
		if !isErr || e == nil || e["code"] != "not_found" || !strings.Contains(text, c.id) {
			t.Errorf("%s %q answered (error %v): %s", c.tool, c.id, isErr, text)
		}
	}
	if out := testgit.Git(t, repo, "branch", "--list", "zzz"); out != "" {
		t.Errorf("a branch zzz was made: %s", out)
	}
	// A flag's value that looks like a flag is the value.
	doc, text, isErr := mcpCallTool(t, ctx, session, "orch_escalate", map[string]any{"id": id, "message": "--help"})
	results, _ := doc["results"].([]any)
	var first map[string]any
	if len(results) == 1 {
		first, _ = results[0].(map[string]any)
	}
	if isErr || first == nil || first["to"] != "escalated" {
		t.Fatalf("escalate with the message --help: %s", text)
	}
	if out := orch("inbox"); !strings.Contains(out, "--help") {
		t.Errorf("the escalation's message is not --help: %s", out)
	}
}

// TestMCPStateBranch: every call runs with the global options orch mcp
// was started with: here --state-branch, with tasks on both branches.
func TestMCPStateBranch(t *testing.T) {
	repo, orch := mcpRepo(t)
	onOrch := orch("new", "On orch")
	orch("--state-branch", "team/queue", "init")
	onTeam := orch("--state-branch", "team/queue", "new", "On the team queue")
	ctx, session := mcpClient(t, "--state-branch", "team/queue", "-C", repo)

	doc, text, isErr := mcpCallTool(t, ctx, session, "orch_list", nil)
	if isErr || doc["count"] != float64(1) || !strings.Contains(text, onTeam) {
		t.Errorf("list on team/queue: %s", text)
	}
	if _, text, isErr := mcpCallTool(t, ctx, session, "orch_show", map[string]any{"id": onTeam}); isErr {
		t.Errorf("show %s: %s", onTeam, text)
	}
	if _, text, isErr := mcpCallTool(t, ctx, session, "orch_show", map[string]any{"id": onOrch}); !isErr || !strings.Contains(text, "not_found") {
		t.Errorf("show %s, a task of orch: %s", onOrch, text)
	}
}

// TestMCPCallTakesEveryGlobal: a call runs with every global option the
// server was started with, a global added later included.
func TestMCPCallTakesEveryGlobal(t *testing.T) {
	server := newRootCmd(&globalOptions{io: &streams{}})
	var args []string
	server.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "json" || f.Name == "jq" {
			return // orch mcp has no JSON answer: it refuses them
		}
		v := "value-of-" + f.Name
		switch f.Value.Type() {
		case "bool":
			v = "true"
		case "int":
			v = "7"
		case "duration":
			v = "7s"
		}
		args = append(args, "--"+f.Name+"="+v)
	})
	if err := server.PersistentFlags().Parse(args); err != nil {
		t.Fatal(err)
	}
	call := newRootCmd(&globalOptions{io: &streams{}})
	if err := call.PersistentFlags().Parse(mcpGlobals(server)); err != nil {
		t.Fatal(err)
	}
	server.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if got := call.PersistentFlags().Lookup(f.Name); got.Value.String() != f.Value.String() {
			t.Errorf("the server has --%s=%s, a call --%s=%s", f.Name, f.Value, f.Name, got.Value)
		}
	})
}

// mcpWire is orch mcp over a real pipe, spoken to in raw JSON-RPC lines:
// the SDK's client sends nothing malformed and waits for each answer.
type mcpWire struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string // stdout, line by line; closed at its end
	stderr bytes.Buffer
}

const mcpInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}`

func startMCPWire(t *testing.T, args ...string) *mcpWire {
	t.Helper()
	w := &mcpWire{t: t, cmd: exec.Command("orch", append([]string{"mcp"}, args...)...), lines: make(chan string, 1000)}
	w.cmd.Env = append(os.Environ(), "ORCH_AGENT=agent-a")
	w.cmd.Stderr = &w.stderr
	var err error
	if w.in, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			w.cmd.Process.Kill()
			w.cmd.Wait()
		}
	})
	return w
}

// send writes lines in one write.
func (w *mcpWire) send(lines ...string) {
	w.t.Helper()
	if _, err := io.WriteString(w.in, strings.Join(lines, "\n")+"\n"); err != nil {
		w.t.Fatal(err)
	}
}

// read returns the next n answers.
func (w *mcpWire) read(n int) []map[string]any {
	w.t.Helper()
	var answers []map[string]any
	timeout := time.After(60 * time.Second)
	for len(answers) < n {
		select {
		case line, ok := <-w.lines:
			if !ok {
				w.t.Fatalf("orch mcp closed stdout after %d answers of %d: %v\nstderr: %s", len(answers), n, answers, w.stderr.String())
			}
			a := map[string]any{}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				w.t.Fatalf("an answer that is not a JSON object: %s", line)
			}
			answers = append(answers, a)
		case <-timeout:
			w.t.Fatalf("no answer after %d of %d: %v", len(answers), n, answers)
		}
	}
	return answers
}

// hangUp closes stdin and returns every answer orch mcp wrote after, and
// how it exited.
func (w *mcpWire) hangUp() ([]map[string]any, error) {
	w.t.Helper()
	w.in.Close()
	var answers []map[string]any
	for line := range w.lines {
		a := map[string]any{}
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			w.t.Fatalf("an answer that is not a JSON object: %s", line)
		}
		answers = append(answers, a)
	}
	return answers, w.cmd.Wait()
}

// mcpToolCall is the line of a tools/call.
func mcpToolCall(id int, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// mcpByID indexes answers by id ("<nil>" for null).
func mcpByID(answers []map[string]any) map[string]map[string]any {
	m := map[string]map[string]any{}
	for _, a := range answers {
		m[fmt.Sprint(a["id"])] = a
	}
	return m
}

// mcpText is a tools/call answer's text.
func mcpText(a map[string]any) string {
	res, _ := a["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return fmt.Sprint(a)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}

// TestMCPMalformedLines: a line that is not JSON, or not a request, is
// answered with the JSON-RPC error and the server goes on serving.
func TestMCPMalformedLines(t *testing.T) {
	repo, _ := mcpRepo(t)
	w := startMCPWire(t, "-C", repo)
	w.send(mcpInit)
	w.read(1)
	for _, c := range []struct {
		line string
		code float64
		id   any
	}{
		{`{garbage`, -32700, nil},
		{`[1,2]`, -32600, nil},
		{`[]`, -32600, nil},
		{`42`, -32600, nil},
		{`{"jsonrpc":"2.0","id":7,"method":17}`, -32600, float64(7)},
		{`{"jsonrpc":"1.0","id":"x","method":"tools/list"}`, -32600, "x"},
	} {
		w.send(c.line)
		a := w.read(1)[0]
		e, _ := a["error"].(map[string]any)
		if e == nil || e["code"] != c.code || a["id"] != c.id {
			t.Errorf("%s answered %v, want the error %v with the id %v", c.line, a, c.code, c.id)
		}
	}
	w.send(mcpToolCall(1, "orch_list", nil))
	if a := w.read(1)[0]; a["id"] != float64(1) || !strings.Contains(mcpText(a), `"count":0`) {
		t.Errorf("a call after the malformed lines: %v", a)
	}
	if answers, err := w.hangUp(); err != nil || len(answers) != 0 {
		t.Errorf("hang-up: %v, answers %v\nstderr: %s", err, answers, w.stderr.String())
	}
}

// TestMCPAnswersAllBeforeExit: requests written just before stdin closes
// are all answered before the server exits 0.
func TestMCPAnswersAllBeforeExit(t *testing.T) {
	repo, orch := mcpRepo(t)
	id := orch("new", "Snap fork start")
	w := startMCPWire(t, "-C", repo)
	lines := []string{mcpInit}
	for i := 1; i <= 6; i++ {
		lines = append(lines, mcpToolCall(i, "orch_show", map[string]any{"id": id}))
	}
	lines = append(lines, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	w.send(lines...)
	answers, err := w.hangUp()
	if err != nil {
		t.Errorf("orch mcp: %v\nstderr: %s", err, w.stderr.String())
	}
	byID := mcpByID(answers)
	for i := 0; i <= 7; i++ {
		if byID[fmt.Sprint(i)] == nil {
			t.Errorf("no answer to %d among %d", i, len(answers))
		}
	}
}

// TestMCPCallsRunInOrder: calls sent back to back run in the order they
// came, as the command line would run them: a show sent after an
// escalate sees the task escalated.
func TestMCPCallsRunInOrder(t *testing.T) {
	repo, orch := mcpRepo(t)
	const pairs = 20
	var ids []string
	for i := range pairs {
		ids = append(ids, orch("new", fmt.Sprintf("Task %d", i)))
	}
	w := startMCPWire(t, "-C", repo)
	w.send(mcpInit)
	w.read(1)
	// A long message (just under taskfile.MaxText, written with \u
	// escapes) takes the escalate longer to decode than the short show
	// after it: calls that merely start in order can finish out of it.
	message := "Which wins? " + strings.Repeat("é", 32000)
	var lines []string
	for i, id := range ids {
		escalate := mcpToolCall(2*i+1, "orch_escalate", map[string]any{"id": id, "message": message})
		lines = append(lines,
			strings.ReplaceAll(escalate, "é", `\u00e9`),
			mcpToolCall(2*i+2, "orch_show", map[string]any{"id": id}))
	}
	w.send(lines...)
	byID := mcpByID(w.read(2 * pairs))
	for i, id := range ids {
		if text := mcpText(byID[fmt.Sprint(2*i+1)]); !strings.Contains(text, `"to":"escalated"`) {
			t.Errorf("escalate %s failed: %.300s", id, text)
		}
		if text := mcpText(byID[fmt.Sprint(2*i+2)]); !strings.Contains(text, `"queue":"escalated"`) {
			t.Errorf("show %s, sent after its escalate, ran before it: %.200s", id, text)
		}
	}
	w.hangUp()
}

// TestMCPReadLine: lines longer than the reader's buffer are read whole,
// one longer than the limit is dropped to its end (and said so), and the
// next is read.
func TestMCPReadLine(t *testing.T) {
	long, tooLong := strings.Repeat("a", 40), strings.Repeat("b", 70)
	r := bufio.NewReaderSize(strings.NewReader(long+"\r\n"+tooLong+"\n\n"+`{"x":1}`), 16)
	for _, want := range []struct {
		line    string
		tooLong bool
		err     error
	}{{long, false, nil}, {"", true, nil}, {"", false, nil}, {`{"x":1}`, false, io.EOF}} {
		line, tooLong, err := mcpReadLine(r, 50)
		if string(line) != want.line || tooLong != want.tooLong || err != want.err {
			t.Errorf("read %q, %v, %v; want %q, %v, %v", line, tooLong, err, want.line, want.tooLong, want.err)
		}
	}
}
