package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/workflow"
)

// The command reference (docs/cli.md), the man pages in docs/man/ and the
// parts of hand-written docs between BEGIN/END GENERATED markers (the exit
// codes in README.md, the agent instructions in docs/agents.md) are
// generated from the commands themselves: `make docs` rewrites them, and
// this test fails when the committed docs differ from what the code
// generates.
var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli.md, docs/man/ and the generated sections of README.md and docs/agents.md")

// manDate is the date the man pages carry: fixed, so that generating them
// twice gives the same bytes.
var manDate = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

const (
	exitBeg = "<!-- BEGIN GENERATED EXIT CODES (make docs) -->"
	exitEnd = "<!-- END GENERATED EXIT CODES -->"
	instBeg = "<!-- BEGIN GENERATED INSTRUCTIONS (make docs) -->"
	instEnd = "<!-- END GENERATED INSTRUCTIONS -->"
	keysBeg = "<!-- BEGIN GENERATED CONFIG KEYS (make docs) -->"
	keysEnd = "<!-- END GENERATED CONFIG KEYS -->"
)

// generatedSection is one part of a hand-written doc that make docs fills
// in: the text between begin and end.
type generatedSection struct{ begin, end, body string }

// generatedDocs are the hand-written docs with generated sections, by path
// from the repository root.
func generatedDocs(root *cobra.Command) map[string][]generatedSection {
	return map[string][]generatedSection{
		"README.md":      {{exitBeg, exitEnd, exitCodeTable()}},
		"docs/agents.md": {{instBeg, instEnd, agentInstructions(root)}},
		// Every key of config.yaml, from its definition (config.Keys).
		"docs/configuration.md": {{keysBeg, keysEnd, configKeyTable()}},
	}
}

// visibleCommands are the runnable ones of allCommands, by command path.
func visibleCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range allCommands(root) {
		if c.Runnable() {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CommandPath() < out[j].CommandPath() })
	return out
}

func flagTable(fs *pflag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		typ, usage := pflag.UnquoteUsage(f)
		if typ != "" {
			name += " " + typ
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(&b, "| `%s` | %s%s |\n", name, strings.ReplaceAll(usage, "|", "\\|"), def)
	})
	if b.Len() == 0 {
		return ""
	}
	return "| flag | meaning |\n|---|---|\n" + b.String()
}

// cliReference renders every command: usage, description, flags, examples.
func cliReference(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("Every command also takes the global flags:\n\n")
	b.WriteString(flagTable(root.PersistentFlags()))
	for _, c := range visibleCommands(root) {
		fmt.Fprintf(&b, "\n### `%s`\n\n", strings.TrimPrefix(c.CommandPath(), "orch "))
		fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
		long := c.Long
		if long == "" {
			long = c.Short
		}
		b.WriteString(strings.TrimSpace(long) + "\n")
		if t := flagTable(c.LocalNonPersistentFlags()); t != "" {
			b.WriteString("\n" + t)
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "\nExamples:\n\n```sh\n%s\n```\n", strings.TrimRight(dedent(c.Example), "\n"))
		}
	}
	return b.String()
}

func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "\n")
}

func exitCodeTable() string {
	var b strings.Builder
	b.WriteString("| code | meaning |\n|---|---|\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "| %d | %s |\n", c.Code, c.Meaning)
	}
	return b.String()
}

// configKeyTable is docs/configuration.md's reference of config.yaml.
func configKeyTable() string {
	var b strings.Builder
	b.WriteString("| key | type | default | meaning |\n|---|---|---|---|\n")
	for _, k := range config.Keys() {
		def := k.Default
		if def != "" && !strings.Contains(def, " ") {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.Path, k.Type, strings.ReplaceAll(def, "|", "\\|"), strings.NewReplacer("|", "\\|", "<", "&lt;", ">", "&gt;").Replace(k.Meaning))
	}
	return b.String()
}

func replaceBetween(doc, begin, end, body string) (string, error) {
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("markers %q ... %q not found", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + body + doc[j:], nil
}

func TestDocsUpToDate(t *testing.T) {
	g := &globalOptions{io: &streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}}
	root := newRootCmd(g)
	ref := cliReference(root)
	// The man pages from a root of their own: manPages rewrites the help.
	man := manPages(t, newRootCmd(&globalOptions{io: g.io}))
	var paths []string
	docs := generatedDocs(root)
	for p := range docs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		path := filepath.Join("..", "..", filepath.FromSlash(p))
		cur, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(cur)
		for _, r := range docs[p] {
			if doc, err = replaceBetween(doc, r.begin, r.end, r.body); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
		if *updateDocs {
			if err := os.WriteFile(path, []byte(doc), 0o666); err != nil {
				t.Fatal(err)
			}
		} else if !bytes.Equal(cur, []byte(doc)) {
			t.Errorf("%s's generated sections differ from the code: run `make docs` and commit the result", p)
		}
	}
	updateSchemas(t, *updateDocs)
	cliPath := filepath.Join("..", "..", "docs", "cli.md")
	cli := "# orch command reference\n\nGenerated by `make docs` from the commands' own help; do not edit by hand.\n\n" +
		"## Queues and transitions\n\n" + workflow.TransitionTable() + "\n## Exit codes\n\n" + exitCodeTable() + "\n## Commands\n\n" + ref
	if *updateDocs {
		if err := os.MkdirAll(filepath.Dir(cliPath), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cliPath, []byte(cli), 0o666); err != nil {
			t.Fatal(err)
		}
		writeManPages(t, man)
		return
	}
	if cur, err := os.ReadFile(cliPath); err != nil || !bytes.Equal(cur, []byte(cli)) {
		t.Errorf("docs/cli.md differs from the code: run `make docs` and commit the result")
	}
	checkManPages(t, man)
}

// agentInstructions is `orch instructions` (the implementer's, with the
// default policy), fenced so that its headings stay inside the example.
func agentInstructions(root *cobra.Command) string {
	md, _ := instructionsMarkdown(root, roleImplementer, config.Default())
	return "````markdown\n" + md + "````\n"
}

var manDir = filepath.Join("..", "..", "docs", "man")

// manPages renders one man page per command (cobra/doc), by file name.
func manPages(t *testing.T, root *cobra.Command) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	root.DisableAutoGenTag = true
	// cobra/doc reads Short and Long as markdown; orch's help is plain
	// text, so that "<id>" or "needs_continuation" must come out as written.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Short, c.Long = manText(c.Short), manText(c.Long)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	header := &doc.GenManHeader{Title: "ORCH", Section: "1", Date: &manDate, Source: "orch", Manual: "orch manual"}
	if err := doc.GenManTree(root, header, dir); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		pages[e.Name()] = b
	}
	return pages
}

// manText turns plain help text into markdown that renders as written:
// paragraphs whose lines are all indented (tables, commands) become code
// blocks, and in the others markdown's special characters are escaped.
func manText(s string) string {
	paras := strings.Split(s, "\n\n")
	for i, p := range paras {
		lines := strings.Split(p, "\n")
		indented := true
		for _, l := range lines {
			if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "  ") {
				indented = false
			}
		}
		for j, l := range lines {
			if indented {
				lines[j] = "    " + l
				continue
			}
			var b strings.Builder
			for _, r := range l {
				if strings.ContainsRune("\\`*_[]<>|#", r) {
					b.WriteByte('\\')
				}
				b.WriteRune(r)
			}
			lines[j] = b.String()
		}
		paras[i] = strings.Join(lines, "\n")
	}
	return strings.Join(paras, "\n\n")
}

// writeManPages replaces docs/man/ by the pages (a page of a removed
// command goes too).
func writeManPages(t *testing.T, pages map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(manDir, 0o777); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
	for _, p := range old {
		if _, ok := pages[filepath.Base(p)]; !ok {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, b := range pages {
		if err := os.WriteFile(filepath.Join(manDir, name), b, 0o666); err != nil {
			t.Fatal(err)
		}
	}
}

// checkManPages fails when docs/man/ differs from the pages: a page
// missing, different or left over from a removed command.
func checkManPages(t *testing.T, pages map[string][]byte) {
	t.Helper()
	var bad []string
	for name, b := range pages {
		if cur, err := os.ReadFile(filepath.Join(manDir, name)); err != nil || !bytes.Equal(cur, b) {
			bad = append(bad, name)
		}
	}
	old, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
	for _, p := range old {
		if _, ok := pages[filepath.Base(p)]; !ok {
			bad = append(bad, filepath.Base(p)+" (no such command)")
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("docs/man differs from the code (%s): run `make docs` and commit the result", strings.Join(bad, ", "))
	}
}
