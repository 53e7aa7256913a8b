package answer

import (
	"reflect"
	"slices"
	"strings"
)

// KeysOf lists the keys of an answer type (a struct) as encoding/json
// writes them: embedded structs' keys in their place, a key of the outer
// struct replacing an embedded one of the same name. --json=FIELDS and the
// JSON Schemas take the answers' keys from it.
func KeysOf(t reflect.Type) []Key {
	var out []Key
	named := func(name string) func(Key) bool { return func(k Key) bool { return k.Name == name } }
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for _, ek := range KeysOf(f.Type) {
				if !slices.ContainsFunc(out, named(ek.Name)) {
					out = append(out, ek)
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		out = append(slices.DeleteFunc(out, named(name)), Key{name, f.Type, optional})
	}
	return out
}

var taskType = reflect.TypeFor[Task]()

// showsTasks says whether an answer of type t shows task objects (seen:
// the types looked at already, nil at first).
func showsTasks(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen == nil {
		seen = map[reflect.Type]bool{}
	}
	if t == taskType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return showsTasks(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && f.Tag.Get("json") != "-" && showsTasks(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// Selection is what --json=FIELDS keeps of an answer: keys of the answer,
// and keys of each task object in it.
type Selection struct {
	Keys  []string // the answer's keys to keep, schema_version aside (nil: all)
	Tasks Mask     // the task objects' keys to show (0: all)
}

// FieldError is a name --json=FIELDS gave that is no key of the answer
// (nor of its task objects).
type FieldError struct {
	Name     string
	Keys     []string // the answer's keys
	TaskKeys []string // the task object's keys; nil when the answer shows no task
}

func (e *FieldError) Error() string { return "--json: " + e.Name + " is not a field of the answer" }

// Select is what --json=FIELDS keeps of an answer of type t given the
// names, or a *FieldError for a name that is no key. A name is a key of the
// answer, even where a task has one of the same name (claim's branch), else
// a key of its task objects; when a task's key is named, the answer keeps
// the keys that show tasks.
func Select(t reflect.Type, names []string) (Selection, error) {
	var sel Selection
	var keys []string
	for _, k := range KeysOf(t) {
		keys = append(keys, k.Name)
	}
	tasks := showsTasks(t, nil)
	for _, n := range names {
		if n == "schema_version" || slices.Contains(keys, n) {
			sel.Keys = append(sel.Keys, n)
			continue
		}
		bit := taskBit(n)
		if !tasks || bit == 0 {
			e := &FieldError{Name: n, Keys: keys}
			if tasks {
				e.TaskKeys = TaskFieldNames()
			}
			return Selection{}, e
		}
		sel.Tasks |= bit
	}
	if sel.Tasks != 0 && sel.Keys != nil {
		for _, k := range KeysOf(t) {
			if showsTasks(k.Type, nil) && !slices.Contains(sel.Keys, k.Name) {
				sel.Keys = append(sel.Keys, k.Name)
			}
		}
	}
	return sel, nil
}
