package taskfile

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the .golden files of testdata/golden from the current output")

// TestGolden applies the edits of testdata/golden/NAME.edits to NAME.md and
// compares the result with NAME.golden. Run with -update to rewrite the
// .golden files, then read the diff.
//
// An .edits file has one edit a line; blank lines and lines starting with
// "#" are ignored:
//
//	set KEY text            a string (the rest of the line, as is)
//	set-int KEY 12
//	set-list KEY a, b c     a list, split at ", " (nothing after KEY: [])
//	set-time KEY 2026-02-07T09:00:00Z
//	unset KEY
//	insert-after-title      a markdown block: the lines that follow, up to a line "."
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "golden", "*.md"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".md")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			script, err := os.ReadFile(strings.TrimSuffix(in, ".md") + ".edits")
			if err != nil {
				t.Fatal(err)
			}
			f, err := Parse(filepath.Base(in), src)
			if err != nil {
				t.Fatal(err)
			}
			out, err := runEdits(f, string(script))
			if err != nil {
				t.Fatal(err)
			}
			goldenPath := strings.TrimSuffix(in, ".md") + ".golden"
			if *update {
				if err := os.WriteFile(goldenPath, out.Src, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run go test ./taskfile -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(out.Src, want) {
				t.Errorf("%s differs from %s (run with -update and check the diff):\n%s", name+".md", goldenPath, lineDiff(string(want), string(out.Src)))
			}
		})
	}
}

// runEdits applies an .edits script.
func runEdits(f *File, script string) (*File, error) {
	sc := bufio.NewScanner(strings.NewReader(script))
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		key, arg, _ := strings.Cut(rest, " ")
		var edit Edit
		switch verb {
		case "set":
			edit = Set(key, String(arg))
		case "set-int":
			v, err := strconv.Atoi(arg)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			edit = Set(key, Int(v))
		case "set-list":
			var items []string
			if arg != "" {
				items = strings.Split(arg, ", ")
			}
			edit = Set(key, List(items...))
		case "set-time":
			tm, err := time.Parse(time.RFC3339, arg)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			edit = Set(key, Time(tm))
		case "unset":
			edit = Unset(key)
		case "insert-after-title":
			var block []string
			for sc.Scan() {
				n++
				if sc.Text() == "." {
					break
				}
				block = append(block, sc.Text())
			}
			out, err := f.Insert(f.AfterTitle(), strings.Join(block, "\n"))
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			f = out
			continue
		default:
			return nil, fmt.Errorf("line %d: unknown verb %q", n, verb)
		}
		before := f
		out, err := f.Apply(edit)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if !bytes.Equal(out.Body(), before.Body()) {
			return nil, fmt.Errorf("line %d: %s changed the body", n, describeEdit(edit))
		}
		f = out
	}
	return f, sc.Err()
}

// lineDiff is a minimal line-by-line comparison for failure messages.
func lineDiff(want, got string) string {
	w, g := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}
