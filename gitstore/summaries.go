package gitstore

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/taskfile"
)

// SummaryHeader is the part of a task's summary the state cache decodes up
// front: its path, and of the task what claim order sorts by. Store.Loaded
// gives the whole summary.
type SummaryHeader struct {
	Path     string
	ID       string
	Queue    taskfile.Queue
	Priority string
	Created  time.Time

	rec *sumRec
}

// sumRec is one task summary as the state cache holds it. A loaded cache
// decodes only each record's header; the rest stays as bytes in the mapped
// file until a command asks for the summary. A transition at 10,000 tasks
// uses a handful of summaries, and decoding every one into a Summary (448
// bytes each, 4.5 MB of fresh memory faulted in page by page) was the
// largest part of loading the cache.
type sumRec struct {
	SummaryHeader
	blob plumbing.Hash
	raw  []byte   // its encoding in the loaded cache or journal; nil when put since
	s    *Summary // decoded (or put) whole
	gone bool     // replaced or dropped since it was put
}

func newSumRec(s *Summary) *sumRec {
	r := &sumRec{blob: s.Blob, s: s}
	r.SummaryHeader = SummaryHeader{Path: s.Path, ID: s.Task.ID, Queue: s.Task.Queue, Priority: s.Task.Priority, Created: s.Task.Created, rec: r}
	return r
}

// summary returns the whole summary, decoding it on first use.
func (r *sumRec) summary() *Summary {
	if r.s == nil {
		s := &Summary{}
		d := &dec{buf: r.raw}
		decodeSummary(d, s)
		if d.err != nil {
			// The file's checksum matched, so this cannot happen short
			// of a bug; say so rather than hand out half a task.
			s = &Summary{Path: r.Path, Blob: r.blob, Problem: "orch's state cache is corrupt (run orch doctor --fix)"}
		}
		r.s = s
	}
	return r.s
}

// summarySet is the cache's task summaries: the records of the base file,
// in path order as it stores them (looked up by binary search: building a
// 10,000-entry map cost more than a command's lookups), and those put since
// (by the journal's replay or by this command).
type summarySet struct {
	base    []sumRec
	added   []*sumRec
	addedBy map[string]*sumRec // the live records of added, by path
	n       int                // live records

	addedIDs   map[string][]*sumRec // the records of added by id (see byNamedID)
	addedIDsOf int                  // len(added) when addedIDs was made
}

// get returns the live record of path.
func (ss *summarySet) get(path string) *sumRec {
	if r := ss.addedBy[path]; r != nil {
		return r
	}
	i := sort.Search(len(ss.base), func(i int) bool { return ss.base[i].Path >= path })
	if i < len(ss.base) && ss.base[i].Path == path && !ss.base[i].gone {
		return &ss.base[i]
	}
	return nil
}

// put adds or replaces the record of r.Path.
func (ss *summarySet) put(r *sumRec) {
	if old := ss.get(r.Path); old != nil {
		old.gone = true
	} else {
		ss.n++
	}
	if ss.addedBy == nil {
		ss.addedBy = map[string]*sumRec{}
	}
	ss.added = append(ss.added, r)
	ss.addedBy[r.Path] = r
}

// drop removes the record of path; it reports whether there was one.
func (ss *summarySet) drop(path string) bool {
	old := ss.get(path)
	if old == nil {
		return false
	}
	old.gone = true
	ss.n--
	delete(ss.addedBy, path)
	return true
}

// each calls fn for every live record: the base's in path order, then the
// others in the order they were put.
func (ss *summarySet) each(fn func(*sumRec)) {
	for i := range ss.base {
		if r := &ss.base[i]; !r.gone {
			fn(r)
		}
	}
	for _, r := range ss.added {
		if !r.gone {
			fn(r)
		}
	}
}

// sorted returns every live record in path order (for writing a base).
func (ss *summarySet) sorted() []*sumRec {
	var extra []*sumRec
	for _, r := range ss.added {
		if !r.gone {
			extra = append(extra, r)
		}
	}
	slices.SortFunc(extra, func(a, b *sumRec) int { return strings.Compare(a.Path, b.Path) })
	out := make([]*sumRec, 0, ss.n)
	j := 0
	for i := range ss.base {
		r := &ss.base[i]
		if r.gone {
			continue
		}
		for j < len(extra) && extra[j].Path < r.Path {
			out = append(out, extra[j])
			j++
		}
		out = append(out, r)
	}
	return append(out, extra[j:]...)
}

// holdsID reports whether r holds its id against found so far: of files
// sharing an id, the one with the smallest path does.
func holdsID(r, found *sumRec) bool {
	return found == nil || r.Path < found.Path
}

// byID returns the record with this id, by a walk over all of them.
func (ss *summarySet) byID(id string) *sumRec {
	var found *sumRec
	ss.each(func(r *sumRec) {
		if r.ID == id && holdsID(r, found) {
			found = r
		}
	})
	return found
}

// namedByID reports whether every live record is in a file named after its
// id (tasks/<id>-<slug>.md or tasks/<id>.md, as orch names them), so that
// byNamedID can find a record by id in the path order.
func (ss *summarySet) namedByID() bool {
	named := true
	ss.each(func(r *sumRec) {
		if named && r.ID != "" && !fileNamedFor(r.Path, r.ID) {
			named = false
		}
	})
	return named
}

func fileNamedFor(path, id string) bool {
	const dir = TasksDir + "/"
	if len(path) <= len(dir)+len(id) || path[:len(dir)] != dir || path[len(dir):len(dir)+len(id)] != id {
		return false
	}
	rest := path[len(dir)+len(id):]
	return rest[0] == '-' || rest == ".md"
}

// byNamedID returns the record with this id when namedByID holds: the
// base's by binary search on the path, those put since by a map of them.
func (ss *summarySet) byNamedID(id string) *sumRec {
	var found *sumRec
	prefix := TasksDir + "/" + id
	for i := sort.Search(len(ss.base), func(i int) bool { return ss.base[i].Path >= prefix }); i < len(ss.base) && strings.HasPrefix(ss.base[i].Path, prefix); i++ {
		if r := &ss.base[i]; !r.gone && r.ID == id {
			found = r
			break
		}
	}
	if len(ss.added) != ss.addedIDsOf {
		ss.addedIDs = map[string][]*sumRec{}
		for _, r := range ss.added {
			ss.addedIDs[r.ID] = append(ss.addedIDs[r.ID], r)
		}
		ss.addedIDsOf = len(ss.added)
	}
	for _, r := range ss.addedIDs[id] {
		if !r.gone && holdsID(r, found) {
			found = r
		}
	}
	return found
}

// byIDMap maps every id to its record.
func (ss *summarySet) byIDMap() map[string]*sumRec {
	m := make(map[string]*sumRec, ss.n)
	ss.each(func(r *sumRec) {
		if r.ID != "" && holdsID(r, m[r.ID]) {
			m[r.ID] = r
		}
	})
	return m
}
