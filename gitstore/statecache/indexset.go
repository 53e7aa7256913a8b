package statecache

import (
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// IndexEntry is the view's sync index for one path: the blob last written to
// or read from the view, and the file's stat data at that moment.
type IndexEntry struct {
	Blob  plumbing.Hash
	Size  int64
	Mtime int64 // in nanoseconds, as Ctime
	Ctime int64
	Ino   uint64
	Racy  bool            // stat taken too close to a write to be trusted
	Prev  []plumbing.Hash // older blobs this path had in the view, newest first
	// ConflictW and ConflictR are set while the view file is in conflict:
	// the view's and the branch's blobs when the conflict was found.
	ConflictW, ConflictR plumbing.Hash

	raw []byte // its encoding when read (journal.go compares to find changes)
}

// MarkChanged notes that the entry was changed in place, for Save: an
// entry is saved when it was put or marked since it was loaded.
func (ie *IndexEntry) MarkChanged() { ie.raw = nil }

// Index is the view's sync index: the entries of the loaded base file,
// in path order as it stores them, and those made since (by the journal's
// replay or by this command) in a map. The reconcile looks up every file
// of a directory in order, which walks the base instead of hashing 10,000
// paths into a map at load and again at each lookup.
type Index struct {
	base  []indexRec
	added map[string]*IndexEntry // by path; each replaces a base entry, if any
	n     int                    // live entries
}

type indexRec struct {
	path string
	IndexEntry
	gone bool // dropped or replaced by an added entry since the base was read
}

// find returns the base record of p, live or not.
func (s *Index) find(p string) *indexRec {
	i := sort.Search(len(s.base), func(i int) bool { return s.base[i].path >= p })
	if i < len(s.base) && s.base[i].path == p {
		return &s.base[i]
	}
	return nil
}

// Len is the number of entries.
func (s *Index) Len() int { return s.n }

// Get returns the entry of path p, nil if there is none.
func (s *Index) Get(p string) *IndexEntry {
	if ie := s.added[p]; ie != nil {
		return ie
	}
	if r := s.find(p); r != nil && !r.gone {
		return &r.IndexEntry
	}
	return nil
}

// put adds or replaces the entry of p.
func (s *Index) put(p string, ie *IndexEntry) {
	if s.added[p] == nil {
		if r := s.find(p); r != nil && !r.gone {
			r.gone = true
		} else {
			s.n++
		}
	}
	if s.added == nil {
		s.added = map[string]*IndexEntry{}
	}
	s.added[p] = ie
}

// drop removes the entry of p, if there is one.
func (s *Index) drop(p string) {
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

// Each calls fn for every entry: the base's in path order, then the others.
func (s *Index) Each(fn func(p string, ie *IndexEntry)) {
	for i := range s.base {
		if r := &s.base[i]; !r.gone {
			fn(r.path, &r.IndexEntry)
		}
	}
	for p, ie := range s.added {
		fn(p, ie)
	}
}

// sorted calls fn for every entry in path order (for writing a base).
func (s *Index) sorted(fn func(p string, ie *IndexEntry)) {
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
		fn(r.path, &r.IndexEntry)
	}
	for _, p := range extra[j:] {
		fn(p, s.added[p])
	}
}

// IndexCursor looks up the entries of one directory by name in increasing
// order, walking the base: no path is built or hashed unless the entry is
// not a live base one.
type IndexCursor struct {
	set    *Index
	prefix string // "dir/", or "" for the root
	i      int
	buf    []byte
}

// Cursor returns a cursor for the entries of dir, from name from on.
func (s *Index) Cursor(dir, from string) *IndexCursor {
	c := &IndexCursor{set: s}
	if dir != "" {
		c.prefix = dir + "/"
	}
	first := c.prefix + from
	c.i = sort.Search(len(s.base), func(i int) bool { return s.base[i].path >= first })
	return c
}

// Get returns the entry of the directory's name; names must come in
// increasing order.
func (c *IndexCursor) Get(name string) *IndexEntry {
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
			return &b[c.i].IndexEntry
		}
		break
	}
	if len(c.set.added) == 0 {
		return nil
	}
	c.buf = append(append(c.buf[:0], c.prefix...), name...)
	return c.set.added[string(c.buf)]
}
