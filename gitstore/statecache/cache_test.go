package statecache

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// mapped reports whether the process maps the file at path.
func mapped(t *testing.T, path string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps here")
	}
	return strings.Contains(string(maps), path)
}

// A mapped cache is unmapped by Close, and a file Load cannot use is not
// kept mapped at all.
func TestCloseUnmaps(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/maps")
	}
	path := filepath.Join(t.TempDir(), "state")
	if err := sampleCache(50).Save(path); err != nil {
		t.Fatal(err)
	}
	c := Load(path, "refs/heads/orch", true)
	if c.Summaries.Len() != 50 || !mapped(t, path) {
		t.Fatalf("loaded %d summaries, mapped %v", c.Summaries.Len(), mapped(t, path))
	}
	c.Close()
	if mapped(t, path) {
		t.Fatal("the cache file is still mapped after Close")
	}
	c.Close() // a second Close does nothing

	// Another branch's cache: nothing decoded from it is kept.
	if other := Load(path, "refs/heads/other", true); other.Summaries.Len() != 0 || mapped(t, path) {
		t.Fatalf("another branch's cache: %d summaries, mapped %v", other.Summaries.Len(), mapped(t, path))
	}
	// Read into the heap: never mapped.
	if heap := Load(path, "refs/heads/orch", false); heap.Summaries.Len() != 50 || mapped(t, path) {
		t.Fatalf("read into the heap: %d summaries, mapped %v", heap.Summaries.Len(), mapped(t, path))
	}
}
