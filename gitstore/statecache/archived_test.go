package statecache

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// The archived IDs' cache: a set searched in its sorted lines, read back
// only when made from the same tree and intact, made again otherwise.
func TestArchivedIDsCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), ArchivedDoneName)
	tree := plumbing.NewHash("1111111111111111111111111111111111111111")
	made := 0
	list := func(ids ...string) func() ([]string, error) {
		return func() ([]string, error) { made++; return ids, nil }
	}
	a := LoadArchivedIDs(path, tree, list("T-m2", "T-b1", "T-zz9", "T-a", "T-b1"))
	for id, want := range map[string]bool{"T-a": true, "T-b1": true, "T-m2": true, "T-zz9": true,
		"T-": false, "T-b": false, "T-b10": false, "T-0": false, "T-zzz": false, "": false} {
		if got := a.Has(id); got != want {
			t.Errorf("has(%q) = %v, want %v", id, got, want)
		}
	}
	if newArchivedIDs(tree, nil).Has("T-a") || newArchivedIDs(tree, nil).Has("") {
		t.Error("an empty set has T-a")
	}
	if newArchivedIDs(tree, []byte("T-a\nT-b")).Has("T-c") || !newArchivedIDs(tree, []byte("T-a\nT-b")).Has("T-b") {
		t.Error("a set whose last line lacks its newline")
	}
	if b := LoadArchivedIDs(path, tree, list()); made != 1 || !b.Has("T-zz9") {
		t.Errorf("read back: made %d times, has T-zz9 %v", made, b.Has("T-zz9"))
	}
	other := plumbing.NewHash("2222222222222222222222222222222222222222")
	if b := LoadArchivedIDs(path, other, list("T-new")); made != 2 || !b.Has("T-new") || b.Has("T-a") {
		t.Errorf("another tree: made %d times", made)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-6] ^= 1 // an ID's byte: the CRC no longer matches
	if err := os.WriteFile(path, data, 0o666); err != nil {
		t.Fatal(err)
	}
	if b := LoadArchivedIDs(path, other, list("T-new")); made != 3 || !b.Has("T-new") {
		t.Errorf("damaged: made %d times", made)
	}
	if b := LoadArchivedIDs(path, tree, func() ([]string, error) { return nil, errors.New("unreadable") }); b != nil {
		t.Errorf("a failed list gave %+v", b)
	}
	// A FIFO in its place is not waited on: the cache is made and replaces it.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		t.Skip("no FIFO here:", err)
	}
	got := make(chan *ArchivedIDs, 1)
	go func() { got <- LoadArchivedIDs(path, tree, list("T-a")) }()
	select {
	case b := <-got:
		if b == nil || !b.Has("T-a") {
			t.Errorf("with a FIFO at the cache: %+v", b)
		}
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("the FIFO was not replaced: %v %v", fi, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LoadArchivedIDs waits on a FIFO")
	}
}
