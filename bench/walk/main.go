// Command walk follows the coordinator's claim through orch's static call
// graph and counts how often the walk returns to a file it had left
// (bench/README.md, "The claim's walk"; make walk, make walk-ran).
//
// The walk: from the entry function (-entry, by default the coordinator's
// (*engineQueue).Claim in coordinator/engine.go), depth first, each
// function's call sites in source order (a site calling several functions,
// through an interface or a function value, takes them in order of name),
// only functions of the module walked (not the standard library's nor the
// dependencies'), each function expanded once, at its first visit. A stop
// is a function at its first visit, placed in its file; a closure is a
// stop of its own (in its enclosing function's file), the wrappers the
// compiler makes are passed through, a generic function is one stop for
// all its instances. A return is a stop in a file visited before, but not
// the file of the stop just before it.
//
// -graph says which calls are followed: static (only calls whose callee
// is known at compile time: the definition), vta or cha (calls through
// interfaces and function values too, resolved by variable type or class
// hierarchy analysis). -cover PROFILE follows only the call sites, and
// enters only the functions, that ran in a coverage profile (claim/ makes
// one of a real claim). -variants prints the figures of the definition's
// variants.
//
// To see a move's effect before making it: -merge a.go,b.go=c.go treats
// files as one, -move pkg.f=file.go a function (with its closures) as in
// another file, -cut caller>callee a call as gone, -by package counts
// packages instead of files; -suggest N looks for the N single-function
// moves, one after another, that save the most returns.
//
// The tool has a go.mod of its own so that orch's go.mod does not gain
// golang.org/x/tools.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

type merges []string

func (m *merges) String() string { return strings.Join(*m, " ") }

func (m *merges) Set(s string) error { *m = append(*m, s); return nil }

type options struct {
	entry    string
	graph    string
	by       string
	merge    merges
	move     merges
	cut      merges
	cover    string
	depth    int
	revisits bool
	closures bool
	exported bool
	skip     string
	only     string
}

func main() {
	var o options
	root := flag.String("root", "", "the orch checkout (default: the nearest directory up from here whose go.mod is orch's)")
	flag.StringVar(&o.entry, "entry", "coordinator.(*engineQueue).Claim", "the function the walk starts at: package (relative to the module) . function")
	flag.StringVar(&o.graph, "graph", "static", "the calls followed: static, cha or vta")
	flag.StringVar(&o.by, "by", "file", "what a stop is counted by: file or package")
	flag.Var(&o.merge, "merge", "files treated as one: a.go,b.go=c.go (paths from the root, path.Match patterns allowed; repeatable)")
	flag.Var(&o.move, "move", "functions treated as in another file: pkg.f,pkg.(*T).m=dir/file.go (named as -entry; a function's closures go with it; repeatable)")
	flag.Var(&o.cut, "cut", "calls not followed, to see the effect of a call removed: caller>callee (named as -entry; repeatable)")
	flag.StringVar(&o.cover, "cover", "", "variant: a coverage profile (go tool covdata textfmt) of a claim: only the call sites that ran are followed (see claim/)")
	flag.IntVar(&o.depth, "depth", 0, "variant: expand a function at every visit, down to this depth (0: each function once)")
	flag.BoolVar(&o.revisits, "revisits", false, "variant: a call to a function visited before is a stop too (not expanded again)")
	flag.BoolVar(&o.closures, "fold-closures", false, "variant: a closure is no stop of its own; its calls are its enclosing function's")
	flag.BoolVar(&o.exported, "exported", false, "variant: only exported functions are stops; an unexported one's calls are its caller's")
	flag.StringVar(&o.skip, "skip", "", "variant: functions (comma-separated, named as -entry) the walk does not enter")
	flag.StringVar(&o.only, "only", "", "variant: the packages (comma-separated, relative to the module, path.Match patterns) the walk stays in")
	top := flag.Int("top", 10, "how many back-and-forth pairs to print")
	funcs := flag.Int("funcs", 0, "for the first N pairs, list their returns: the stop before, then the stop returning (file:function)")
	stops := flag.Bool("stops", false, "print every stop (R marks a return)")
	sug := flag.Int("suggest", 0, "look for N moves of one function each (to another file of its package) that save the most returns, one after another")
	variants := flag.Bool("variants", false, "print the figures of the definition's variants, one a line")
	flag.Parse()
	if err := run(*root, o, *top, *funcs, *sug, *stops, *variants); err != nil {
		fmt.Fprintln(os.Stderr, "walk:", err)
		os.Exit(1)
	}
}

// orchModule is the module whose checkout the walk looks for by default.
const orchModule = "github.com/orch-tool/orch"

// module is the path of the module walked (read from the root's go.mod):
// the walk stays in its packages.
var module = orchModule

// modulePath reads the module path from dir's go.mod ("" when none).
func modulePath(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	return ""
}

// findRoot is the nearest directory up from here whose go.mod is orch's.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for modulePath(dir) != orchModule {
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no go.mod of %s above here: say -root", orchModule)
		}
		dir = up
	}
	return dir, nil
}

func run(root string, o options, top, funcs, sug int, stops, variants bool) error {
	p, err := load(root)
	if err != nil {
		return err
	}
	if variants {
		return p.variants(o)
	}
	ss, err := p.walk(o)
	if err != nil {
		return err
	}
	rs, err := mapping(o.merge)
	if err != nil {
		return err
	}
	r, err := measure(ss, o, rs)
	if err != nil {
		return err
	}
	if stops {
		r.printStops(ss)
	}
	r.print(o, top, funcs)
	if sug > 0 {
		printSuggestions(p.root, ss, r, sug)
	}
	return nil
}

func (o options) String() string {
	s := "graph " + o.graph + ", by " + o.by
	if o.depth > 0 {
		s += fmt.Sprintf(", every visit to depth %d", o.depth)
	}
	if o.revisits {
		s += ", revisits are stops"
	}
	if o.closures {
		s += ", closures folded"
	}
	if o.skip != "" {
		s += ", skip " + o.skip
	}
	if o.only != "" {
		s += ", only " + o.only
	}
	for _, m := range o.merge {
		s += ", merge " + m
	}
	for _, m := range o.move {
		s += ", move " + m
	}
	for _, m := range o.cut {
		s += ", cut " + m
	}
	if o.cover != "" {
		s += ", the calls that ran in " + o.cover
	}
	return s
}
