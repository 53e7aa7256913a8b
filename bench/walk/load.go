package main

import (
	"fmt"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/cha"
	"golang.org/x/tools/go/callgraph/static"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

type program struct {
	root   string
	prog   *ssa.Program
	graphs map[string]*callgraph.Graph
	covers map[string]func(from, to token.Pos) bool
}

func load(root string) (*program, error) {
	if root == "" {
		var err error
		if root, err = findRoot(); err != nil {
			return nil, err
		}
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if module = modulePath(root); module == "" {
		return nil, fmt.Errorf("%s has no go.mod", root)
	}
	cfg := &packages.Config{Mode: packages.LoadSyntax, Dir: root}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		return nil, fmt.Errorf("%d errors loading the packages", n)
	}
	prog, _ := ssautil.Packages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	return &program{root: root, prog: prog, graphs: map[string]*callgraph.Graph{}, covers: map[string]func(from, to token.Pos) bool{}}, nil
}

func (p *program) graph(kind string) (*callgraph.Graph, error) {
	if cg := p.graphs[kind]; cg != nil {
		return cg, nil
	}
	var cg *callgraph.Graph
	switch kind {
	case "static":
		cg = static.CallGraph(p.prog)
	case "cha":
		cg = cha.CallGraph(p.prog)
	case "vta":
		cg = vta.CallGraph(ssautil.AllFunctions(p.prog), cha.CallGraph(p.prog))
	default:
		return nil, fmt.Errorf("-graph %q: static, cha or vta", kind)
	}
	cg.DeleteSyntheticNodes()
	p.graphs[kind] = cg
	return cg, nil
}

// walk returns the stops of o's walk.
func (p *program) walk(o options) ([]stop, error) {
	cg, err := p.graph(o.graph)
	if err != nil {
		return nil, err
	}
	var entry *ssa.Function
	for fn := range ssautil.AllFunctions(p.prog) {
		if inModule(fn) && fn.Parent() == nil && fn.Origin() == nil && name(fn) == o.entry {
			entry = fn
		}
	}
	if entry == nil {
		return nil, fmt.Errorf("no function %s", o.entry)
	}
	w := &walker{o: o, root: p.root, fset: p.prog.Fset, cg: cg, visited: map[*ssa.Function]bool{}}
	if o.cover != "" {
		ran, err := p.coverage(o.cover)
		if err != nil {
			return nil, err
		}
		w.ran = ran
	}
	w.visit(entry)
	return w.stops, nil
}

func inModule(fn *ssa.Function) bool {
	if fn.Pkg == nil {
		if o := fn.Origin(); o != nil {
			fn = o
		}
	}
	if fn.Pkg == nil {
		return false
	}
	p := fn.Pkg.Pkg.Path()
	return p == module || strings.HasPrefix(p, module+"/")
}

// name is a function's name as package (relative to the module) . name.
func name(fn *ssa.Function) string {
	if o := fn.Origin(); o != nil {
		fn = o
	}
	p := strings.TrimPrefix(strings.TrimPrefix(fn.Pkg.Pkg.Path(), module), "/")
	if p == "" {
		p = "orch"
	}
	return p + "." + fn.RelString(fn.Pkg.Pkg)
}

// short is a function's name without its package.
func short(fn *ssa.Function) string {
	if o := fn.Origin(); o != nil {
		fn = o
	}
	return fn.RelString(fn.Pkg.Pkg)
}

func key(fn *ssa.Function) *ssa.Function {
	if o := fn.Origin(); o != nil {
		return o
	}
	return fn
}

// block is a run of source a coverage profile counted.
type block struct{ l0, c0, l1, c1 int }

func (b block) holds(l, c int) bool {
	return (l > b.l0 || l == b.l0 && c >= b.c0) && (l < b.l1 || l == b.l1 && c <= b.c1)
}

// coverage reads a coverage profile (go tool covdata textfmt) and returns
// whether a call site, or a function's body, ran.
func (p *program) coverage(profile string) (func(from, to token.Pos) bool, error) {
	if ran := p.covers[profile]; ran != nil {
		return ran, nil
	}
	data, err := os.ReadFile(profile)
	if err != nil {
		return nil, err
	}
	blocks := map[string][]block{} // by file, relative to the root: the blocks that ran
	for i, line := range strings.Split(string(data), "\n") {
		if i == 0 || line == "" {
			continue // mode: ...
		}
		var file string
		var b block
		var stmts, count int
		at := strings.LastIndex(line, ":")
		if at < 0 {
			return nil, fmt.Errorf("%s:%d: no file:block", profile, i+1)
		}
		file = line[:at]
		if _, err := fmt.Sscanf(line[at+1:], "%d.%d,%d.%d %d %d", &b.l0, &b.c0, &b.l1, &b.c1, &stmts, &count); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", profile, i+1, err)
		}
		if count > 0 {
			rel := strings.TrimPrefix(strings.TrimPrefix(file, module), "/")
			blocks[rel] = append(blocks[rel], b)
		}
	}
	// ran reports whether a block that ran holds from (from == to: a call
	// site) or starts between from and to (a function's extent).
	ran := func(from, to token.Pos) bool {
		a, z := p.prog.Fset.Position(from), p.prog.Fset.Position(to)
		rel, err := filepath.Rel(p.root, a.Filename)
		if err != nil {
			return false
		}
		for _, b := range blocks[filepath.ToSlash(rel)] {
			if from == to && b.holds(a.Line, a.Column) || from != to && (block{a.Line, a.Column, z.Line, z.Column}).holds(b.l0, b.c0) {
				return true
			}
		}
		return false
	}
	p.covers[profile] = ran
	return ran, nil
}
