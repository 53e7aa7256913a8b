package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mcpListBudget is docs/design.md §11's budget of an agent's context for orch mcp's
// tools/list answer (about 2,000 tokens).
const mcpListBudget = 8 << 10

// TestMCPToolListBudget measures tools/list as an agent's harness gets it
// (the SDK's client over a real stdio pipe), for the default actor: an
// agent under the default config (anyone may review, so the reviewer's
// tools are listed too).
func TestMCPToolListBudget(t *testing.T) {
	repo, _ := mcpRepo(t)
	ctx, session := mcpClient(t, "-C", repo)
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tools/list: %d tools, %d bytes", len(tools.Tools), len(b))
	if len(b) > mcpListBudget {
		for _, tool := range tools.Tools {
			tb, _ := json.Marshal(tool)
			t.Logf("  %s: %d bytes", tool.Name, len(tb))
		}
		t.Errorf("tools/list is %d bytes, over the budget of %d (docs/design.md §11)", len(b), mcpListBudget)
	}
}

// TestMCPReviewerToolsForReviewers: with review.reviewers set, the tools
// of a review are listed to the reviewers only.
func TestMCPReviewerToolsForReviewers(t *testing.T) {
	repo, _ := mcpRepo(t)
	cfg := filepath.Join(repo, ".orchestrator", "config.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), "  reviewers: []", "  reviewers: [agent-r]", 1))
	if err := os.WriteFile(cfg, b, 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("orch", "-C", repo, "check")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("orch check: %v\n%s", err, out)
	}
	names := func(agent string) string {
		ctx, session := mcpClientAs(t, agent, "-C", repo)
		tools, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var l []string
		for _, tool := range tools.Tools {
			l = append(l, tool.Name)
		}
		return strings.Join(l, " ")
	}
	if got := names("agent-a"); strings.Contains(got, "orch_approve") || strings.Contains(got, "orch_review") || !strings.Contains(got, "orch_submit") {
		t.Errorf("agent-a, not a reviewer, is offered: %s", got)
	}
	if got := names("agent-r"); !strings.Contains(got, "orch_approve") || !strings.Contains(got, "orch_reject") {
		t.Errorf("agent-r, a reviewer, is offered: %s", got)
	}
}
