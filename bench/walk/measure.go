package main

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
)

type rule struct {
	pats []string
	to   string
}

func mapping(ms merges) ([]rule, error) {
	var rs []rule
	for _, m := range ms {
		from, to, ok := strings.Cut(m, "=")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("-merge %q: a.go,b.go=c.go", m)
		}
		rs = append(rs, rule{pats: strings.Split(from, ","), to: to})
	}
	return rs, nil
}

func apply(rs []rule, f string) string {
	for _, r := range rs {
		for _, p := range r.pats {
			if ok, _ := path.Match(p, f); ok || p == f {
				return r.to
			}
		}
	}
	return f
}

type pair struct{ a, b string }

func (p pair) String() string { return p.a + " <-> " + p.b }

// result is what a walk measured.
type result struct {
	units   []string // each stop's file (or package), after -merge
	stops   int
	runs    int // stops with consecutive ones in the same file counted as one
	files   int
	returns int
	count   map[pair]int
	back    map[string]int // returns by the file returned to
	callers map[string]int // returns by the function whose call made them
	calls   map[pair][]string
	order   []pair // the pairs, most returns first
}

func measure(ss []stop, o options, rs []rule) (*result, error) {
	r := &result{stops: len(ss), count: map[pair]int{}, back: map[string]int{}, callers: map[string]int{}, calls: map[pair][]string{}}
	seen := map[string]bool{}
	moved, err := moves(o.move)
	if err != nil {
		return nil, err
	}
	for i, s := range ss {
		f := s.file
		k := key(s.fn)
		for k.Parent() != nil {
			k = k.Parent()
		}
		if to, ok := moved[name(k)]; ok {
			f = to
		}
		u := apply(rs, f)
		if o.by == "package" {
			u = path.Dir(u)
		}
		r.units = append(r.units, u)
		if i == 0 || u != r.units[i-1] {
			r.runs++
		}
		if i > 0 && u != r.units[i-1] && seen[u] {
			r.returns++
			r.back[u]++
			for j := i - 1; j >= 0; j-- {
				if ss[j].depth < s.depth {
					r.callers[ss[j].file+":"+short(ss[j].fn)]++
					break
				}
			}
			p := pair{r.units[i-1], u}
			if p.b < p.a {
				p = pair{u, p.a}
			}
			if r.count[p] == 0 {
				r.order = append(r.order, p)
			}
			r.count[p]++
			r.calls[p] = append(r.calls[p], fmt.Sprintf("%s:%s, then %s:%s", ss[i-1].file, short(ss[i-1].fn), s.file, short(s.fn)))
		}
		seen[u] = true
	}
	r.files = len(seen)
	slices.SortStableFunc(r.order, func(a, b pair) int { return cmp.Compare(r.count[b], r.count[a]) })
	return r, nil
}

// moves maps each function -move names to the file it is treated as in.
func moves(ms merges) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range ms {
		i := strings.LastIndex(m, "=")
		if i <= 0 || i == len(m)-1 {
			return nil, fmt.Errorf("-move %q: pkg.f,pkg.(*T).m=dir/file.go", m)
		}
		for _, f := range splitNames(m[:i]) {
			out[f] = m[i+1:]
		}
	}
	return out, nil
}

// splitNames splits a comma-separated list of function names; a comma
// inside parentheses (none in Go's names today) is no separator.
func splitNames(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func (r *result) printStops(ss []stop) {
	seen := map[string]bool{}
	for i, s := range ss {
		u := r.units[i]
		mark := " "
		if i > 0 && u != r.units[i-1] && seen[u] {
			mark = "R"
		}
		seen[u] = true
		fmt.Printf("%4d %s %s%s  %s\n", i+1, mark, strings.Repeat("  ", s.depth), name(s.fn), u)
	}
}

func (r *result) print(o options, top, funcs int) {
	fmt.Printf("stops %d, returns %d (%ss %d; %s)\n", r.stops, r.returns, o.by, r.files, o)
	for i, p := range r.order {
		if i >= top {
			break
		}
		fmt.Printf("%4d  %s\n", r.count[p], p)
		if i < funcs {
			for _, c := range r.calls[p] {
				fmt.Printf("        %s\n", c)
			}
		}
	}
	most("returned to most", r.back, top)
	most("the callers whose calls return most", r.callers, top)
}

func most(what string, m map[string]int, top int) {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	var parts []string
	for i, k := range ks {
		if i >= top {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	fmt.Printf("%s: %s\n", what, strings.Join(parts, ", "))
}
