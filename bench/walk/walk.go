package main

import (
	"cmp"
	"go/token"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/ssa"
)

// stop is one function at its visit.
type stop struct {
	fn    *ssa.Function
	file  string // relative to the root
	depth int
}

type walker struct {
	o       options
	root    string
	fset    *token.FileSet
	cg      *callgraph.Graph
	visited map[*ssa.Function]bool
	ran     func(from, to token.Pos) bool // nil: every call site
	stack   []*ssa.Function
	stops   []stop
}

func (w *walker) file(fn *ssa.Function) string {
	if o := fn.Origin(); o != nil {
		fn = o
	}
	f := w.fset.Position(fn.Pos()).Filename
	if r, err := filepath.Rel(w.root, f); err == nil {
		f = r
	}
	return filepath.ToSlash(f)
}

// callee is one function called at a site.
type callee struct {
	pos token.Pos // the site's, or with a function folded, the site calling it
	idx int       // the order found in: a folded function's calls in its own source order
	fn  *ssa.Function
}

// callees lists the module's functions fn calls, in source order of the
// call sites, the functions of a site calling several in order of name;
// a folded function's calls (-fold-closures, -exported) come in at the
// place of the first site calling it.
func (w *walker) callees(fn *ssa.Function) []callee {
	var out []callee
	folded := map[*ssa.Function]bool{}
	var add func(fn *ssa.Function, at token.Pos)
	add = func(fn *ssa.Function, at token.Pos) {
		n := w.cg.Nodes[fn]
		if n == nil || folded[fn] {
			return
		}
		folded[fn] = true
		// The graph's order of edges is not the source's (removing the
		// synthetic nodes appends edges in map order): sort them.
		es := slices.Clone(n.Out)
		slices.SortStableFunc(es, func(a, b *callgraph.Edge) int {
			return cmp.Or(cmp.Compare(a.Site.Pos(), b.Site.Pos()), cmp.Compare(name(a.Callee.Func), name(b.Callee.Func)))
		})
		for _, e := range es {
			g := e.Callee.Func
			if !w.follows(g) || w.cuts(fn, g) {
				continue
			}
			pos := e.Site.Pos()
			if w.ran != nil && (pos.IsValid() && !w.ran(pos, pos) || !w.bodyRan(g)) {
				continue
			}
			if at.IsValid() {
				pos = at
			}
			if w.folds(g) {
				add(g, pos)
				continue
			}
			out = append(out, callee{pos: pos, idx: len(out), fn: g})
		}
	}
	add(fn, token.NoPos)
	slices.SortStableFunc(out, func(a, b callee) int {
		return cmp.Or(cmp.Compare(a.pos, b.pos), cmp.Compare(a.idx, b.idx))
	})
	return out
}

// bodyRan reports whether g's body ran, by the coverage profile (a call
// resolved through an interface or a function value may not be one that
// happened).
func (w *walker) bodyRan(g *ssa.Function) bool {
	syn := key(g).Syntax()
	if syn == nil {
		return true
	}
	return w.ran(syn.Pos(), syn.End())
}

// follows reports whether the walk enters g: a function of the module,
// in -only's packages, not in -skip.
func (w *walker) follows(g *ssa.Function) bool {
	if !inModule(g) {
		return false
	}
	if w.o.skip != "" {
		k := key(g)
		for k.Parent() != nil {
			k = k.Parent()
		}
		if slices.Contains(strings.Split(w.o.skip, ","), name(k)) {
			return false
		}
	}
	if w.o.only != "" {
		p := strings.TrimPrefix(strings.TrimPrefix(key(g).Pkg.Pkg.Path(), module), "/")
		if p == "" {
			p = "orch"
		}
		ok := false
		for _, pat := range strings.Split(w.o.only, ",") {
			if m, _ := path.Match(pat, p); m {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// cuts reports whether -cut removes the calls from caller to g.
func (w *walker) cuts(caller, g *ssa.Function) bool {
	if len(w.o.cut) == 0 {
		return false
	}
	c := key(caller)
	for c.Parent() != nil {
		c = c.Parent()
	}
	for _, e := range w.o.cut {
		from, to, _ := strings.Cut(e, ">")
		if from == name(c) && to == name(g) {
			return true
		}
	}
	return false
}

// folds reports whether g is no stop of its own: its calls are made at
// the site calling it.
func (w *walker) folds(g *ssa.Function) bool {
	k := key(g)
	if w.o.closures && k.Parent() != nil {
		return true
	}
	if w.o.exported {
		for k.Parent() != nil {
			k = k.Parent()
		}
		return !token.IsExported(k.Name())
	}
	return false
}

func (w *walker) visit(fn *ssa.Function) {
	k := key(fn)
	first := !w.visited[k]
	w.visited[k] = true
	depth := len(w.stack)
	if !first && w.o.depth == 0 && !w.o.revisits {
		return
	}
	w.stops = append(w.stops, stop{fn: fn, file: w.file(fn), depth: depth})
	if w.o.depth > 0 && depth >= w.o.depth || w.o.depth == 0 && !first {
		return
	}
	w.stack = append(w.stack, k)
	seen := map[*ssa.Function]bool{}
	for _, c := range w.callees(fn) {
		ck := key(c.fn)
		if seen[ck] || slices.Contains(w.stack, ck) {
			continue // a second site calling the same function, or recursion
		}
		seen[ck] = true
		w.visit(c.fn)
	}
	w.stack = w.stack[:len(w.stack)-1]
}
