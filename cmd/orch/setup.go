package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

type setupOptions struct {
	g    *globalOptions
	Role string
	File string
}

// harnesses are the agent harnesses orch setup knows: the file each reads
// its instructions from, relative to the worktree.
var harnesses = map[string]string{
	"claude":  "CLAUDE.md",
	"codex":   "AGENTS.md",
	"cursor":  filepath.Join(".cursor", "rules", "orch.mdc"),
	"generic": "AGENTS.md",
}

func newSetupCmd(g *globalOptions) *cobra.Command {
	o := &setupOptions{g: g}
	cmd := &cobra.Command{
		Use:   "setup claude|codex|cursor|generic [--role R] [--file PATH]",
		Short: "Put orch's instructions where an agent harness reads them",
		Long: `Write the output of orch instructions (for --role, default implementer) into
the file the harness reads, in this worktree: claude CLAUDE.md, codex
AGENTS.md, cursor .cursor/rules/orch.mdc, generic --file (default AGENTS.md).
The instructions go between the lines <!-- BEGIN ORCH ... --> and
<!-- END ORCH -->: a second run replaces only them, and everything else in
the file stays byte for byte. A file with a BEGIN line and no END line is
refused (nothing is written).

For claude, .claude/settings.json also gets a SessionStart hook that runs
orch prime, so that every session starts knowing the agent's task (the
rest of the settings are kept; a file that is not JSON is refused).
Commit the files as you would any other.`,
		Example: `  orch setup claude
  orch setup codex --role reviewer
  orch setup generic --file docs/AGENTS.md --json`,
		Args:      exactArgs(1, "setup claude|codex|cursor|generic [--role R] [--file PATH]"),
		ValidArgs: []string{"claude", "codex", "cursor", "generic"},
		RunE:      func(cmd *cobra.Command, args []string) error { return runSetup(o, cmd.Root(), args[0]) },
	}
	cmd.Flags().StringVar(&o.Role, "role", roleImplementer, "whose instructions (implementer, reviewer, or a role of the config)")
	cmd.Flags().StringVar(&o.File, "file", "", "with generic: the file to write (default AGENTS.md)")
	return cmd
}

// setupAnswer is orch setup's JSON answer.
type setupAnswer struct {
	Harness string      `json:"harness"`
	Role    string      `json:"role"`
	Files   []setupFile `json:"files"`
	Count   int         `json:"count"`
}

type setupFile struct {
	Path   string `json:"path"`
	Action string `json:"action"` // created | updated | unchanged
}

const (
	orchBegin = "<!-- BEGIN ORCH: written by orch setup; orch replaces what is between these lines -->"
	orchEnd   = "<!-- END ORCH -->"
)

func runSetup(o *setupOptions, root *cobra.Command, harness string) error {
	target, ok := harnesses[harness]
	if !ok {
		return &workflow.UsageError{Msg: fmt.Sprintf("%q is not a harness orch knows", harness), Hint: "orch setup claude|codex|cursor|generic"}
	}
	if o.File != "" {
		if harness != "generic" {
			return &workflow.UsageError{Msg: "--file goes with generic only", Hint: "orch setup generic --file PATH"}
		}
		target = o.File
	}
	repo := o.g.discover()
	if repo == nil || repo.WorkTree == "" {
		return &workflow.UsageError{Msg: "orch setup writes into a worktree: run it in one", Hint: "cd into the repository's worktree, then orch setup " + harness}
	}
	md, err := o.instructions(root)
	if err != nil {
		return err
	}
	block := orchBegin + "\n" + strings.TrimRight(md, "\n") + "\n" + orchEnd + "\n"
	path := target
	if !filepath.IsAbs(path) {
		path = filepath.Join(repo.WorkTree, path)
	}
	var files []setupFile
	head := ""
	if harness == "cursor" {
		// A Cursor rule file says when it applies.
		head = "---\ndescription: How to work with orch, this repository's task queue\nalwaysApply: true\n---\n"
	}
	action, err := writeBlock(path, head, block)
	if err != nil {
		return err
	}
	files = append(files, setupFile{Path: relTo(repo.WorkTree, path), Action: action})
	if harness == "claude" {
		settings := filepath.Join(repo.WorkTree, ".claude", "settings.json")
		action, err := addSessionHook(settings, "orch prime")
		if err != nil {
			return err
		}
		files = append(files, setupFile{Path: relTo(repo.WorkTree, settings), Action: action})
	}
	if o.g.JSON {
		return o.g.writeJSON(setupAnswer{harness, o.Role, files, len(files)})
	}
	for _, f := range files {
		fmt.Fprintf(o.g.io.Out, "%s: %s\n", f.Path, f.Action)
	}
	return nil
}

// instructions is orch instructions --role for this repository's config.
func (o *setupOptions) instructions(root *cobra.Command) (string, error) {
	var out bytes.Buffer
	io := *o.g.io
	io.Out = &out
	g := *o.g
	g.io, g.JSON = &io, false
	if err := runInstructions(&instructionsOptions{g: &g, Role: o.Role}, root); err != nil {
		return "", err
	}
	return out.String(), nil
}

// writeBlock puts block into the file at path: replacing the lines from
// orchBegin to orchEnd, or appended after everything else. The rest of the
// file is kept byte for byte. head starts a file orch creates.
func writeBlock(path, head, block string) (string, error) {
	cur, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var next string
	action := "updated"
	s := string(cur)
	switch i, j := strings.Index(s, "<!-- BEGIN ORCH"), strings.Index(s, orchEnd); {
	case cur == nil:
		next, action = head+block, "created"
	case i >= 0 && j > i:
		end := j + len(orchEnd)
		if end < len(s) && s[end] == '\n' {
			end++
		}
		next = s[:i] + block + s[end:]
	case i >= 0:
		line := strings.Count(s[:i], "\n") + 1
		return "", &workflow.UsageError{Msg: fmt.Sprintf("%s:%d: a BEGIN ORCH line without an END ORCH line after it; nothing was written", path, line), Hint: "remove the line, or add " + orchEnd + " where orch's part ends, then run orch setup again"}
	default:
		switch {
		case s == "" || strings.HasSuffix(s, "\n\n"):
		case strings.HasSuffix(s, "\n"):
			s += "\n"
		default:
			s += "\n\n"
		}
		next = s + block
	}
	if next == string(cur) {
		return "unchanged", nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return "", err
	}
	return action, writeFileAtomic(path, []byte(next))
}

// addSessionHook adds a Claude Code SessionStart hook running command to
// the settings file, keeping every other setting.
func addSessionHook(path, command string) (string, error) {
	cur, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	settings := map[string]any{}
	if len(bytes.TrimSpace(cur)) > 0 {
		if err := json.Unmarshal(cur, &settings); err != nil {
			return "", &workflow.UsageError{Msg: fmt.Sprintf("%s is not JSON (%v); nothing was written", path, err), Hint: "fix it, then run orch setup claude again"}
		}
	}
	hooks, _ := settings["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	starts, _ := hooks["SessionStart"].([]any)
	for _, s := range starts {
		m, _ := s.(map[string]any)
		inner, _ := m["hooks"].([]any)
		for _, h := range inner {
			if hm, _ := h.(map[string]any); hm["command"] == command {
				return "unchanged", nil
			}
		}
	}
	starts = append(starts, map[string]any{"hooks": []any{map[string]any{"type": "command", "command": command}}})
	hooks["SessionStart"] = starts
	settings["hooks"] = hooks
	out, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return "", err
	}
	action := "updated"
	if cur == nil {
		action = "created"
	}
	return action, writeFileAtomic(path, append(out, '\n'))
}

// writeFileAtomic replaces path by rename, so that a reader never sees half
// a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".orch-setup-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if fi, err := os.Stat(path); err == nil {
		_ = os.Chmod(tmp.Name(), fi.Mode().Perm())
	} else {
		_ = os.Chmod(tmp.Name(), 0o644) // CreateTemp's 0600 would hide it from the team's tools
	}
	return os.Rename(tmp.Name(), path)
}

func relTo(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return p
}
