package statecache

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
)

// TestIndexSetAgainstMap runs random puts and drops on an Index loaded
// from a base, and on a plain map, and compares get, each, sorted and the
// directory cursors (over names in order, as the reconcile asks them).
func TestIndexSetAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	dirs := []string{"", "events", "tasks", "tasks2"}
	names := []string{"a.md", "b.md", "c", "config.yaml", "m.md", "z.md", "zz"}
	var all []string
	for _, d := range dirs {
		for _, n := range names {
			all = append(all, joinPath(d, n))
		}
	}
	for round := 0; round < 300; round++ {
		oracle := map[string]*IndexEntry{}
		var base []string
		for _, p := range all {
			if rng.Intn(2) == 0 {
				base = append(base, p)
			}
		}
		sort.Strings(base)
		var s Index
		s.base = make([]indexRec, len(base))
		for i, p := range base {
			s.base[i].path = p
			ie := &IndexEntry{Size: int64(i)}
			s.base[i].ie.Store(ie)
			oracle[p] = ie
		}
		s.n = len(base)
		for k := rng.Intn(12); k > 0; k-- {
			p := all[rng.Intn(len(all))]
			if rng.Intn(3) == 0 {
				s.drop(p)
				delete(oracle, p)
			} else {
				ie := &IndexEntry{Size: int64(1000 + k)}
				s.put(p, ie)
				oracle[p] = ie
			}
		}
		if s.n != len(oracle) {
			t.Fatalf("round %d: n = %d, want %d", round, s.n, len(oracle))
		}
		for _, p := range all {
			if got, want := s.Get(p), oracle[p]; got != want {
				t.Fatalf("round %d: get(%s) = %v, want %v", round, p, got, want)
			}
		}
		seen := map[string]bool{}
		s.Each(func(p string, ie *IndexEntry) {
			if seen[p] || oracle[p] != ie {
				t.Fatalf("round %d: each gave %s twice or wrong", round, p)
			}
			seen[p] = true
		})
		var order []string
		s.sorted(func(p string, ie *IndexEntry) {
			if oracle[p] != ie {
				t.Fatalf("round %d: sorted gave a wrong entry for %s", round, p)
			}
			order = append(order, p)
		})
		if len(seen) != len(oracle) || len(order) != len(oracle) || !sort.StringsAreSorted(order) {
			t.Fatalf("round %d: each saw %d, sorted %v, want %d in order", round, len(seen), order, len(oracle))
		}
		for _, d := range dirs {
			from := rng.Intn(len(names))
			c := s.Cursor(d, names[from])
			for _, n := range names[from:] {
				if rng.Intn(4) == 0 {
					continue // a cursor may skip names
				}
				if got, want := c.Get(n), oracle[joinPath(d, n)]; got != want {
					t.Fatalf("round %d: cursor(%q).get(%s) = %v, want %v", round, d, n, got, want)
				}
			}
		}
	}
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return strings.Join([]string{dir, name}, "/")
}

// A loaded base keeps its entries encoded: a cursor walk compares them
// through scratch and decodes none for good; Get decodes one for good (the
// same entry each time), and only a changed one is journalled.
func TestIndexBaseStaysEncoded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	c := sampleCache(300)
	want := map[string]IndexEntry{}
	c.Index.Each(func(p string, ie *IndexEntry) {
		if n := len(want); n%7 == 0 {
			ie.Prev = []plumbing.Hash{gitrepo.HashBlob([]byte(p)), gitrepo.HashBlob([]byte("older"))}
		} else if n%11 == 0 {
			ie.ConflictW, ie.ConflictR = gitrepo.HashBlob([]byte("w")), gitrepo.HashBlob([]byte("r"))
			ie.Racy = true
		}
		want[p] = *ie
	})
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, mappedFile := range []bool{false, true} {
		l := Load(path, "refs/heads/orch", mappedFile)
		same := func(p string, got *IndexEntry) {
			t.Helper()
			g, w := *got, want[p]
			g.raw, w.raw = nil, nil
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("%s: got %+v, want %+v", p, g, w)
			}
		}
		cur := l.Index.Cursor("tasks", "")
		for i := 0; i < 300; i++ {
			p := fmt.Sprintf("tasks/T-%06d-x.md", i)
			same(p, cur.Get(filepath.Base(p)))
		}
		for i := range l.Index.base {
			if l.Index.base[i].ie.Load() != nil {
				t.Fatalf("the cursor walk decoded %s for good", l.Index.base[i].path)
			}
		}
		p := "tasks/T-000014-x.md" // one with Prev
		ie := l.Index.Get(p)
		same(p, ie)
		if l.Index.Get(p) != ie || l.Index.Cursor("tasks", "T-000014").Get("T-000014-x.md") != ie {
			t.Fatal("Get and the cursor give another entry for a decoded path")
		}
		journalSize := func() int64 {
			fi, err := os.Stat(path + journalSuffix)
			if err != nil {
				return 0
			}
			return fi.Size()
		}
		before := journalSize()
		if err := l.Save(path); err != nil {
			t.Fatal(err)
		}
		if journalSize() != before {
			t.Fatal("an entry only read was journalled")
		}
		touch(ie).Size = 12345
		if err := l.Save(path); err != nil {
			t.Fatal(err)
		}
		again := Load(path, "refs/heads/orch", false)
		if got := again.Index.Get(p); got == nil || got.Size != 12345 {
			t.Fatalf("the changed entry was not saved: %+v", got)
		}
		w := want[p]
		w.Size = 12345
		want[p] = w
		l.Close()
		again.Close()
	}
}

// An optimistic command compares the view with the index on another
// goroutine while its body reads entries through Get, which decodes them
// for good (gitstore's Defer): run under -race, this is the test that the
// two may share a loaded index.
func TestIndexGetBesideCursor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	if err := sampleCache(200).Save(path); err != nil {
		t.Fatal(err)
	}
	l := Load(path, "refs/heads/orch", true)
	defer l.Close()
	done := make(chan int)
	go func() {
		seen := 0
		cur := l.Index.Cursor("tasks", "")
		for i := 0; i < 200; i++ {
			if ie := cur.Get(fmt.Sprintf("T-%06d-x.md", i)); ie != nil && ie.Size == int64(i) {
				seen++
			}
		}
		done <- seen
	}()
	for i := 199; i >= 0; i-- {
		if ie := l.Index.Get(fmt.Sprintf("tasks/T-%06d-x.md", i)); ie == nil || ie.Size != int64(i) {
			t.Fatalf("Get %d: %+v", i, ie)
		}
	}
	if seen := <-done; seen != 200 {
		t.Fatalf("the cursor saw %d entries as they are, want 200", seen)
	}
}
