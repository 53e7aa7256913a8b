package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"

	"github.com/orch-tool/orch/workflow"
)

// The JSON printer's options, as gh has them: --json alone prints the
// whole answer; --json=FIELDS cuts it to the fields named; --jq EXPR
// filters it with a jq expression (gojq) and implies --json. Every verb
// writes its whole answer; jsonOutput, between the verb and stdout, cuts
// and filters it, so that no verb knows about FIELDS or --jq. (A task
// object is cut where it is made, newTaskJSON, so that orch list
// --json=id,title does not read the custom keys it will not print.)

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
const jsonFlagUsage = "print the answer as one JSON document (schema_version 2); --json=FIELDS keeps only those fields"

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
	out := &jsonOutput{w: g.io.Out}
	if g.jsonNames != nil {
		if len(g.jsonNames) == 0 {
			return &workflow.UsageError{Msg: "--json=: no field named", Hint: "--json alone prints the whole answer"}
		}
		typ := reflect.TypeOf(a.typ)
		keys, tasks := answerKeys(typ), holdsTasks(typ, map[reflect.Type]bool{})
		var mask taskMask
		for _, n := range g.jsonNames {
			// A key of the answer is that key, even where a task has
			// one of the same name (claim's branch).
			if n == "schema_version" || slices.Contains(keys, n) {
				out.keys = append(out.keys, n)
				continue
			}
			i := slices.Index(taskFieldNames, n)
			if !tasks || i < 0 {
				return badJSONField(g.verb, n, keys, tasks)
			}
			mask |= 1 << i
		}
		if mask != 0 && out.keys != nil {
			// A task's field named: the keys that show tasks stay.
			for _, k := range taskKeys(typ) {
				if !slices.Contains(out.keys, k) {
					out.keys = append(out.keys, k)
				}
			}
		}
		g.fields = mask
	}
	if g.jq != "" {
		q, err := gojq.Parse(g.jq)
		if err != nil {
			return &workflow.UsageError{Msg: "--jq: " + err.Error(), Hint: "a jq expression, like --jq '.tasks[].id' (docs/json.md)"}
		}
		code, err := gojq.Compile(q, gojq.WithEnvironLoader(os.Environ))
		if err != nil {
			return &workflow.UsageError{Msg: "--jq: " + err.Error(), Hint: "a jq expression, like --jq '.tasks[].id' (docs/json.md)"}
		}
		out.jq = code
	}
	if out.keys != nil || out.jq != nil {
		g.io.Out = out
	}
	return nil
}

func badJSONField(verb, name string, keys []string, tasks bool) error {
	return &workflow.UsageError{Msg: fmt.Sprintf("--json: %q is not a field of orch %s's answer", name, verb), Hint: jsonFieldsHint(verb, keys, tasks)}
}

func jsonFieldsHint(verb string, keys []string, tasks bool) string {
	h := "its fields: " + strings.Join(keys, ", ")
	if tasks {
		h += "; of each task: " + strings.Join(taskFieldNames, ", ")
	}
	return h + " (--json alone prints the whole answer; --jq EXPR filters it)"
}

// jsonField is one key of a struct as encoding/json writes it.
type jsonField struct {
	name  string
	field reflect.StructField
	opts  string // the tag's options ("omitempty", ...)
}

// jsonFields lists a struct's keys as encoding/json writes them: embedded
// structs' keys in their place, a key of the outer struct replacing an
// embedded one of the same name. The answer's keys (--json=FIELDS), the
// keys that show tasks and the JSON Schemas all come from it.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	named := func(name string) func(jsonField) bool { return func(x jsonField) bool { return x.name == name } }
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for _, ef := range jsonFields(f.Type) {
				if !slices.ContainsFunc(out, named(ef.name)) {
					out = append(out, ef)
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(slices.DeleteFunc(out, named(name)), jsonField{name, f, opts})
	}
	return out
}

// answerKeys are the keys of an answer type.
func answerKeys(t reflect.Type) []string {
	var out []string
	for _, f := range jsonFields(t) {
		out = append(out, f.name)
	}
	return out
}

// taskKeys are the keys of an answer type that show tasks.
func taskKeys(t reflect.Type) []string {
	var out []string
	for _, f := range jsonFields(t) {
		if holdsTasks(f.field.Type, map[reflect.Type]bool{}) {
			out = append(out, f.name)
		}
	}
	return out
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

// fieldList matches a list of fields, or one field of a task.
func fieldList() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z_]+(,[a-z_]+)+$|^(` + strings.Join(taskFieldNames, "|") + `)$`)
}

var taskJSONType = reflect.TypeOf(taskJSON{})

// holdsTasks says whether an answer of type t shows task objects.
func holdsTasks(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == taskJSONType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return holdsTasks(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && f.Tag.Get("json") != "-" && holdsTasks(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// jsonOutput is stdout under --json=FIELDS or --jq: each answer the verb
// writes (one JSON document a line; board --watch writes one a change) is
// cut to the keys named and run through the jq expression as it ends.
type jsonOutput struct {
	w    io.Writer
	keys []string   // the answer's keys to keep (nil: all)
	jq   *gojq.Code // nil: no filter
	buf  []byte
}

func (o *jsonOutput) Write(p []byte) (int, error) {
	o.buf = append(o.buf, p...)
	for {
		i := bytes.IndexByte(o.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		doc := o.buf[:i]
		rest := o.buf[i+1:]
		if err := o.answer(doc); err != nil {
			o.buf = nil
			return len(p), err
		}
		o.buf = append(o.buf[:0], rest...)
	}
}

// finish prints an answer the verb did not end with a newline.
func (o *jsonOutput) finish() error {
	if len(bytes.TrimSpace(o.buf)) == 0 {
		return nil
	}
	doc := o.buf
	o.buf = nil
	return o.answer(doc)
}

func (o *jsonOutput) answer(doc []byte) error {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil
	}
	if o.keys != nil {
		cut, err := cutAnswer(doc, o.keys)
		if err != nil {
			return err
		}
		doc = cut
	}
	if o.jq == nil {
		_, err := o.w.Write(append(doc, '\n'))
		return err
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return fmt.Errorf("--jq: the answer is not JSON: %v", err)
	}
	var out []byte
	iter := o.jq.Run(v)
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := r.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				break
			}
			return &jqError{err}
		}
		b, err := jqText(r)
		if err != nil {
			return &jqError{err}
		}
		out = append(append(out, b...), '\n')
	}
	_, err := o.w.Write(out)
	return err
}

// jqError is an expression that failed on the answer (the verb itself
// succeeded; its answer is not printed).
type jqError struct{ err error }

func (e *jqError) Error() string { return "--jq: " + e.err.Error() }

// jqText prints one result of --jq as gh does: a string as its text, a
// number as written, null as an empty line, true and false, and anything
// else as compact JSON.
func jqText(v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return []byte(x), nil
	case nil:
		return nil, nil
	case bool:
		return strconv.AppendBool(nil, x), nil
	case int:
		return strconv.AppendInt(nil, int64(x), 10), nil
	case float64:
		if math.Trunc(x) == x && math.Abs(x) < 1e15 {
			return strconv.AppendFloat(nil, x, 'f', 0, 64), nil
		}
		return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
	}
	return gojq.Marshal(v)
}

// cutAnswer keeps schema_version and the keys named of a JSON object, in
// the answer's order.
func cutAnswer(doc []byte, keys []string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("--json: the answer is not a JSON object")
	}
	out := []byte{'{'}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if k != "schema_version" && !slices.Contains(keys, k) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendJSONString(out, k)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}'), nil
}
