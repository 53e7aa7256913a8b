package taskfile

import (
	"strings"
	"testing"
)

// largeBody is the docs/design.md §3 example with a body of about 200 KB: many
// review rounds, code blocks and lists.
var largeBody = func() string {
	var b strings.Builder
	b.WriteString(designExample)
	for i := 0; b.Len() < 200<<10; i++ {
		b.WriteString("\n## Review Feedback (rejection #9)\n\n### From GitHub PR review by alice\n\n")
		b.WriteString("- [ ] **R9.1** BLOCKING `src/a.go:12`\n  Something is wrong here.\n  - Response: FIXED (abc123) — changed it\n\n")
		b.WriteString("```go\n# not a heading\nfunc f() {}\n```\n\nSome paragraph text that goes on for a while, as review text does.\n")
	}
	return b.String()
}()

func BenchmarkParse(b *testing.B) {
	for _, c := range []struct{ name, src string }{
		{"typical", designExample},
		{"large-body", largeBody},
	} {
		b.Run(c.name, func(b *testing.B) {
			src := []byte(c.src)
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse("t.md", src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEdit changes one field: the edit and its verifying re-parse.
func BenchmarkEdit(b *testing.B) {
	f := mustParse(b, designExample)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Apply(Set(KeyQueue, String("claimed"))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSections(b *testing.B) {
	for _, c := range []struct{ name, src string }{
		{"typical", designExample},
		{"large-body", largeBody},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := mustParse(b, c.src)
			b.ReportAllocs()
			for b.Loop() {
				if len(f.Sections()) == 0 {
					b.Fatal("no sections")
				}
			}
		})
	}
}
