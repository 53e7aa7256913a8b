package standin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FindCLI finds an agent CLI where orch's tests install them
// ($ORCH_AGENT_CLI_DIR/.bin, then /tmp/agentcli/node_modules/.bin, then
// PATH), or skips the test loudly, saying how to install it (install).
func FindCLI(t testing.TB, name, install string) string {
	t.Helper()
	var dirs []string
	if d := os.Getenv("ORCH_AGENT_CLI_DIR"); d != "" {
		dirs = append(dirs, filepath.Join(d, ".bin"))
	}
	dirs = append(dirs, "/tmp/agentcli/node_modules/.bin")
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("SKIPPING: no %s CLI in $ORCH_AGENT_CLI_DIR/.bin, /tmp/agentcli/node_modules/.bin or PATH; install it: %s", name, install)
	return ""
}

// ClaudeArgs runs Claude Code once, non-interactively, the prompt on
// stdin, one JSON event a line on stdout, allowed to run touch and git
// (compound commands included) without asking.
var ClaudeArgs = []string{"-p", "--output-format", "stream-json", "--verbose",
	"--allowedTools", "Bash(git:*) Bash(touch:*)"}

// ClaudeEnv points Claude Code at the server at url, with its config in
// configDir, and keeps it from calling anywhere else. Add a private HOME.
func ClaudeEnv(url, configDir string) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + url,
		"ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CONFIG_DIR=" + configDir,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_MAX_RETRIES=1",
		"CLAUDE_CODE_GATEWAY_HINT_HEADERS=1",
	}
}

// CodexArgs runs Codex once, non-interactively, the prompt on stdin, one
// JSON event a line on stdout, with no sandbox (the agent commits).
var CodexArgs = []string{"exec", "--json", "--sandbox", "danger-full-access", "--skip-git-repo-check", "-"}

// CodexEnv is Codex's environment for a CODEX_HOME made by
// WriteCodexConfig. Add a private HOME.
func CodexEnv(codexHome string) []string {
	return []string{"CODEX_HOME=" + codexHome, "STANDIN_API_KEY=test-key"}
}

// WriteCodexConfig writes codexHome/config.toml: a model provider for the
// server at url, chosen as the default.
func WriteCodexConfig(codexHome, url string) error {
	if err := os.MkdirAll(codexHome, 0o777); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "standin"

[model_providers.standin]
name = "standin"
base_url = "%s/v1"
wire_api = "responses"
env_key = "STANDIN_API_KEY"
request_max_retries = 1
stream_max_retries = 1
`, url)
	return os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o666)
}
