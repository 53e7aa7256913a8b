// Package harness reads the output of the coding-agent CLIs orch runs
// (Claude Code's stream-json, Codex's exec --json, plain text).
package harness
