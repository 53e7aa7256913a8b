package gitstore

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKeepText: each copy is a file of its own under edits/, even when
// two are made in the same instant, and holds the text byte for byte.
func TestKeepText(t *testing.T) {
	priv := filepath.Join(t.TempDir(), "orch")
	texts := []string{"first\r\n<b>&</b>", "second", ""}
	seen := map[string]bool{}
	for _, text := range texts {
		p := KeepText(priv, "T-1-reject.txt", []byte(text))
		if p == "" {
			t.Fatalf("no copy of %q", text)
		}
		if filepath.Dir(p) != filepath.Join(priv, editsDir) {
			t.Errorf("%s is not in %s", p, filepath.Join(priv, editsDir))
		}
		if seen[p] {
			t.Errorf("%s was written twice", p)
		}
		seen[p] = true
		if got, err := os.ReadFile(p); err != nil || string(got) != text {
			t.Errorf("%s holds %q (%v), want %q", p, got, err, text)
		}
	}
}
