package taskfile

import (
	"encoding/json"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"
)

// known holds the frontmatter keys orch reads and writes (KeyOrder).
var known = func() map[string]bool {
	m := make(map[string]bool, len(KeyOrder))
	for _, k := range KeyOrder {
		m[k] = true
	}
	return m
}()

// customLimit bounds the values CustomFields builds: an alias may name a
// large node many times ("billion laughs"); past the limit the rest of a
// value is dropped.
const customLimit = 10000

// CustomFields returns the frontmatter keys orch does not know, with their
// values as plain data: nil, bool, int64, float64,
// string, []any and map[string]any (what encoding/json writes as JSON).
// Scalars keep YAML's types (an unquoted 3 is a number, true a boolean,
// ~ null); a timestamp, binary data or a number JSON cannot hold (.nan,
// .inf) stays the text written. Mapping keys
// become strings. nil when there are none.
func (f *File) CustomFields() map[string]any {
	var values map[string]any
	budget := customLimit
	for _, fl := range f.fields {
		if known[fl.key] {
			continue
		}
		if values == nil {
			values = map[string]any{}
		}
		values[fl.key] = plainValue(fl.valNode, 0, &budget)
	}
	return values
}

// CustomFieldsJSON is CustomFields as one JSON object; nil when there are
// none (or, which cannot happen for plain data, they do not encode).
func (f *File) CustomFieldsJSON() []byte {
	m := f.CustomFields()
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

func plainValue(n *yaml.Node, depth int, budget *int) any {
	n = resolveAlias(n)
	*budget--
	if n == nil || depth > 64 || *budget < 0 {
		return nil
	}
	switch n.Kind {
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			if *budget < 0 {
				break
			}
			l = append(l, plainValue(c, depth+1, budget))
		}
		return l
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content) && *budget >= 0; i += 2 {
			k := resolveAlias(n.Content[i])
			key := ""
			if k != nil && k.Kind == yaml.ScalarNode {
				key = k.Value
			} else if b, err := yaml.Marshal(k); err == nil {
				key = strings.TrimSpace(string(b))
			}
			m[key] = plainValue(n.Content[i+1], depth+1, budget)
		}
		return m
	case yaml.ScalarNode:
		return plainScalar(n)
	}
	return nil
}

func plainScalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return i
		}
	case "!!float":
		var x float64
		if n.Decode(&x) == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
			return x
		}
	}
	return n.Value
}
