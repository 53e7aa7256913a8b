package text

import (
	"testing"
	"unicode/utf8"
)

func TestOneLine(t *testing.T) {
	if got := OneLine("  a\n\tb  c\r\n"); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"too long", 3, "too..."},
		{"héllo wörld", 4, "héll..."}, // runes, not bytes: é is two bytes
		{"日本語のテキスト", 3, "日本語..."},
		{"", 0, ""},
	} {
		if got := Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestVisible(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text\n\twith a tab", "plain text\n\twith a tab"},
		{"héllo 日本", "héllo 日本"},
		{"\x1b]52;c;ZXZpbA==\x07copied", `\x1b]52;c;ZXZpbA==\x07copied`},
		{"\x1b]0;owned\x07title", `\x1b]0;owned\x07title`},
		{"\x1b[2J\x1b[Hcleared", `\x1b[2J\x1b[Hcleared`},
		{"nul\x00byte", `nul\x00byte`},
		{"line\r\nend", "line\nend"},
		{"over\rwrite", `over\rwrite`},
		{"del\x7f", `del\x7f`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bidi \u202eevil", `bidi \u202eevil`},
		{"bad \xff utf8", `bad \xff utf8`},
		{"", ""},
	} {
		if got := Visible(c.in); got != c.want {
			t.Errorf("Visible(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLines(t *testing.T) {
	got := Lines("one\ntwo\x1b[31m\nthree is long\nfour\n", 3, 5)
	want := []string{`two\x...`, "three...", "four"}
	if len(got) != len(want) {
		t.Fatalf("Lines = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Lines[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}

// FuzzVisible: what Visible gives back holds no control character but line
// breaks and tabs, is valid UTF-8, and keeps text that had none as it was.
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]52;c;x\x07", "a\r\nb", "\xff\xfe", "\u009b", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := Visible(s)
		if !utf8.ValidString(v) {
			t.Fatalf("Visible(%q) = %q: not valid UTF-8", s, v)
		}
		for _, r := range v {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
				t.Fatalf("Visible(%q) = %q: holds control character %U", s, v, r)
			}
		}
		if Visible(v) != v {
			t.Fatalf("Visible is not idempotent on %q", s)
		}
	})
}
