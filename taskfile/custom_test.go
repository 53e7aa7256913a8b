package taskfile

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCustomFields(t *testing.T) {
	src := "---\n" +
		"id: T-abc234\n" +
		"title: Custom keys\n" +
		"queue: incoming\n" +
		"custom_field: kept exactly as written   # a comment\n" +
		"estimate: 3\n" +
		"ratio: 0.5\n" +
		"hex: 0x1F\n" +
		"huge: 123456789012345678901234567890\n" +
		"nan: .nan\n" +
		"flag: true\n" +
		"nothing: ~\n" +
		"quoted: \"3\"\n" +
		"when: 2026-02-06T10:00:00Z\n" +
		"tags: [a, b]\n" +
		"anchor: &a {x: 1, 2: two}\n" +
		"again: *a\n" +
		"---\n# Custom keys\n"
	f, err := Parse("t.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(f.CustomFields())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"again":{"2":"two","x":1},"anchor":{"2":"two","x":1},"custom_field":"kept exactly as written","estimate":3,` +
		`"flag":true,"hex":31,"huge":1.2345678901234568e+29,"nan":".nan","nothing":null,"quoted":"3","ratio":0.5,` +
		`"tags":["a","b"],"when":"2026-02-06T10:00:00Z"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	plain, err := Parse("p.md", []byte("---\nid: T-abc234\ntitle: x\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m := plain.CustomFields(); m != nil {
		t.Errorf("no custom keys: got %v", m)
	}
}

// An alias bomb stays bounded: the parser either refuses the file (a
// ParseError naming it, which is as good an answer) or reads it, and the
// custom keys built from it stay small.
func TestCustomFieldsAliasBomb(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 8; i++ {
		bomb.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				bomb.WriteString(", ")
			}
			bomb.WriteString("*a" + string(rune('0'+i-1)))
		}
		bomb.WriteString("]\n")
	}
	for name, extra := range map[string]string{
		"custom keys": "",
		"a known key": "labels: *a7\n",
	} {
		t.Run(name, func(t *testing.T) {
			src := "---\nid: T-abc234\ntitle: x\n" + bomb.String() + extra + "---\n"
			f, err := Parse("bomb.md", []byte(src))
			if err != nil {
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Path != "bomb.md" || pe.Line == 0 {
					t.Fatalf("the parser refuses it, but not with a ParseError naming the file and line: %v", err)
				}
				return
			}
			out, err := json.Marshal(f.CustomFields())
			if err != nil {
				t.Fatal(err)
			}
			if len(out) > 1<<20 {
				t.Errorf("custom fields of an alias bomb: %d bytes", len(out))
			}
		})
	}
}
