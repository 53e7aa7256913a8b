package gitstore

import (
	"slices"
	"sort"
	"strings"
)

// indexSet is the view's sync index: the entries of the loaded base file,
// in path order as it stores them, and those made since (by the journal's
// replay or by this command) in a map. The reconcile looks up every file
// of a directory in order, which walks the base instead of hashing 10,000
// paths into a map at load and again at each lookup.
type indexSet struct {
	base  []indexRec
	added map[string]*indexEntry // by path; each replaces a base entry, if any
	n     int                    // live entries
}

type indexRec struct {
	path string
	indexEntry
	gone bool // dropped or replaced by an added entry since the base was read
}

// find returns the base record of p, live or not.
func (s *indexSet) find(p string) *indexRec {
	i := sort.Search(len(s.base), func(i int) bool { return s.base[i].path >= p })
	if i < len(s.base) && s.base[i].path == p {
		return &s.base[i]
	}
	return nil
}

// get returns the entry of path p, nil if there is none.
func (s *indexSet) get(p string) *indexEntry {
	if ie := s.added[p]; ie != nil {
		return ie
	}
	if r := s.find(p); r != nil && !r.gone {
		return &r.indexEntry
	}
	return nil
}

// put adds or replaces the entry of p.
func (s *indexSet) put(p string, ie *indexEntry) {
	if s.added[p] == nil {
		if r := s.find(p); r != nil && !r.gone {
			r.gone = true
		} else {
			s.n++
		}
	}
	if s.added == nil {
		s.added = map[string]*indexEntry{}
	}
	s.added[p] = ie
}

// drop removes the entry of p, if there is one.
func (s *indexSet) drop(p string) {
	if s.added[p] != nil {
		delete(s.added, p)
		s.n--
		return
	}
	if r := s.find(p); r != nil && !r.gone {
		r.gone = true
		s.n--
	}
}

// each calls fn for every entry: the base's in path order, then the others.
func (s *indexSet) each(fn func(p string, ie *indexEntry)) {
	for i := range s.base {
		if r := &s.base[i]; !r.gone {
			fn(r.path, &r.indexEntry)
		}
	}
	for p, ie := range s.added {
		fn(p, ie)
	}
}

// sorted calls fn for every entry in path order (for writing a base).
func (s *indexSet) sorted(fn func(p string, ie *indexEntry)) {
	extra := make([]string, 0, len(s.added))
	for p := range s.added {
		extra = append(extra, p)
	}
	slices.Sort(extra)
	j := 0
	for i := range s.base {
		r := &s.base[i]
		if r.gone {
			continue
		}
		for j < len(extra) && extra[j] < r.path {
			fn(extra[j], s.added[extra[j]])
			j++
		}
		fn(r.path, &r.indexEntry)
	}
	for _, p := range extra[j:] {
		fn(p, s.added[p])
	}
}

// indexCursor looks up the entries of one directory by name in increasing
// order, walking the base: no path is built or hashed unless the entry is
// not a live base one.
type indexCursor struct {
	set    *indexSet
	prefix string // "dir/", or "" for the root
	i      int
	buf    []byte
}

// cursor returns a cursor for the entries of dir, from name from on.
func (s *indexSet) cursor(dir, from string) *indexCursor {
	c := &indexCursor{set: s}
	if dir != "" {
		c.prefix = dir + "/"
	}
	first := c.prefix + from
	c.i = sort.Search(len(s.base), func(i int) bool { return s.base[i].path >= first })
	return c
}

// get returns the entry of the directory's name; names must come in
// increasing order.
func (c *indexCursor) get(name string) *indexEntry {
	b := c.set.base
	for c.i < len(b) {
		p := b[c.i].path
		if !strings.HasPrefix(p, c.prefix) || c.prefix == "" && strings.Contains(p, "/") {
			if p < c.prefix+name {
				c.i++
				continue
			}
			break
		}
		if rest := p[len(c.prefix):]; rest < name {
			c.i++
			continue
		} else if rest == name && !b[c.i].gone {
			return &b[c.i].indexEntry
		}
		break
	}
	if len(c.set.added) == 0 {
		return nil
	}
	c.buf = append(append(c.buf[:0], c.prefix...), name...)
	return c.set.added[string(c.buf)]
}
