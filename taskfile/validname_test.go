package taskfile

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"
)

// nameOracle is the definition ValidName implements by hand.
var nameOracle = regexp.MustCompile(`^[\p{L}\p{N}_][\p{L}\p{N}_.@+ -]{0,63}$`)

func oracleValidName(s string) bool {
	return nameOracle.MatchString(s) && !strings.HasSuffix(s, " ") && !strings.Contains(s, "..")
}

func TestValidNameMatchesRegexp(t *testing.T) {
	cases := []string{
		"", "a", "agent-a", "Agent B", "lead@example.com", "x+y", "_x", "-x", ".x", " x", "x ", "a..b", "a.b",
		"ünïcödé", "日本語", "٣", "Ⅻ", "a/b", "a\\b", "a\nb", "a\x00b", "\xff", "a\xffb", "é\u0301",
		strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("é", 64), strings.Repeat("é", 65),
		"a\u200bb", "a\tb", "a_b-c.d@e+f g",
	}
	rng := rand.New(rand.NewSource(1))
	alphabet := []rune("aZ09_.@+ -/é日\u0301\x00\n\t٣Ⅻ\ufffd")
	for i := 0; i < 20000; i++ {
		n := rng.Intn(70)
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteRune(alphabet[rng.Intn(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		if got, want := ValidName(c), oracleValidName(c); got != want {
			t.Errorf("ValidName(%q) = %v, the regexp says %v", c, got, want)
		}
	}
}

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"agent-a", "a..b", "\xff", "日本語 x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidName(s), oracleValidName(s); got != want {
			t.Errorf("ValidName(%q) = %v, the regexp says %v", s, got, want)
		}
	})
}
