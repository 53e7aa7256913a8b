package statecache

import (
	"slices"
	"sort"
	"strings"
	"sync/atomic"

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
// of a directory in order, which walks the base instead of hashing every
// path into a map at load and again at each lookup.
//
// A base entry stays encoded in the file's bytes until Get gives it out:
// the reconcile compares every entry's stat data once (through a cursor,
// which decodes into scratch) and changes a few, and decoding them all
// held the heap for that one comparison.
type Index struct {
	base  []indexRec
	buf   []byte                 // the base file's bytes, which base's offsets are into
	added map[string]*IndexEntry // by path; each replaces a base entry, if any
	n     int                    // live entries
}

type indexRec struct {
	path string
	// ie is the entry decoded, once Get gave it out; nil: as encoded at
	// off in buf. Atomic because an optimistic command compares the view
	// with the index on another goroutine (gitstore's Defer) while its
	// body may read an entry through Get, which decodes it here: nothing
	// changes an entry until Settle has waited for that comparison, so
	// the other goroutine reads either the bytes or the same values decoded.
	ie   atomic.Pointer[IndexEntry]
	off  uint32
	gone bool // dropped or replaced by an added entry since the base was read
}

// entry returns the base record's entry, decoding it for good.
func (s *Index) entry(r *indexRec) *IndexEntry {
	if ie := r.ie.Load(); ie != nil {
		return ie
	}
	ie := &IndexEntry{}
	s.decodeAt(r, ie)
	if !r.ie.CompareAndSwap(nil, ie) {
		return r.ie.Load() // decoded by another reader first: one entry for all
	}
	return ie
}

// decodeAt decodes the base record's entry into ie (the base was checked
// as it was loaded: it decodes).
func (s *Index) decodeAt(r *indexRec, ie *IndexEntry) {
	d := dec{buf: s.buf, pos: int(r.off)}
	decodeIndexEntry(&d, ie)
}

// view is the base record's entry to read, not to keep or change: the
// decoded one, or the entry decoded into scratch.
func (s *Index) view(r *indexRec, scratch *IndexEntry) *IndexEntry {
	if ie := r.ie.Load(); ie != nil {
		return ie
	}
	s.decodeAt(r, scratch)
	return scratch
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
		return s.entry(r)
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

// PutIndex adds or replaces the sync-index entry of path p.
func (c *Cache) PutIndex(p string, ie *IndexEntry) { c.Index.put(p, ie) }

// DropIndex removes the sync-index entry of path p.
func (c *Cache) DropIndex(p string) {
	c.Index.drop(p)
	c.delIndex[p] = true
}

// Each calls fn for every entry: the base's in path order, then the others.
// It decodes every base entry for good (fn may keep or change one).
func (s *Index) Each(fn func(p string, ie *IndexEntry)) {
	for i := range s.base {
		if r := &s.base[i]; !r.gone {
			fn(r.path, s.entry(r))
		}
	}
	for p, ie := range s.added {
		fn(p, ie)
	}
}

// eachDecoded calls fn for the entries that may have changed since the
// base was read: the added ones and the base's decoded ones (one still
// encoded was never given out to be changed).
func (s *Index) eachDecoded(fn func(p string, ie *IndexEntry)) {
	for i := range s.base {
		if r := &s.base[i]; !r.gone {
			if ie := r.ie.Load(); ie != nil {
				fn(r.path, ie)
			}
		}
	}
	for p, ie := range s.added {
		fn(p, ie)
	}
}

// sorted calls fn for every entry in path order (for writing a base); an
// entry it gives may be scratch, valid until fn returns.
func (s *Index) sorted(fn func(p string, ie *IndexEntry)) {
	var scratch IndexEntry
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
		fn(r.path, s.view(r, &scratch))
	}
	for _, p := range extra[j:] {
		fn(p, s.added[p])
	}
}

// IndexCursor looks up the entries of one directory by name in increasing
// order, walking the base: no path is built or hashed unless the entry is
// not a live base one. What it gives is for comparing: it may be scratch,
// valid until the next Get; the entry to change is Index.Get's.
type IndexCursor struct {
	set     *Index
	prefix  string // "dir/", or "" for the root
	i       int
	buf     []byte
	scratch IndexEntry
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
			return c.set.view(&b[c.i], &c.scratch)
		}
		break
	}
	if len(c.set.added) == 0 {
		return nil
	}
	c.buf = append(append(c.buf[:0], c.prefix...), name...)
	return c.set.added[string(c.buf)]
}
