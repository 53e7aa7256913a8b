package main

import (
	"strings"
	"testing"
)

// figures walks testdata/m from a.Entry with o and returns its stops (as
// file:function) and its returns.
func figures(t *testing.T, p *program, o options) (string, int) {
	t.Helper()
	o.entry = "a.Entry"
	if o.graph == "" {
		o.graph = "static"
	}
	if o.by == "" {
		o.by = "file"
	}
	ss, err := p.walk(o)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := mapping(o.merge)
	if err != nil {
		t.Fatal(err)
	}
	r, err := measure(ss, o, rs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, s := range ss {
		names = append(names, r.units[i]+":"+short(s.fn))
	}
	return strings.Join(names, " "), r.returns
}

func TestWalk(t *testing.T) {
	p, err := load("testdata/m")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what    string
		o       options
		stops   string
		returns int
	}{
		{"static", options{}, "a/a.go:Entry b/b.go:G a/a.go:h b/b.go:K", 2},
		{"vta", options{graph: "vta"}, "a/a.go:Entry b/b.go:G a/a.go:h b/b.go:K a/a.go:(t).M", 3},
		{"merged", options{merge: merges{"a/a.go,b/*.go=ab.go"}}, "ab.go:Entry ab.go:G ab.go:h ab.go:K", 0},
		{"moved", options{move: merges{"a.h=b/b.go"}}, "a/a.go:Entry b/b.go:G b/b.go:h b/b.go:K", 0},
		{"by package", options{by: "package"}, "a:Entry b:G a:h b:K", 2},
		{"revisits", options{revisits: true}, "a/a.go:Entry b/b.go:G a/a.go:h b/b.go:G b/b.go:K", 2},
		{"cut", options{cut: merges{"a.Entry>b.K"}}, "a/a.go:Entry b/b.go:G a/a.go:h", 1},
		{"skip", options{skip: "a.h"}, "a/a.go:Entry b/b.go:G b/b.go:K", 0},
	} {
		stops, returns := figures(t, p, c.o)
		if stops != c.stops || returns != c.returns {
			t.Errorf("%s: stops %s, returns %d; want %s, %d", c.what, stops, returns, c.stops, c.returns)
		}
	}
	if module != "example.com/w" {
		t.Errorf("module %q, want example.com/w", module)
	}
}

func TestCoverageBlocks(t *testing.T) {
	b := block{3, 10, 5, 2}
	for _, c := range []struct {
		l, c int
		in   bool
	}{{3, 10, true}, {3, 9, false}, {4, 1, true}, {5, 2, true}, {5, 3, false}, {2, 50, false}} {
		if b.holds(c.l, c.c) != c.in {
			t.Errorf("block %v holds %d.%d: %v", b, c.l, c.c, !c.in)
		}
	}
}
