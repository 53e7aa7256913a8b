package statecache

import (
	"math/rand"
	"sort"
	"strings"
	"testing"
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
			s.base[i].Size = int64(i)
			oracle[p] = &s.base[i].IndexEntry
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
