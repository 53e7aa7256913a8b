package text

import "testing"

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
