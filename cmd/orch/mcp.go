package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/workflow"
)

type mcpOptions struct {
	g *globalOptions
}

func newMCPCmd(g *globalOptions) *cobra.Command {
	o := &mcpOptions{g: g}
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve orch's verbs to an agent over the Model Context Protocol (stdio)",
		Long: `Run a Model Context Protocol server on stdin/stdout for one agent. Its tools
are orch's verbs: for the agent claim, show, prompt, prime, list, worktree,
diff, respond, submit, pause, refuse and escalate; for a reviewer review,
approve and reject, listed only when the agent may review (review.reviewers
names it, or names nobody). A tool takes what an agent uses of the verb (its
arguments and main flags, each described by the flag's usage), and its
description is the verb's summary: the whole list stays under 8 KB of an
agent's context (docs/design.md §11; orch prime and orch instructions teach the
loop). A call runs the verb exactly as the command line does (same rules,
same authority, same answer as --json); a refused call is a tool error whose
text is the JSON error envelope (code, message, hint).

The actor is fixed when the server starts: --agent, else ORCH_AGENT (one of
them is required), and it is an agent for every call; a tool takes no
other name. The repository is the one around -C DIR (default: where it
starts), and every call runs with the global options the server started
with (--state-branch too). Calls run one at a time, in the order they
come, as a shell runs commands; each is answered, also when stdin closes
behind it. A line that is not a JSON-RPC message is answered with the
JSON-RPC error (-32700, -32600) and the server goes on.`,
		Example: `  ORCH_AGENT=agent-a orch mcp
  orch mcp --agent agent-a -C ~/src/app`,
		Args: exactArgs(0, "mcp"),
		RunE: func(cmd *cobra.Command, args []string) error { return runMCP(o, cmd.Root()) },
	}
}

// mcpArg is a positional argument of a verb, as a tool parameter.
type mcpArg struct {
	Name, Desc string
	Required   bool
	Enum       []string
}

// mcpVerbs are the verbs served as tools, with their positional arguments
// and the flags a tool takes (each described by the flag's own usage). doc
// is the -F flag a "document" parameter feeds through stdin. An agent's
// harness pays for every byte of the tool list in context on every session
// (docs/design.md §11: 8 KB): a tool's description is the verb's one-line summary
// (the agent learns the loop from orch prime and orch instructions), and it
// takes what an agent uses of the verb, not every flag.
var mcpVerbs = []struct {
	Verb     string
	Args     []mcpArg
	Flags    []string
	Doc      string
	Reviewer bool
}{
	{Verb: "claim", Flags: []string{"task", "role", "worktree", "prompt"}},
	{Verb: "prime"},
	{Verb: "show", Args: []mcpArg{mcpID}},
	{Verb: "prompt", Args: []mcpArg{mcpID}, Flags: []string{"role"}},
	{Verb: "list", Flags: []string{"queue", "ready"}},
	{Verb: "worktree", Args: []mcpArg{mcpID}},
	{Verb: "diff", Args: []mcpArg{mcpID}, Flags: []string{"since-rejection", "stat"}},
	{Verb: "respond", Args: []mcpArg{mcpID, {Name: "issue", Desc: "e.g. R1.2", Required: true}, {Name: "status", Required: true, Enum: []string{"fixed", "deferred", "rejected"}}},
		Flags: []string{"message", "commit"}},
	{Verb: "submit", Args: []mcpArg{mcpID}, Flags: []string{"message", "pr"}},
	{Verb: "pause", Args: []mcpArg{mcpID}, Flags: []string{"message"}},
	{Verb: "refuse", Args: []mcpArg{mcpID}, Doc: "file"},
	{Verb: "escalate", Args: []mcpArg{mcpIDRequired}, Flags: []string{"message"}},
	{Verb: "review", Args: []mcpArg{mcpIDRequired}, Doc: "file", Reviewer: true},
	{Verb: "approve", Args: []mcpArg{mcpIDRequired}, Flags: []string{"message"}, Reviewer: true},
	{Verb: "reject", Args: []mcpArg{mcpIDRequired}, Flags: []string{"message"}, Doc: "file", Reviewer: true},
}

// The task argument of the tools.
var (
	mcpID         = mcpArg{Name: "id", Desc: "task ID; default: this worktree's"}
	mcpIDRequired = mcpArg{Name: "id", Desc: "task ID", Required: true}
)

// mcpSkipFlags are flags a tool does not take: the server fixes the actor,
// the repository and the answer's form.
var mcpSkipFlags = map[string]bool{"help": true, "agent": true, "json": true, "jq": true, "dir": true, "state-branch": true}

func runMCP(o *mcpOptions, root *cobra.Command) error {
	if o.g.agentSource != "--agent" && o.g.agentSource != "ORCH_AGENT" {
		return &workflow.UsageError{Msg: "orch mcp serves one agent: name it", Hint: "orch mcp --agent NAME, or ORCH_AGENT=NAME orch mcp"}
	}
	// Every call is the agent's: the same signal as an agent's harness
	// gives (docs/design.md §5.1).
	os.Setenv("ORCH_AGENT", o.g.Agent)
	globals := mcpGlobals(root)
	reviewer := o.mayReview()
	server := mcp.NewServer(&mcp.Implementation{Name: "orch", Version: version}, nil)
	for _, v := range mcpVerbs {
		if v.Reviewer && !reviewer {
			continue // listed only to an agent that may review (docs/design.md §10)
		}
		cmd, _, err := root.Find([]string{v.Verb})
		if err != nil || cmd == root {
			return fmt.Errorf("mcp: no verb %s", v.Verb)
		}
		schema, flags := mcpSchema(cmd, v.Args, v.Flags, v.Doc)
		desc := cmd.Short
		if v.Reviewer {
			desc = "For reviewers. " + desc
		}
		verb, args, doc := v.Verb, v.Args, v.Doc
		server.AddTool(&mcp.Tool{Name: "orch_" + verb, Description: desc, InputSchema: schema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				// Calls come one at a time, in order (mcpStdio).
				return mcpCall(globals, verb, args, doc, flags, req.Params.Arguments), nil
			})
	}
	return server.Run(context.Background(), mcpStdio{os.Stdin, os.Stdout})
}

// mcpGlobals are the global options orch mcp was started with (-C,
// --state-branch, --agent, ...), as arguments: every call runs with them,
// as every command an agent's shell runs in one place would. They are
// read off the flags themselves so that a global added later reaches the
// calls too.
func mcpGlobals(root *cobra.Command) []string {
	var args []string
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Changed {
			return
		}
		if s, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range s.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}

// mayReview says whether the agent may review under config.yaml as the
// server starts: review.reviewers (and run.reviewers) name who reviews, or
// anyone may. Without a repository orch has set up, the reviewer's tools
// are listed (their calls say what is missing).
func (o *mcpOptions) mayReview() bool {
	opts := o.g.engineOptions(false)
	opts.NoReconcile, opts.Verb = true, ""
	e, err := workflow.Open(opts)
	if err != nil {
		return true
	}
	defer e.Close()
	return e.Config.IsReviewer(o.g.Agent)
}

// mcpSchema builds a tool's input schema from the verb's positional
// arguments and its own flags.
func mcpSchema(cmd *cobra.Command, args []mcpArg, served []string, doc string) (map[string]any, map[string]*pflag.Flag) {
	props := map[string]any{}
	var required []string
	for _, a := range args {
		p := map[string]any{"type": "string"}
		if a.Desc != "" {
			p["description"] = a.Desc
		}
		if len(a.Enum) > 0 {
			p["enum"] = a.Enum
		}
		props[a.Name] = p
		if a.Required {
			required = append(required, a.Name)
		}
	}
	flags := map[string]*pflag.Flag{}
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || mcpSkipFlags[f.Name] || f.Name == doc || !slices.Contains(served, f.Name) {
			return
		}
		p := map[string]any{"description": f.Usage}
		switch f.Value.Type() {
		case "bool":
			p["type"] = "boolean"
		case "int":
			p["type"] = "integer"
		case "stringArray", "stringSlice":
			p["type"] = "array"
			p["items"] = map[string]any{"type": "string"}
		default:
			p["type"] = "string"
		}
		props[f.Name] = p
		flags[f.Name] = f
	})
	if doc != "" {
		what := "the JSON record (orch " + cmd.Name() + " --help)"
		if cmd.Name() == "reject" {
			what = "the feedback, as a text"
		}
		props["document"] = map[string]any{"type": "string", "description": what}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, flags
}

// mcpCall runs one verb in-process, as the command line would, and turns
// its answer into a tool result: the JSON answer, or the JSON error
// envelope as a tool error.
func mcpCall(globals []string, verb string, args []mcpArg, doc string, flags map[string]*pflag.Flag, raw json.RawMessage) *mcp.CallToolResult {
	in := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &in); err != nil {
			return mcpError("usage", "the arguments are not a JSON object: "+err.Error(), "")
		}
	}
	argv := []string{verb}
	// The positional values go after "--": an id "--help" or
	// "--state-branch=x" is an id, never a flag (nor "prune" a subcommand).
	// A flag's value is safe as --name=value.
	var positional []string
	for _, a := range args {
		v, ok := in[a.Name]
		delete(in, a.Name)
		if !ok {
			continue
		}
		s, isString := v.(string)
		if !isString {
			return mcpError("usage", fmt.Sprintf("%s must be a string", a.Name), "")
		}
		if s != "" {
			positional = append(positional, s)
		}
	}
	var stdin string
	if v, ok := in["document"]; ok && doc != "" {
		s, isString := v.(string)
		if !isString {
			return mcpError("usage", "document must be a string", "")
		}
		stdin = s
		argv = append(argv, "--"+doc, "-")
		delete(in, "document")
	}
	for name, v := range in {
		f, ok := flags[name]
		if !ok {
			return mcpError("usage", fmt.Sprintf("orch %s takes no parameter %q", verb, name), "the tool's input schema lists its parameters")
		}
		switch x := v.(type) {
		case bool:
			if x {
				argv = append(argv, "--"+f.Name)
			}
		case float64:
			argv = append(argv, "--"+f.Name+"="+strconv.FormatFloat(x, 'f', -1, 64))
		case string:
			argv = append(argv, "--"+f.Name+"="+x)
		case []any:
			for _, item := range x {
				s, isString := item.(string)
				if !isString {
					return mcpError("usage", name+" must be a list of strings", "")
				}
				argv = append(argv, "--"+f.Name+"="+s)
			}
		default:
			return mcpError("usage", fmt.Sprintf("%s has a value of the wrong type", name), "")
		}
	}
	argv = append(append(append(argv, globals...), "--json", "--"), positional...)
	var out, errb bytes.Buffer
	code := Main(argv, strings.NewReader(stdin), &out, &errb)
	if code != 0 {
		text := strings.TrimSpace(errb.String())
		if text == "" {
			text = fmt.Sprintf(`{"error":{"code":"exit_%d","message":"orch %s exited %d","hint":""}}`, code, verb, code)
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.String()}}}
	var structured map[string]any
	if json.Unmarshal(out.Bytes(), &structured) == nil {
		res.StructuredContent = structured
	}
	return res
}

func mcpError(code, msg, hint string) *mcp.CallToolResult {
	b, _ := json.Marshal(errorAnswer{errorJSON{code, msg, hint, []string{}, []string{}}})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSpace(string(answer.Envelope(b)))}}}
}
