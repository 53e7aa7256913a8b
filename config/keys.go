package config

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/orch-tool/orch/taskfile"
)

// The keys of config.yaml are the fields of Config and of the sections it
// holds: a field's yaml tag is its key, its doc tag what it means, and its
// default is Default()'s value (or a default tag, where the default is not
// one value: "the branch checked out at orch init"). Keys reads them, and
// from Keys come docs/configuration.md's reference, orch help config and
// the "did you mean" of an unknown key. Adding a key is adding its field,
// with both tags, on one line.

// Key is one setting of config.yaml.
type Key struct {
	Path    string // as config.yaml nests it: "run.task_timeout", "run.agents[].name"
	Type    string // "duration", "integer", "list of strings", ...
	Default string // as config.yaml writes it ("" inside a list's entries)
	Meaning string
}

// Keys lists every key of config.yaml, in the order of the definition.
func Keys() []Key {
	var out []Key
	walkKeys(reflect.TypeOf(Config{}), reflect.ValueOf(*Default()), "", &out)
	return out
}

// durationType and the others are the types Keys names in words.
var (
	durationType  = reflect.TypeOf(Duration(0))
	byteSizeType  = reflect.TypeOf(ByteSize(0))
	exitCodesType = reflect.TypeOf(ExitCodes(nil))
	reviewersType = reflect.TypeOf(Reviewers(nil))
)

// walkKeys appends the keys of the struct type t under prefix; v is its
// default value (invalid inside a list's entries, which have none).
func walkKeys(t reflect.Type, v reflect.Value, prefix string, out *[]Key) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" {
			continue
		}
		path := prefix + name
		var fv reflect.Value
		if v.IsValid() {
			fv = v.Field(i)
		}
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			walkKeys(ft, fv, path+".", out)
			continue
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && ft != reviewersType:
			*out = append(*out, Key{Path: path, Type: "list of entries", Default: defaultText(f, fv), Meaning: f.Tag.Get("doc")})
			walkKeys(ft.Elem(), reflect.Value{}, path+"[].", out)
			continue
		}
		*out = append(*out, Key{Path: path, Type: typeText(ft), Default: defaultText(f, fv), Meaning: f.Tag.Get("doc")})
	}
}

// yamlName is a field's key in config.yaml ("" for none).
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

func typeText(t reflect.Type) string {
	switch t {
	case durationType:
		return "duration"
	case byteSizeType:
		return "size"
	case exitCodesType:
		return "exit code or list of them"
	case reviewersType:
		return "list of names or entries"
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "list of " + typeText(t.Elem()) + "s"
	}
	return t.Kind().String()
}

// defaultText is the field's default as config.yaml would write it.
func defaultText(f reflect.StructField, v reflect.Value) string {
	if d, ok := f.Tag.Lookup("default"); ok {
		return d
	}
	if !v.IsValid() {
		return ""
	}
	switch x := v.Interface().(type) {
	case Duration:
		return shortDuration(x)
	case ByteSize:
		return x.String()
	}
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return `""`
		}
		return v.String()
	case reflect.Slice:
		if v.Len() == 0 {
			return "[]"
		}
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	return fmt.Sprint(v.Interface())
}

// checkKeys refuses the first key of config.yaml that is not one, in
// config.yaml's own words: its path, its line and the key nearest to it.
func checkKeys(path string, data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil // the decoder reports the syntax
	}
	return walkNode(path, doc.Content[0], reflect.TypeOf(Config{}), "")
}

func walkNode(file string, n *yaml.Node, t reflect.Type, prefix string) error {
	if n.Kind != yaml.MappingNode {
		return nil // the decoder says what is wrong with a value
	}
	fields := map[string]reflect.StructField{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if name := yamlName(t.Field(i)); name != "" {
			fields[name] = t.Field(i)
			names = append(names, name)
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		f, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("%s%s is not a key of config.yaml", prefix, k.Value)
			if near := nearest(k.Value, names); near != "" {
				msg += fmt.Sprintf(": did you mean %s%s?", prefix, near)
			} else if prefix != "" {
				msg += fmt.Sprintf(" (%s holds %s)", strings.TrimSuffix(prefix, "."), strings.Join(names, ", "))
			}
			return &taskfile.ParseError{Path: file, Line: k.Line, Msg: msg}
		}
		ft := f.Type
		if msg := kindMismatch(ft, val); msg != "" {
			return &taskfile.ParseError{Path: file, Line: val.Line, Msg: prefix + k.Value + " " + msg}
		}
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			if err := walkNode(file, val, ft, prefix+k.Value+"."); err != nil {
				return err
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && ft != reviewersType && val.Kind == yaml.SequenceNode:
			for _, e := range val.Content {
				if err := walkNode(file, e, ft.Elem(), prefix+k.Value+"[]."); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// nearest is the name among names closest to s (by edit distance, or one
// that s begins or ends), "" when none is near enough to be a typo.
func nearest(s string, names []string) string {
	best, bestD := "", len(s)/2+2
	for _, n := range names {
		d := editDistance(s, n)
		if strings.HasPrefix(n, s) || strings.HasPrefix(s, n) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// shortDuration writes a duration as a person would: 2h, 45m, 10s.
func shortDuration(d Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// kindMismatch says, in config.yaml's words, how a value is not of its
// key's type ("" when its shape is right; the decoder checks the rest, and
// a value's own type, a duration or a size, says what is wrong with it).
func kindMismatch(t reflect.Type, n *yaml.Node) string {
	if n.Kind == yaml.AliasNode || n.Tag == "!!null" {
		return ""
	}
	kind := map[yaml.Kind]string{yaml.MappingNode: "a mapping (key: value)", yaml.SequenceNode: "a list", yaml.ScalarNode: "a single value"}[n.Kind]
	want := ""
	switch {
	case t == exitCodesType || t == reviewersType:
		return ""
	case t.Kind() == reflect.Struct && t != durationType:
		if n.Kind != yaml.MappingNode {
			want = "a mapping of its keys (key: value, one a line)"
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			want = "a " + typeText(t) + ": [a, b] or one \"- item\" a line"
			if t.Elem().Kind() == reflect.Struct {
				want = "a list of entries: one \"- {name: ..., ...}\" a line"
			}
		}
	default:
		if n.Kind != yaml.ScalarNode {
			return "must be " + withArticle(typeText(t)) + ", not " + kind
		}
		switch typeText(t) {
		case "integer":
			var i int
			if n.Decode(&i) != nil {
				return fmt.Sprintf("must be a whole number, not %q", n.Value)
			}
		case "boolean":
			var b bool
			if n.Decode(&b) != nil {
				return fmt.Sprintf("must be true or false, not %q", n.Value)
			}
		}
	}
	if want == "" {
		return ""
	}
	return "must be " + want + ", not " + kind
}

// withArticle is "a string", "an integer".
func withArticle(noun string) string {
	if strings.IndexByte("aeiou", noun[0]) >= 0 {
		return "an " + noun
	}
	return "a " + noun
}
