package main

import (
	"bytes"
	"fmt"
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
the file stays byte for byte. Marker lines inside a fenced code block (` + "```" + `
or ~~~) are an example, not orch's block. A file with a BEGIN line and no END
line, or one that ends in a code fence never closed, is refused (exit 2).

For claude, .claude/settings.json also gets a SessionStart hook that runs
orch prime, so that every session starts knowing the agent's task. orch
inserts the hook into the text, indented as the file is: every other byte
stays as written (key order, numbers, escapes). A file that is not a JSON
object, or whose "hooks" is not an object or "SessionStart" not an array, is
refused (exit 2), naming the line and column.

A symbolic link inside the worktree is written through: its target changes,
the link stays. A link that leads out of the worktree is refused (exit 4):
the write would change a file other projects share, which git status here
never shows. A file that would change but is read-only is refused too (exit
4; chmod u+w lets orch write it). A file that needs no change is not written;
a changed one is replaced at once (a new file renamed over it), keeping its
mode. A refused run writes no file. Commit the files as you would any other.`,
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
	head := ""
	if harness == "cursor" {
		// A Cursor rule file says when it applies.
		head = "---\ndescription: How to work with orch, this repository's task queue\nalwaysApply: true\n---\n"
	}
	// Every file is read and its new text made before any is written, so
	// that a refused file leaves the others as they were too.
	instr, err := openSetupFile(repo.WorkTree, path)
	if err != nil {
		return err
	}
	next, err := withBlock(instr.real, instr.cur, instr.exists, head, block)
	if err != nil {
		return err
	}
	if err := instr.change(next); err != nil {
		return err
	}
	edits := []*setupFileEdit{instr}
	if harness == "claude" {
		settings, err := openSetupFile(repo.WorkTree, filepath.Join(repo.WorkTree, ".claude", "settings.json"))
		if err != nil {
			return err
		}
		next, err := withSessionHook(settings.real, settings.cur, "orch prime")
		if err != nil {
			return err
		}
		if err := settings.change(next); err != nil {
			return err
		}
		edits = append(edits, settings)
	}
	var files []setupFile
	for _, e := range edits {
		if err := e.write(); err != nil {
			return err
		}
		files = append(files, setupFile{Path: e.shown, Action: e.action})
	}
	if o.g.JSON {
		return o.g.out().writeJSON(setupAnswer{harness, o.Role, files, len(files)})
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

// withBlock is the text of the file at path (cur; exists says whether there
// is one) with block in it: replacing the lines from orchBegin to orchEnd,
// or appended after everything else. The rest of the file is kept byte for
// byte. head starts a file orch creates.
func withBlock(path string, cur []byte, exists bool, head, block string) ([]byte, error) {
	if !exists {
		return []byte(head + block), nil
	}
	s := string(cur)
	found, err := findBlock(s)
	if err != nil {
		return nil, &workflow.UsageError{Msg: fmt.Sprintf("%s:%d: %s; nothing was written", path, err.line, err.what), Hint: err.hint}
	}
	if found.ok {
		return []byte(s[:found.start] + block + s[found.end:]), nil
	}
	switch {
	case s == "" || strings.HasSuffix(s, "\n\n"):
	case strings.HasSuffix(s, "\n"):
		s += "\n"
	default:
		s += "\n\n"
	}
	return []byte(s + block), nil
}

// orchBlock is where orch's block is in a file: the bytes [start, end),
// from its BEGIN line to the end of its END line.
type orchBlock struct {
	start, end int
	ok         bool
}

// blockError is a file in which orch cannot tell where its block goes.
type blockError struct {
	line       int
	what, hint string
}

// findBlock finds the live BEGIN and END lines in the Markdown text s: lines
// that start with the marker, outside every fenced code block. Markers in a
// fence are an example someone wrote (such as a README that shows the
// block), not orch's.
func findBlock(s string) (orchBlock, *blockError) {
	var (
		fence               codeFence // the fence the line is in; zero outside
		begin, beginLine    = -1, 0
		line, off, lineNext int
	)
	for ; off < len(s); off = lineNext {
		line++
		lineNext = len(s)
		if i := strings.IndexByte(s[off:], '\n'); i >= 0 {
			lineNext = off + i + 1
		}
		text := strings.TrimSuffix(strings.TrimSuffix(s[off:lineNext], "\n"), "\r")
		if fence.n > 0 {
			if fence.closedBy(text) {
				fence = codeFence{}
			}
			continue
		}
		if fence = openingFence(text); fence.n > 0 {
			fence.line = line
			continue
		}
		switch {
		case begin < 0 && strings.HasPrefix(text, "<!-- BEGIN ORCH"):
			begin, beginLine = off, line
		case begin >= 0 && strings.TrimRight(text, " \t") == orchEnd:
			return orchBlock{begin, lineNext, true}, nil
		}
	}
	if begin >= 0 {
		return orchBlock{}, &blockError{beginLine, "a BEGIN ORCH line without an END ORCH line after it", "remove the line, or add " + orchEnd + " where orch's part ends, then run orch setup again"}
	}
	if fence.n > 0 {
		// A block appended here would be inside the code: not live, and
		// appended again by every run.
		return orchBlock{}, &blockError{fence.line, "a code fence opened here is never closed, so orch's block cannot go after it", "close the fence (a line of " + strings.Repeat(string(fence.char), fence.n) + "), then run orch setup again"}
	}
	return orchBlock{}, nil
}

// codeFence is the opening line of a CommonMark fenced code block: n (at
// least 3) backticks or tildes.
type codeFence struct {
	char byte
	n    int
	line int
}

// openingFence is the fence that line opens, or the zero codeFence: up to 3
// spaces, 3 or more backticks or tildes, and an info string (which may not
// hold a backtick after backticks).
func openingFence(line string) codeFence {
	rest := strings.TrimLeft(line, " ")
	if len(line)-len(rest) > 3 || len(rest) < 3 || (rest[0] != '`' && rest[0] != '~') {
		return codeFence{}
	}
	n := len(rest) - len(strings.TrimLeft(rest, rest[:1]))
	if n < 3 || (rest[0] == '`' && strings.Contains(rest[n:], "`")) {
		return codeFence{}
	}
	return codeFence{char: rest[0], n: n}
}

// closedBy says whether line closes the fence: up to 3 spaces, at least as
// many of the same character, then only spaces and tabs.
func (f codeFence) closedBy(line string) bool {
	rest := strings.TrimLeft(line, " ")
	if len(line)-len(rest) > 3 {
		return false
	}
	marks := strings.TrimLeft(rest, string(f.char))
	return len(rest)-len(marks) >= f.n && strings.Trim(marks, " \t") == ""
}
