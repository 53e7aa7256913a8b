package taskfile

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var writeCorpus = flag.Bool("write-fuzz-corpus", false, "rewrite the seed-* files of testdata/fuzz from trickyFiles")

// brokenFiles are seeds for FuzzParse that do not parse.
var brokenFiles = map[string]string{
	"no-closing":       "---\nid: T-abcd12\ntitle: x\n",
	"nul":              "---\nid: T-abcd12\ntitle: a\x00b\n---\n",
	"invalid-utf8":     "---\nid: T-abcd12\n---\n# T\nbad \xff byte\n",
	"duplicate-key":    "---\nid: T-abcd12\ntitle: a\nid: T-efgh34\n---\n",
	"unclosed-flow":    "---\nid: T-abcd12\nlabels: [a,\n  b\nqueue: x\n---\n",
	"unclosed-quote":   "---\nid: x\ntitle: \"foo\nqueue: x\n---\n",
	"bad-indent":       "---\nid: x\n  title: y\n---\n",
	"tab-indent":       "---\nid: x\n\ttitle: y\n---\n",
	"unknown-alias":    "---\nid: x\ntitle: *nope\n---\n",
	"not-a-mapping":    "---\n[a, b]\n---\n",
	"flow-root":        "---\n{id: x}\n---\n",
	"complex-key":      "---\n? [a]\n: b\n---\n",
	"type-error":       "---\nid: x\npr_number: abc\ncreated: yesterday\n---\n",
	"line-separator":   "---\ntitle: a\u2028b\nqueue: incoming\n---\n",
	"block-scalar-bad": "---\ndesc: |\n  foo\n bar\n---\n",
	"after-multiline":  "---\nlabels: [a,\n  b]\ntitle: \"unterminated\n---\n",
	"dash-value":       "---\nid: T-abcd12\nbranch: - x\n---\n",
	"labels-map-item":  "---\nlabels: [a, {k: v}]\n---\n",
	"pr-hex":           "---\npr_number: 0x1F\n---\n",
}

// TestWriteFuzzCorpus writes the seed corpora under testdata/fuzz in the
// go test fuzz v1 format. It only runs with -write-fuzz-corpus; files the
// fuzzer wrote itself (named by hash) are regression seeds and stay.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*writeCorpus {
		t.Skip("run go test ./taskfile -run TestWriteFuzzCorpus -write-fuzz-corpus to rewrite the seeds")
	}
	write := func(fuzz, name string, vals ...any) {
		dir := filepath.Join("testdata", "fuzz", fuzz)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		b.WriteString("go test fuzz v1\n")
		for _, v := range vals {
			switch v := v.(type) {
			case []byte:
				fmt.Fprintf(&b, "[]byte(%q)\n", v)
			case string:
				fmt.Fprintf(&b, "string(%q)\n", v)
			case uint8:
				fmt.Fprintf(&b, "uint8(%d)\n", v)
			case int64:
				fmt.Fprintf(&b, "int64(%d)\n", v)
			default:
				t.Fatalf("type %T", v)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for name := range trickyFiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		write("FuzzParse", name, []byte(trickyFiles[name]))
	}
	for name, src := range brokenFiles {
		write("FuzzParse", name, []byte(src))
	}
	write("FuzzParse", "alias-bomb", []byte(aliasBomb(24)))
	write("FuzzEdit", "alias-bomb", []byte(aliasBomb(24)), uint8(indexOf(fuzzKeys, KeyQueue)), uint8(0), "done", int64(0))

	// FuzzEdit: each tricky file with a string edit of a key it has, a
	// list edit of a key it lacks, and one more edit of another kind.
	keyIndex := func(k string) uint8 { return uint8(indexOf(fuzzKeys, k)) }
	i := 0
	for _, name := range names {
		f, err := Parse(name, []byte(trickyFiles[name]))
		if err != nil {
			continue
		}
		src := []byte(trickyFiles[name])
		keys := f.Keys()
		present := func(j int) uint8 {
			for n := 0; n < len(keys); n++ {
				if k := keyIndex(keys[(j+n)%len(keys)]); k != 255 {
					return k
				}
			}
			return keyIndex("custom_field")
		}
		s := contractStrings[i%len(contractStrings)]
		write("FuzzEdit", name+"-set", src, present(i), uint8(0), s, int64(0))
		write("FuzzEdit", name+"-list", src, keyIndex([]string{KeyLabels, KeyLockedOut, "notes", KeyDependsOn}[i%4]), uint8(2), "a,needs: quotes,"+s, int64(0))
		switch i % 3 {
		case 0:
			write("FuzzEdit", name+"-unset", src, present(i+1), uint8(3), "", int64(0))
		case 1:
			write("FuzzEdit", name+"-int", src, keyIndex([]string{KeyPRNumber, KeyRejectionCount, "x"}[i%3]), uint8(1), "", int64(i*7))
		case 2:
			write("FuzzEdit", name+"-time", src, keyIndex([]string{KeyCreated, KeyClaimedAt, KeySubmittedAt}[i%3]), uint8(4), "", int64(1770372000+i))
		}
		i++
	}

	for name, m := range map[string][3]string{
		"disjoint":          {"a\nb\nc\nd\ne\n", "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n"},
		"same-place":        {"a\nb\nc\n", "a\nx\nb\nc\n", "a\ny\nb\nc\n"},
		"conflict":          {"a\nb\nc\n", "a\nB\nc\n", "a\nBB\nc\n"},
		"no-final-newline":  {"a\nb", "a\nb\nc", "z\na\nb"},
		"crlf":              {"a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n", "a\r\nb\r\nC\r\n"},
		"empty-base":        {"", "x\n", "y\n"},
		"delete-both":       {"a\nb\nc\n", "a\nc\n", "a\nc\n"},
		"repeated-lines":    {"x\nx\nx\ny\nx\n", "x\nx\ny\nx\n", "x\nx\nx\ny\nx\nx\n"},
		"feedback-rounds":   {"# T\n\n## Context\n...\n", "# T\n\n## R1\n\nfix\n\n## Context\n...\n", "# T\n\n## Context\nmore\n"},
		"unicode-separator": {"a\u2028b\nc\n", "a\u2028B\nc\n", "a\u2028b\nC\n"},
	} {
		write("FuzzMergeText", name, m[0], m[1], m[2])
	}
}
