package main

import (
	"bytes"
	"strings"
	"testing"
)

// maxHelpWidth is the widest line help may print: a terminal of 100
// columns shows every line whole.
const maxHelpWidth = 100

// TestHelpReadable runs --help of every command and every help topic, as a
// person would, and fails on a line wider than maxHelpWidth or one that
// cites a document the repository does not ship (the brief, spelt in
// pieces so that this file does not match itself).
func TestHelpReadable(t *testing.T) {
	root := newRootCmd(&globalOptions{io: &streams{}})
	var runs [][]string
	runs = append(runs, []string{"--help"})
	for _, c := range allCommands(root) {
		path := strings.Fields(strings.TrimPrefix(c.CommandPath(), "orch "))
		runs = append(runs, append(path, "--help"))
	}
	topics := 0
	for _, c := range root.Commands() {
		if c.IsAdditionalHelpTopicCommand() {
			runs = append(runs, []string{"help", c.Name()})
			topics++
		}
	}
	if topics != len(helpTopicText) {
		t.Errorf("%d help topics, want %d (config, queues, exit-codes)", topics, len(helpTopicText))
	}
	brief := "DE" + "SIGN"
	for _, args := range runs {
		var out, errb bytes.Buffer
		if code := Main(args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Errorf("orch %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
			continue
		}
		for i, l := range strings.Split(out.String(), "\n") {
			if n := len([]rune(l)); n > maxHelpWidth {
				t.Errorf("orch %s: line %d is %d characters: %q", strings.Join(args, " "), i+1, n, l)
			}
			if strings.Contains(l, brief) {
				t.Errorf("orch %s: line %d cites %s, which the repository does not ship: %q", strings.Join(args, " "), i+1, brief, l)
			}
		}
	}
}

// TestHelpGroups: the root's help sorts every verb into a group of who
// uses it, and opens with no markdown table.
func TestHelpGroups(t *testing.T) {
	var out bytes.Buffer
	if code := Main([]string{"--help"}, strings.NewReader(""), &out, &bytes.Buffer{}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out.String(), "|---") {
		t.Errorf("orch --help holds a markdown table:\n%s", out.String())
	}
	root := newRootCmd(&globalOptions{io: &streams{}})
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() && c.GroupID == "" && c.Name() != "help" && c.Name() != "completion" {
			t.Errorf("orch %s is in no group of orch --help", c.Name())
		}
	}
	for _, g := range root.Groups() {
		if !strings.Contains(out.String(), g.Title) {
			t.Errorf("orch --help does not show the group %q", g.Title)
		}
	}
}

// TestHelpTopics: each topic says what it is generated from, and run and
// land (verbs, so their help is the topic) end with their keys.
func TestHelpTopics(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"help", "config"}, []string{"run.task_timeout (duration, default 45m)", "land.mode", "worktree_dir", "review.max_rejections"}},
		{[]string{"help", "queues"}, []string{"requeue (human)", "needs_continuation", "-> incoming"}},
		{[]string{"help", "exit-codes"}, []string{"  2  usage", "  4  refused by a rule"}},
		{[]string{"help", "run"}, []string{"Usage:", "run.stall_timeout", "run.max_crashes"}},
		{[]string{"help", "land"}, []string{"Usage:", "land.strategy", "land.max_failures"}},
		{[]string{"--help"}, []string{"orch help config", "orch help queues", "orch help exit-codes"}},
	} {
		var out bytes.Buffer
		if code := Main(c.args, strings.NewReader(""), &out, &bytes.Buffer{}); code != 0 {
			t.Errorf("orch %v: exit %d", c.args, code)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("orch %s does not say %q:\n%s", strings.Join(c.args, " "), w, out.String())
			}
		}
	}
}
