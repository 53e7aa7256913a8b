package main

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// helpWidth is the widest line help prints: a terminal of 100 columns
// shows every line whole (TestHelpReadable holds every command to it).
const helpWidth = 100

// verbGroups sorts the verbs of orch --help by who uses them, in the order
// a newcomer meets them. Every command is in one (TestHelpGroups).
var verbGroups = []struct {
	id, title string
	verbs     []string
}{
	{"start", "Getting started:", []string{"init", "new", "list", "show", "board", "serve", "setup", "instructions"}},
	{"agent", "Agents (claim, work, hand in):", []string{"claim", "submit", "pause", "refuse", "heartbeat", "respond", "prompt", "prime", "worktree", "mcp"}},
	{"review", "Reviewers:", []string{"approve", "reject", "review", "diff"}},
	{"lead", "The lead (run the agents, answer what needs a person):", []string{"run", "inbox", "decide", "escalate", "requeue", "unlock", "fail", "reopen", "land", "edit", "log", "logs", "stats"}},
	{"share", "Sharing (other clones, GitHub):", []string{"sync", "pr"}},
	{"maint", "Maintenance:", []string{"check", "doctor", "sweep", "archive", "version", "completion", "help"}},
}

// newHelpCmd is orch help [VERB|TOPIC]: cobra's, but a verb or topic that
// is not one is a usage error (exit 2) that lists the topics, not cobra's
// usage with exit 0.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [verb|topic]",
		Short: "Help about any verb, or a topic: " + topicNames(),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, rest, err := root.Find(args)
			if err != nil || c == nil || len(rest) > 0 {
				return &workflow.UsageError{Msg: fmt.Sprintf("orch help %s: no such verb or topic (topics: %s)", strings.Join(args, " "), topicNames()),
					Hint: "orch --help lists the verbs; orch help TOPIC reads a topic"}
			}
			c.InitDefaultHelpFlag()
			return c.Help()
		},
	}
}

// topicNames lists the help topics, for orch help's own help.
func topicNames() string {
	var names []string
	for _, t := range helpTopics() {
		names = append(names, t.Name())
	}
	return strings.Join(names, ", ")
}

// groupCommands puts root's commands in their groups of verbGroups.
func groupCommands(root *cobra.Command) {
	group := map[string]string{}
	for _, g := range verbGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, v := range g.verbs {
			group[v] = g.id
		}
	}
	for _, c := range root.Commands() {
		if id, ok := group[c.Name()]; ok {
			c.GroupID = id
		}
	}
	root.SetHelpCommandGroupID(group["help"])
	root.SetCompletionCommandGroupID(group["completion"])
}

// wrapHelp makes cobra's help fit helpWidth: the text is cobra's, and a
// line too wide for it (a flag's usage, a long usage line, a sentence that
// the transition table's rule made long) is broken at spaces, its
// continuation indented under where its text starts.
func wrapHelp(root *cobra.Command) {
	// A topic is read with orch help NAME, so the list says so.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(),
		"{{rpad .CommandPath .CommandPathPadding}}", `{{rpad (print "orch help " .Name) 21}}`, 1))
	def := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		out := c.OutOrStdout()
		var b bytes.Buffer
		c.SetOut(&b)
		setTopicText(c)
		def(c, args)
		if extra := helpAddendum(c); extra != "" {
			b.WriteString("\n" + extra)
		}
		c.SetOut(out)
		_, _ = out.Write([]byte(wrapLines(b.String(), helpWidth)))
	})
}

// wrapLines breaks every line of s wider than width at spaces.
func wrapLines(s string, width int) string {
	lines := strings.Split(s, "\n")
	var out []string
	for _, l := range lines {
		if utf8.RuneCountInString(l) <= width {
			out = append(out, l)
			continue
		}
		out = append(out, wrapLine(l, width)...)
	}
	return strings.Join(out, "\n")
}

// wrapLine breaks one line. A line in two columns ("  --flag   usage",
// "  name   what it does") continues under its second column; any other,
// under its own indentation.
func wrapLine(l string, width int) []string {
	indent := len(l) - len(strings.TrimLeft(l, " "))
	hang := indent
	if indent > 0 {
		if i := strings.Index(l[indent:], "   "); i >= 0 {
			rest := l[indent+i:]
			hang = indent + i + len(rest) - len(strings.TrimLeft(rest, " "))
		}
	}
	if hang > width/2 {
		hang = indent
	}
	var out []string
	cur, words := l[:hang], strings.Fields(l[hang:])
	curLen := utf8.RuneCountInString(cur)
	startLen := curLen
	for _, w := range words {
		wl := utf8.RuneCountInString(w)
		if curLen > startLen && curLen+1+wl > width {
			out = append(out, cur)
			cur, curLen = strings.Repeat(" ", hang)+w, hang+wl
			startLen = hang
			continue
		}
		if curLen > startLen {
			cur += " "
			curLen++
		}
		cur += w
		curLen += wl
	}
	return append(out, cur)
}

// helpTopics are orch help's topics that are no verb: each is generated
// from what it describes, so it cannot go stale.
var helpTopicText = map[string]struct {
	short string
	text  func() string
}{
	"config":     {"Every key of config.yaml: its type, default and meaning", configTopic},
	"queues":     {"The queues, and the verbs that move tasks between them", queuesTopic},
	"exit-codes": {"What each exit code of orch means", exitCodesTopic},
}

// helpTopics are the topic commands (cobra's additional help topics: no
// Run, so orch help NAME prints their text).
func helpTopics() []*cobra.Command {
	var out []*cobra.Command
	for _, name := range []string{"config", "queues", "exit-codes"} {
		out = append(out, &cobra.Command{Use: name, Short: helpTopicText[name].short, Annotations: map[string]string{"topic": name}})
	}
	return out
}

// helpAddendum is what a command's help adds to cobra's: a topic's text
// goes first (helpText), and run and land end with their keys of
// config.yaml.
func helpAddendum(c *cobra.Command) string {
	switch c.CommandPath() {
	case "orch run":
		return "Settings (config.yaml's run:, orch help config has every key):\n\n" + configKeysText("run.")
	case "orch land":
		return "Settings (config.yaml's land:, orch help config has every key):\n\n" + configKeysText("land.")
	}
	return ""
}

// setTopicText fills in a topic's text just before its help prints.
func setTopicText(c *cobra.Command) {
	if t, ok := helpTopicText[c.Annotations["topic"]]; ok && c.Long == "" {
		c.Long = t.text()
	}
}

func configTopic() string {
	return `config.yaml lives on the state branch. Edit .orchestrator/config.yaml, then run orch check,
which shows the change and commits it; or run orch edit config. An unknown key is refused
with its line. The keys (docs/configuration.md says more):

` + configKeysText("")
}

// configKeysText lists the keys of config.yaml under prefix, as help text.
func configKeysText(prefix string) string {
	var b strings.Builder
	for _, k := range config.Keys() {
		if !strings.HasPrefix(k.Path, prefix) {
			continue
		}
		what := k.Type
		if k.Default != "" {
			what += ", default " + k.Default
		}
		fmt.Fprintf(&b, "  %s (%s)\n      %s\n", k.Path, what, k.Meaning)
	}
	return b.String()
}

func queuesTopic() string {
	var open, closed []string
	for _, q := range taskfile.Queues {
		if q.Open() {
			open = append(open, string(q))
		} else {
			closed = append(closed, string(q))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "A task is in one queue. Open: %s. Finished: %s.\n\n", strings.Join(open, ", "), strings.Join(closed, ", "))
	b.WriteString("The verbs that move a task, from which queues to which, and who runs each:\n\n")
	for _, t := range workflow.Transitions {
		fmt.Fprintf(&b, "  %s (%s)\n      %s -> %s\n      %s\n", t.Verb, t.Who, t.FromText(), t.ToText(), t.Summary)
	}
	return b.String()
}

func exitCodesTopic() string {
	var b strings.Builder
	b.WriteString("orch's exit codes (with --json, the error's code field says more):\n\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "  %d  %s\n", c.Code, c.Meaning)
	}
	return b.String()
}
