package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/coordinator"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// Every verb's JSON answer has a JSON Schema in docs/schema/, generated from
// the Go type the verb prints (make docs writes them; TestDocsUpToDate
// fails when they differ from the code), and every answer that a script's
// orch prints is checked against its schema (mainCheckingSchemas). The
// generator is this
// file's: a small reflection over the answer types, which are plain
// structs, slices, maps and a few types of orch's own.

// errorSchema is the schema of the error envelope on stderr.
const errorSchema = "error"

var schemaDir = filepath.Join("..", "..", "docs", "schema")

// obj is a JSON object that keeps its keys in the order written.
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(p.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// timePattern is the one format of a time in an answer (answer.Time).
const timePattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$`

// schemaGen turns Go types into JSON Schema (draft 2020-12). The task
// object goes into $defs once; everything else is inline.
type schemaGen struct {
	usesTask bool
	err      error
}

func (g *schemaGen) fail(format string, a ...any) obj {
	if g.err == nil {
		g.err = fmt.Errorf(format, a...)
	}
	return obj{}
}

var (
	answerTimeType = reflect.TypeOf(answer.Time{})
	timeType       = reflect.TypeOf(time.Time{})
	rawMessageType = reflect.TypeOf(json.RawMessage{})
	taskType       = reflect.TypeOf(answer.Task{})
)

func nullable(s obj) obj {
	return obj{{"anyOf", []any{s, obj{{"type", "null"}}}}}
}

func (g *schemaGen) of(t reflect.Type) obj {
	switch t {
	case answerTimeType:
		return obj{{"type", []string{"string", "null"}}, {"format", "date-time"}, {"pattern", timePattern}}
	case timeType:
		return g.fail("%s: a time.Time in an answer (use answer.Time: one format, null when unset)", t)
	case rawMessageType:
		return obj{{"type", "object"}} // the custom keys of a task
	case taskType:
		g.usesTask = true
		return obj{{"$ref", "#/$defs/task"}}
	}
	switch t.Kind() {
	case reflect.String:
		return obj{{"type", "string"}}
	case reflect.Bool:
		return obj{{"type", "boolean"}}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return obj{{"type", "integer"}}
	case reflect.Float32, reflect.Float64:
		return obj{{"type", "number"}}
	case reflect.Slice, reflect.Array:
		return obj{{"type", "array"}, {"items", g.of(t.Elem())}}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return g.fail("%s: a map with keys other than strings", t)
		}
		return obj{{"type", "object"}, {"additionalProperties", g.of(t.Elem())}}
	case reflect.Pointer:
		return nullable(g.of(t.Elem()))
	case reflect.Interface:
		return obj{}
	case reflect.Struct:
		return g.object(t)
	}
	return g.fail("%s: no JSON Schema for this type", t)
}

// fieldSchema is one key of an object.
type fieldSchema struct {
	name     string
	schema   obj
	required bool
}

// fields are the schemas of an object's keys.
func (g *schemaGen) fields(keys []answer.Key) []fieldSchema {
	var out []fieldSchema
	for _, k := range keys {
		out = append(out, fieldSchema{k.Name, g.of(k.Type), !k.Optional})
	}
	return out
}

// object is the schema of a struct (its keys as encoding/json writes
// them), or of the task object (its keys from its table).
func (g *schemaGen) object(t reflect.Type) obj {
	keys := answer.TaskKeys()
	if t != taskType {
		keys = answer.KeysOf(t)
	}
	var props obj
	required := []string{}
	for _, f := range g.fields(keys) {
		props = append(props, kv{f.name, f.schema})
		if f.required {
			required = append(required, f.name)
		}
	}
	return obj{{"type", "object"}, {"properties", props}, {"required", required}, {"additionalProperties", false}}
}

// answerSchema is the schema of a whole answer: schema_version first, then
// the answer's keys.
func answerSchema(name, title string, typ any) ([]byte, error) {
	g := &schemaGen{}
	body := g.of(reflect.TypeOf(typ))
	if g.err != nil {
		return nil, g.err
	}
	props := obj{{"schema_version", obj{{"const", answer.Version}}}}
	required := []string{"schema_version"}
	for _, p := range body {
		switch p.k {
		case "properties":
			props = append(props, p.v.(obj)...)
		case "required":
			required = append(required, p.v.([]string)...)
		}
	}
	s := obj{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", "https://github.com/orch-tool/orch/docs/schema/" + name + ".json"},
		{"title", title},
		{"type", "object"},
		{"properties", props},
		{"required", required},
		{"additionalProperties", false},
	}
	if reflect.TypeOf(typ) == reflect.TypeOf(runEvent{}) {
		s = append(s, runEventKinds(props)...)
	}
	if g.usesTask {
		task := g.object(taskType)
		s = append(s, kv{"$defs", obj{{"task", task}}})
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// runEventKinds makes orch run's events typed: the event key is one of
// coordinator.EventKinds, and each kind's event fills the keys it needs
// (a string not empty, an attempt from 1, an exit code and a summary
// not null).
func runEventKinds(props obj) obj {
	var names []string
	var rules []any
	for _, k := range coordinator.EventKinds {
		names = append(names, k.Name)
		if len(k.Needs) == 0 {
			continue
		}
		var need obj
		for _, key := range k.Needs {
			switch key {
			case "exit_code":
				need = append(need, kv{key, obj{{"type", "integer"}}})
			case "attempt":
				need = append(need, kv{key, obj{{"minimum", 1}}})
			case "summary":
				need = append(need, kv{key, obj{{"type", "object"}}})
			default:
				need = append(need, kv{key, obj{{"minLength", 1}}})
			}
		}
		rules = append(rules, obj{
			{"if", obj{{"properties", obj{{"event", obj{{"const", k.Name}}}}}}},
			{"then", obj{{"description", k.Doc}, {"properties", need}}},
		})
	}
	for i, p := range props {
		if p.k == "event" {
			props[i].v = obj{{"enum", names}}
		}
	}
	return obj{{"allOf", rules}}
}

// schemaFiles generates every schema, by file name.
func schemaFiles() (map[string][]byte, error) {
	titles := map[string][]string{}
	types := map[string]any{}
	for cmd, a := range answers {
		titles[a.name] = append(titles[a.name], "orch "+cmd)
		if prev, ok := types[a.name]; ok && reflect.TypeOf(prev) != reflect.TypeOf(a.typ) {
			return nil, fmt.Errorf("schema %s: two answer types", a.name)
		}
		types[a.name] = a.typ
	}
	out := map[string][]byte{}
	for name, typ := range types {
		sort.Strings(titles[name])
		b, err := answerSchema(name, "The answer of "+strings.Join(titles[name], ", ")+" --json", typ)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name+".json"] = b
	}
	b, err := answerSchema(errorSchema, "The error envelope on stderr of a command run with --json that failed", errorAnswer{})
	if err != nil {
		return nil, err
	}
	out[errorSchema+".json"] = b
	return out, nil
}

// updateSchemas writes docs/schema/ (or, without -update-docs, reports
// how it differs from the code).
func updateSchemas(t *testing.T, update bool) {
	t.Helper()
	files, err := schemaFiles()
	if err != nil {
		t.Fatal(err)
	}
	if update {
		if err := os.MkdirAll(schemaDir, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	var bad []string
	for name, b := range files {
		p := filepath.Join(schemaDir, name)
		if update {
			if err := os.WriteFile(p, b, 0o666); err != nil {
				t.Fatal(err)
			}
		} else if cur, err := os.ReadFile(p); err != nil || !bytes.Equal(cur, b) {
			bad = append(bad, name)
		}
	}
	old, _ := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	for _, p := range old {
		if _, ok := files[filepath.Base(p)]; !ok {
			if update {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			} else {
				bad = append(bad, filepath.Base(p)+" (no such answer)")
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("docs/schema differs from the code (%s): run `make docs` and commit the result", strings.Join(bad, ", "))
	}
}

// The schemas are strict: an answer with a key missing, a key too many,
// a time in another format or a wrong schema_version does not pass.
func TestSchemasAreStrict(t *testing.T) {
	path := filepath.Join(schemaDir, "approve.json")
	task := answer.NewTask(&gitstore.Summary{Task: taskfile.Task{ID: "T-1", Title: "t", Queue: "done", Created: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)}, Path: "tasks/T-1-t.md"}, false, workflow.NoFields, 0)
	good, err := json.Marshal(transitionJSON{Task: task, From: "provisional", To: "done", Commit: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	doc := string(answer.Envelope(good))
	if err := checkSchema(path, doc); err != nil {
		t.Fatalf("a good answer fails: %v\n%s", err, doc)
	}
	for name, bad := range map[string]string{
		"a key missing":          strings.Replace(doc, `"from":"provisional",`, "", 1),
		"a key too many":         strings.Replace(doc, `"from":`, `"extra":1,"from":`, 1),
		"a task key missing":     strings.Replace(doc, `"labels":[],`, "", 1),
		"a time in another form": strings.Replace(doc, `"2026-01-02T03:04:05.006Z"`, `"2026-01-02T03:04:05Z"`, 1),
		"schema_version 1":       strings.Replace(doc, `"schema_version":2`, `"schema_version":1`, 1),
		"a list that is null":    strings.Replace(doc, `"labels":[]`, `"labels":null`, 1),
	} {
		if bad == doc {
			t.Fatalf("%s: the test changed nothing", name)
		}
		if checkSchema(path, bad) == nil {
			t.Errorf("%s: the schema accepts %s", name, bad)
		}
	}
}

// Every command has a schema for its answer (or none, and says so).
// TestScripts checks that the scripts print, between them, an answer of
// every schema.
func TestEveryAnswerHasASchema(t *testing.T) {
	root := newRootCmd(&globalOptions{io: &streams{}})
	seen := map[string]bool{}
	for _, c := range allCommands(root) {
		path := strings.TrimPrefix(c.CommandPath(), "orch ")
		seen[path] = true
		if _, ok := answers[path]; !ok && !noAnswer[path] {
			t.Errorf("orch %s: no JSON Schema of its answer (answers in schema_test.go)", path)
		}
	}
	for path := range answers {
		if !seen[path] {
			t.Errorf("answers names orch %s, which is no command", path)
		}
	}
}

// schemaNames are the names of every schema in docs/schema/, the error
// envelope's included.
func schemaNames() []string {
	names := []string{errorSchema}
	for _, a := range answers {
		if !slices.Contains(names, a.name) {
			names = append(names, a.name)
		}
	}
	sort.Strings(names)
	return names
}

// allCommands is every runnable command, hidden ones (cobra's __complete)
// and help aside.
func allCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || strings.HasPrefix(sub.Name(), "__") || sub.IsAdditionalHelpTopicCommand() {
				continue
			}
			out = append(out, sub)
			walk(sub)
		}
	}
	walk(root)
	return out
}

// eventStreams are the commands whose answer is a stream of events, printed
// before they end, whatever their exit code.
var eventStreams = map[string]bool{"orch run": true}

// mainCheckingSchemas runs orch as Main does and then, when it ran with
// --json (the whole answer: no FIELDS, no --jq), checks what it printed
// against its schema: stdout on success, the error envelope on stderr on
// failure. A mismatch is reported on stderr, with exit status 97, so that
// every answer of every script is checked.
func mainCheckingSchemas(dir string, args []string) int {
	// What orch prints goes out as it is written (board --watch prints
	// for as long as it runs) and is kept to be checked at the end.
	var out, errb bytes.Buffer
	code := Main(args, os.Stdin, io.MultiWriter(os.Stdout, &out), io.MultiWriter(os.Stderr, &errb))
	args = jsonFieldsWithSpace(newRootCmd(&globalOptions{io: &streams{}}), args) // as Main read them
	whole := false
	for _, a := range args {
		if a == "--" {
			break
		}
		switch {
		case a == "--json" || a == "--json=true":
			whole = true
		case jsonArg(a):
			return code // a cut or filtered answer
		}
	}
	if !whole {
		return code
	}
	if cmd, _, err := newRootCmd(&globalOptions{io: &streams{}}).Find(args); err == nil && eventStreams[cmd.CommandPath()] {
		// A stream of events: what it printed is checked whatever its exit
		// code (a forced stop exits 130 after its events), and its error,
		// if any, too.
		if out.Len() > 0 {
			if err := checkSchema(filepath.Join(dir, answers[strings.TrimPrefix(cmd.CommandPath(), "orch ")].name+".json"), out.String()); err != nil {
				fmt.Fprintf(os.Stderr, "orch (test): the events do not match their schema: %v\n", err)
				return 97
			}
		}
		if code != 0 && errb.Len() > 0 {
			if err := checkSchema(filepath.Join(dir, errorSchema+".json"), errb.String()); err != nil {
				fmt.Fprintf(os.Stderr, "orch (test): the error does not match docs/schema/error.json: %v\n", err)
				return 97
			}
		}
		if seen := os.Getenv("ORCH_TEST_SCHEMAS_SEEN"); seen != "" && out.Len() > 0 {
			_ = os.WriteFile(filepath.Join(seen, answers[strings.TrimPrefix(cmd.CommandPath(), "orch ")].name), nil, 0o666)
		}
		return code
	}
	name, text := errorSchema, errb.String()
	if code == 0 {
		cmd, _, err := newRootCmd(&globalOptions{io: &streams{}}).Find(args)
		if err != nil {
			return code
		}
		a, ok := answers[strings.TrimPrefix(cmd.CommandPath(), "orch ")]
		if !ok {
			return code // help, or a command that prints none
		}
		name, text = a.name, out.String()
	} else if out.Len() > 0 {
		fmt.Fprintf(os.Stderr, "orch (test): exit %d under --json with something on stdout\n", code)
		return 97
	}
	if err := checkSchema(filepath.Join(dir, name+".json"), text); err != nil {
		fmt.Fprintf(os.Stderr, "orch (test): the answer does not match docs/schema/%s.json: %v\n", name, err)
		return 97
	}
	if seen := os.Getenv("ORCH_TEST_SCHEMAS_SEEN"); seen != "" {
		_ = os.WriteFile(filepath.Join(seen, name), nil, 0o666)
	}
	return code
}

// checkSchema checks every JSON document in text against the schema file.
// The validator is google/jsonschema-go, which the MCP SDK already brings:
// its package init is a tenth of a millisecond, and every orch a script runs
// is this test binary, so a heavier validator would slow every script.
func checkSchema(path, text string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var sch jsonschema.Schema
	if err := json.Unmarshal(data, &sch); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	rs, err := sch.Resolve(nil)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	n := 0
	for dec.More() {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			return fmt.Errorf("not JSON: %v", err)
		}
		n++
		if err := rs.Validate(doc); err != nil {
			return fmt.Errorf("document %d: %v", n, err)
		}
	}
	if n == 0 {
		return fmt.Errorf("no JSON document")
	}
	return nil
}

// orch run's events are typed: the schema knows every event's name, and
// requires of each kind the keys it needs (the verdict of a review).
func TestRunEventSchemaIsTyped(t *testing.T) {
	path := filepath.Join(schemaDir, "run-event.json")
	code := 0
	ev := func(e runEvent) string {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return string(answer.Envelope(b))
	}
	at := answer.Time(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	good := map[string]runEvent{
		"reviewed": {Time: at, Event: "reviewed", Slot: "rev-1", Task: "T-1", Verdict: "approved", Queue: "done", Text: "rev-1 reviewed T-1: approved"},
		"exited":   {Time: at, Event: "exited", Slot: "impl-1", Role: "implementer", Task: "T-1", Attempt: 1, ExitCode: &code, Duration: "1s", Log: "l", Text: "x"},
		"summary":  {Time: at, Event: "summary", Duration: "1s", Summary: &coordinator.Summary{Ended: "idle", Left: map[string]int{"incoming": 2}}, Text: "orch run went idle"},
	}
	for name, e := range good {
		if err := checkSchema(path, ev(e)); err != nil {
			t.Errorf("a good %s event fails: %v", name, err)
		}
	}
	bad := map[string]runEvent{
		"a review without its verdict": {Time: at, Event: "reviewed", Slot: "rev-1", Task: "T-1", Queue: "done", Text: "rev-1 reviewed T-1: approved"},
		"an event of no kind":          {Time: at, Event: "exploded", Text: "x"},
		"an exit without its code":     {Time: at, Event: "exited", Slot: "impl-1", Role: "implementer", Task: "T-1", Attempt: 1, Duration: "1s", Log: "l", Text: "x"},
		"a summary without one":        {Time: at, Event: "summary", Duration: "1s", Text: "orch run went idle"},
		"an escalation without a rule": {Time: at, Event: "escalated", Task: "T-1", Queue: "escalated", Cause: "why", Text: "x"},
	}
	for name, e := range bad {
		if checkSchema(path, ev(e)) == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}
