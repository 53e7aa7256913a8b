package main

import (
	"bufio"
	"cmp"
	"fmt"
	"go/build/constraint"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/ssa"
)

// returnsOf counts the returns of a walk whose stops are in units.
func returnsOf(units []string) int {
	seen := map[string]bool{}
	n := 0
	for i, u := range units {
		if i > 0 && u != units[i-1] && seen[u] {
			n++
		}
		seen[u] = true
	}
	return n
}

// top is a function with its closures: what a move takes along.
func top(fn *ssa.Function) *ssa.Function {
	k := key(fn)
	for k.Parent() != nil {
		k = k.Parent()
	}
	return k
}

// suggestion is one function moved to another file of its package.
type suggestion struct {
	fn    *ssa.Function
	from  string
	to    string
	saves int
}

// constraints says under which build constraints a file compiles: its
// //go:build line and the _GOOS or _GOARCH of its name. A function moves
// only between files of the same constraints (getLease of swap_linux.go
// has a twin in swap_other.go).
type constraints struct {
	root  string
	known map[string]string
}

func (c *constraints) of(file string) string {
	if k, ok := c.known[file]; ok {
		return k
	}
	k := ""
	base := strings.TrimSuffix(path.Base(file), ".go")
	if i := strings.Index(base, "_"); i >= 0 {
		k = base[i:] // names_linux, fstatat_linux_amd64, proc_other: the tags of the name, or a twin's
	}
	if f, err := os.Open(filepath.Join(c.root, file)); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if constraint.IsGoBuild(line) {
				k += " " + line
			}
			if strings.HasPrefix(line, "package ") {
				break
			}
		}
		f.Close()
	}
	c.known[file] = k
	return k
}

// suggest looks for the moves of one function at a time (with its
// closures, to a file of the same package that a stop next to one of its
// stops is in) that save the most returns, n times over, each move made
// before the next is looked for: candidates for a person to judge, not a
// plan.
func suggest(root string, ss []stop, units []string, n int) []suggestion {
	cons := &constraints{root: root, known: map[string]string{}}
	units = slices.Clone(units)
	stopsOf := map[*ssa.Function][]int{}
	var fns []*ssa.Function
	for i, s := range ss {
		k := top(s.fn)
		if stopsOf[k] == nil {
			fns = append(fns, k)
		}
		stopsOf[k] = append(stopsOf[k], i)
	}
	var out []suggestion
	for len(out) < n {
		base := returnsOf(units)
		best := suggestion{}
		for _, fn := range fns {
			idx := stopsOf[fn]
			from := units[idx[0]]
			var targets []string
			for _, i := range idx {
				for _, j := range []int{i - 1, i + 1} {
					if j >= 0 && j < len(units) && units[j] != from && path.Dir(units[j]) == path.Dir(from) && cons.of(units[j]) == cons.of(from) && !slices.Contains(targets, units[j]) {
						targets = append(targets, units[j])
					}
				}
			}
			slices.Sort(targets)
			for _, to := range targets {
				for _, i := range idx {
					units[i] = to
				}
				if saves := base - returnsOf(units); saves > best.saves || saves == best.saves && saves > 0 && cmp.Compare(name(fn), name(best.fn)) < 0 {
					best = suggestion{fn: fn, from: from, to: to, saves: saves}
				}
				for _, i := range idx {
					units[i] = from
				}
			}
		}
		if best.saves <= 0 {
			break
		}
		for _, i := range stopsOf[best.fn] {
			units[i] = best.to
		}
		out = append(out, best)
	}
	return out
}

func printSuggestions(root string, ss []stop, r *result, n int) {
	total := r.returns
	for _, s := range suggest(root, ss, r.units, n) {
		total -= s.saves
		fmt.Printf("move %s (%s) to %s: saves %d, returns %d\n", name(s.fn), s.from, s.to, s.saves, total)
	}
}
