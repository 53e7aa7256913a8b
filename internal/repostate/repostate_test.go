package repostate

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestAddFilesAndDiff(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "a")
	write("sub/b.txt", "b")
	write(".git/HEAD", "ref")
	write("wt/.git/x", "x")
	before := map[string]string{"refs": "r1"}
	if err := AddFiles(before, dir); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"refs": "r1", "file a.txt": "a", "file " + filepath.Join("sub", "b.txt"): "b"}; !maps.Equal(before, want) {
		t.Fatalf("recorded %q, want %q", before, want)
	}
	if d := Diff(before, before); len(d) != 0 {
		t.Fatalf("no change, diff %q", d)
	}
	write("a.txt", "A")
	write("c.txt", "c")
	write(".git/HEAD", "other") // not recorded
	os.Remove(filepath.Join(dir, "sub", "b.txt"))
	after := map[string]string{"refs": "r2"}
	if err := AddFiles(after, dir); err != nil {
		t.Fatal(err)
	}
	want := []string{"added: file c.txt", "changed: file a.txt", "changed: refs", "removed: file " + filepath.Join("sub", "b.txt")}
	if d := Diff(before, after); !slices.Equal(d, want) {
		t.Fatalf("diff %q, want %q", d, want)
	}
}
