package main

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/workflow"
	"github.com/spf13/cobra"
)

// The JSON printer's options, as gh has them: --json alone prints the
// whole answer; --json=FIELDS cuts it to the fields named; --jq EXPR
// filters it with a jq expression (gojq) and implies --json. Every verb
// writes its whole answer; an answer.Filter, between the verb and stdout,
// cuts and filters it, so that no verb knows about FIELDS or --jq. (A task
// object is cut where it is made, answer.NewTask, so that orch list
// --json=id,title does not read the custom keys it will not print.) This
// file parses the flags; answer does the rest.

// jsonFlag is --json. It takes its fields after "=" only (pflag's
// NoOptDefVal): "orch show --json T-1" shows T-1, and "--json id,title"
// is --json and an argument id,title.
type jsonFlag struct{ g *globalOptions }

func (f jsonFlag) String() string {
	switch {
	case f.g == nil || !f.g.JSON:
		return "false"
	case f.g.jsonNames == nil:
		return "true"
	}
	return strings.Join(f.g.jsonNames, ",")
}

func (f jsonFlag) Set(s string) error {
	switch s {
	case "true":
		f.g.JSON, f.g.jsonNames = true, nil
	case "false":
		f.g.JSON, f.g.jsonNames = false, nil
	default:
		f.g.JSON, f.g.jsonNames = true, []string{}
		for _, n := range strings.Split(s, ",") {
			if n = strings.TrimSpace(n); n != "" && !slices.Contains(f.g.jsonNames, n) {
				f.g.jsonNames = append(f.g.jsonNames, n)
			}
		}
	}
	return nil
}

// Type is "bool" so that the help shows --json as the switch it mostly is
// (the usage text names =FIELDS).
func (f jsonFlag) Type() string { return "bool" }

// jsonFlagUsage is the help text of --json.
var jsonFlagUsage = fmt.Sprintf("print the answer as one JSON document (schema_version %d); --json=FIELDS keeps only those fields", answer.Version)

// jsonArg says whether a command-line argument is one of the JSON
// printer's flags (before flags are parsed, for the error of a bad flag).
func jsonArg(a string) bool {
	return a == "--json" || strings.HasPrefix(a, "--json=") && a != "--json=false" || a == "--jq" || strings.HasPrefix(a, "--jq=")
}

// setUpJSON checks --json=FIELDS and --jq against the verb's answer and
// puts the printer between the verb and stdout. It runs before the verb:
// a bad field or expression changes nothing (exit 2).
func (g *globalOptions) setUpJSON() error {
	if g.jq != "" {
		g.JSON = true
	}
	if !g.JSON {
		return nil
	}
	a, ok := answers[g.verb]
	if !ok {
		if noAnswer[g.verb] {
			return &workflow.UsageError{Msg: fmt.Sprintf("orch %s has no JSON answer", g.verb), Hint: "orch " + g.verb + " --help says what it prints"}
		}
		return nil // help: cobra prints it
	}
	var sel answer.Selection
	if g.jsonNames != nil {
		if len(g.jsonNames) == 0 {
			return &workflow.UsageError{Msg: "--json=: no field named", Hint: "--json alone prints the whole answer"}
		}
		var err error
		if sel, err = answer.Select(reflect.TypeOf(a.typ), g.jsonNames); err != nil {
			var bad *answer.FieldError
			if errors.As(err, &bad) {
				return &workflow.UsageError{Msg: fmt.Sprintf("--json: %q is not a field of orch %s's answer", bad.Name, g.verb), Hint: jsonFieldsHint(bad)}
			}
			return err
		}
		g.fields = sel.Tasks
	}
	var jq *answer.JQ
	if g.jq != "" {
		var err error
		if jq, err = answer.CompileJQ(g.jq); err != nil {
			return &workflow.UsageError{Msg: "--jq: " + err.Error(), Hint: "a jq expression, like --jq '.tasks[].id' (docs/json.md)"}
		}
	}
	if f := answer.NewFilter(g.io.Out, sel.Keys, jq); f != nil {
		g.io.Out = f
	}
	return nil
}

func jsonFieldsHint(bad *answer.FieldError) string {
	h := "its fields: " + strings.Join(bad.Keys, ", ")
	if bad.TaskKeys != nil {
		h += "; of each task: " + strings.Join(bad.TaskKeys, ", ")
	}
	return h + " (--json alone prints the whole answer; --jq EXPR filters it)"
}

// fieldsAsArgument is the hint for --json followed by a list of fields
// (taken as an argument: --json takes its fields after "="), or "".
func fieldsAsArgument(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" && i+1 < len(args) && fieldList().MatchString(args[i+1]) {
			return fmt.Sprintf("--json takes its fields after \"=\": --json=%s (--json %s is --json and the argument %s)", args[i+1], args[i+1], args[i+1])
		}
	}
	return ""
}

// jsonFieldsWithSpace reads gh's habit, --json FIELDS with a space, as
// --json=FIELDS where the word can be nothing else: the verb takes no
// argument, or the word is a list (a comma is in no task ID). Elsewhere
// (orch show --json title: a task called title?) the word stays an
// argument, and a failure says how to write it (fieldsAsArgument).
func jsonFieldsWithSpace(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root {
		return args
	}
	takesArg := cmd.Args == nil || cmd.Args(cmd, []string{"x"}) == nil
	// A word that names the verb or one of its parents is the verb, not
	// fields: orch --json init.
	verbWords := map[string]bool{}
	for c := cmd; c != nil; c = c.Parent() {
		verbWords[c.Name()] = true
		for _, a := range c.Aliases {
			verbWords[a] = true
		}
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--" {
			break
		}
		w := args[i+1]
		if args[i] != "--json" || !fieldWords().MatchString(w) || verbWords[w] || (takesArg && !strings.Contains(w, ",")) {
			continue
		}
		out := append(append(append([]string(nil), args[:i]...), "--json="+w), args[i+2:]...)
		return out
	}
	return args
}

// fieldWords is a word that can be fields: names, comma-separated.
var fieldWords = lazyregexp.New(`^[a-z_]+(,[a-z_]+)*$`)

// fieldList matches a list of fields, or one field of a task.
func fieldList() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z_]+(,[a-z_]+)+$|^(` + strings.Join(answer.TaskFieldNames(), "|") + `)$`)
}
