package statecache

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/taskfile"
)

// Summary is what orch knows about a task without reading its file again.
type Summary struct {
	Path        string
	Blob        plumbing.Hash
	Task        taskfile.Task
	Problem     string // why the committed file does not parse, if it does not
	ProblemLine int
	// Fields is the frontmatter keys orch does not know, as one JSON
	// object (taskfile.File.CustomFieldsJSON); nil when there are none.
	Fields []byte
}

// SummaryHeader is the part of a task's summary the state cache decodes up
// front: its path, and of the task what claim order sorts by. Summary gives
// the whole summary.
type SummaryHeader struct {
	Path     string
	ID       string
	Queue    taskfile.Queue
	Priority string
	Created  int64 // the task's creation time as CreatedKey gives it

	rec *Record
}

// NoCreated is the Created of a task without a creation time: it sorts
// after every other.
const NoCreated = math.MaxInt64

// CreatedKey is a creation time as a header keeps it: Unix nanoseconds (a
// third of a time.Time), clamped to the years that they reach, and
// NoCreated for the zero time.
func CreatedKey(t time.Time) int64 {
	switch sec := t.Unix(); {
	case t.IsZero():
		return NoCreated
	case sec <= math.MinInt64/int64(time.Second):
		return math.MinInt64
	case sec >= math.MaxInt64/int64(time.Second):
		return NoCreated - 1
	}
	return t.UnixNano()
}

// HeaderOf is the header of a summary held in memory (an index that is not
// the cache: the rules' unit tests).
func HeaderOf(s *Summary) *SummaryHeader { return &newRecord(s).SummaryHeader }

// Summary returns the whole summary of a header the cache gave out.
func (h *SummaryHeader) Summary() *Summary { return h.rec.Summary() }

// Read is the whole summary without making the record keep it: the one
// decoded or put already, else the summary decoded into scratch, which it
// returns. A caller that goes through thousands of tasks once (orch list
// --json) reuses one scratch instead of holding a decoded copy of each.
func (h *SummaryHeader) Read(scratch *Summary) *Summary {
	r := h.rec
	if r.s != nil {
		return r.s
	}
	t := scratch.Task
	*scratch = Summary{}
	// The lists' arrays are the scratch's to fill again, not garbage.
	scratch.Task.LockedOut, scratch.Task.WorkedBy, scratch.Task.GitHubReviews = t.LockedOut[:0], t.WorkedBy[:0], t.GitHubReviews[:0]
	scratch.Task.DependsOn, scratch.Task.Labels = t.DependsOn[:0], t.Labels[:0]
	if !r.decode(scratch) {
		*scratch = *r.corrupt()
	}
	return scratch
}

// Record is one task summary as the state cache holds it. A loaded cache
// decodes only each record's header; the rest stays as bytes in the mapped
// file until a command asks for the summary. A transition uses a handful
// of summaries, and decoding every one into a Summary (fresh memory
// faulted in page by page) was the largest part of loading the cache.
type Record struct {
	SummaryHeader
	s        *Summary // decoded (or put) whole
	rawBytes []byte   // its encoding in the loaded cache or journal (nil when put since)
	gone     bool     // replaced or dropped since it was put
}

// raw is the record's encoding, nil when it was put since.
func (r *Record) raw() []byte { return r.rawBytes }

func newRecord(s *Summary) *Record {
	r := &Record{s: s}
	r.SummaryHeader = SummaryHeader{Path: s.Path, ID: s.Task.ID, Queue: s.Task.Queue, Priority: s.Task.Priority, Created: CreatedKey(s.Task.Created), rec: r}
	return r
}

// Blob is the task file's blob the summary was made from. A loaded record
// reads it from its bytes, where it follows the path, rather than keeping
// it beside the header: only a command that refreshes the summaries after
// the branch moved asks.
func (r *Record) Blob() plumbing.Hash {
	if r.s != nil {
		return r.s.Blob
	}
	d := dec{buf: r.raw()}
	body, _, _ := d.record()
	body.str()
	return body.hash() // checked as the record was loaded
}

// Summary returns the whole summary, decoding it on first use.
func (r *Record) Summary() *Summary {
	if r.s == nil {
		s := &Summary{}
		if !r.decode(s) {
			s = r.corrupt()
		}
		r.s = s
	}
	return r.s
}

// decode decodes the record's bytes into s; false when they do not decode.
func (r *Record) decode(s *Summary) bool {
	d := &dec{buf: r.raw()}
	decodeSummary(d, s)
	return d.err == nil
}

// corrupt is the summary of a record that does not decode. The file's
// checksum matched, so this cannot happen short of a bug; say so rather
// than hand out half a task.
func (r *Record) corrupt() *Summary {
	return &Summary{Path: r.Path, Blob: r.Blob(), Problem: "orch's state cache is corrupt (run orch doctor --fix)"}
}

// Summaries is the cache's task summaries: the records of the base file,
// in path order as it stores them, looked up by binary search (building a
// map of them all cost more than a command's lookups), and those put since
// (by the journal's replay or by this command).
type Summaries struct {
	base    []Record // in path order
	added   []*Record
	addedBy map[string]*Record // the live records of added, by path
	n       int                // live records

	addedIDs   map[string][]*Record // the records of added by id (see byNamedID)
	addedIDsOf int                  // len(added) when addedIDs was made
}

// Len is the number of live records.
func (ss *Summaries) Len() int { return ss.n }

// Get returns the live record of path.
func (ss *Summaries) Get(path string) *Record {
	if r := ss.addedBy[path]; r != nil {
		return r
	}
	if i := ss.search(path); i < len(ss.base) {
		if r := &ss.base[i]; r.Path == path && !r.gone {
			return r
		}
	}
	return nil
}

// search returns the place in base of the first record whose path
// is not below path.
func (ss *Summaries) search(path string) int {
	return sort.Search(len(ss.base), func(i int) bool { return ss.base[i].Path >= path })
}

// put adds or replaces the record of r.Path.
func (ss *Summaries) put(r *Record) {
	if old := ss.Get(r.Path); old != nil {
		old.gone = true
	} else {
		ss.n++
	}
	if ss.addedBy == nil {
		ss.addedBy = map[string]*Record{}
	}
	ss.added = append(ss.added, r)
	ss.addedBy[r.Path] = r
}

// drop removes the record of path; it reports whether there was one.
func (ss *Summaries) drop(path string) bool {
	old := ss.Get(path)
	if old == nil {
		return false
	}
	old.gone = true
	ss.n--
	delete(ss.addedBy, path)
	return true
}

// PutSummary adds or replaces a summary; it returns its record.
func (c *Cache) PutSummary(s *Summary) *Record {
	r := newRecord(s)
	c.Summaries.put(r)
	return r
}

// DropSummary removes a summary.
func (c *Cache) DropSummary(p string) {
	c.Summaries.drop(p)
	c.delSummaries[p] = true
}

// Each calls fn for every live record: the base's in path order, then the
// others in the order they were put.
func (ss *Summaries) Each(fn func(*Record)) {
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

// Sorted returns every live record in path order.
func (ss *Summaries) Sorted() []*Record {
	var extra []*Record
	for _, r := range ss.added {
		if !r.gone {
			extra = append(extra, r)
		}
	}
	slices.SortFunc(extra, func(a, b *Record) int { return strings.Compare(a.Path, b.Path) })
	out := make([]*Record, 0, ss.n)
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
func holdsID(r, found *Record) bool {
	return found == nil || r.Path < found.Path
}

// ByID returns the record with this id, by a walk over all of them.
func (ss *Summaries) ByID(id string) *Record {
	var found *Record
	ss.Each(func(r *Record) {
		if r.ID == id && holdsID(r, found) {
			found = r
		}
	})
	return found
}

// NamedByID reports whether every live record is in a file of dir named
// after its id (see NamedFor), so that ByNamedID can find a record by id
// in the path order.
func (ss *Summaries) NamedByID(dir string) bool {
	named := true
	ss.Each(func(r *Record) {
		if named && r.ID != "" && !NamedFor(dir, r.Path, r.ID) {
			named = false
		}
	})
	return named
}

// NamedFor reports whether path is a file of dir named after the task id,
// as orch names task files: dir/<id>-<slug>.md or dir/<id>.md.
func NamedFor(dir, path, id string) bool {
	n := len(dir) + 1 // dir and its slash
	if len(path) <= n+len(id) || path[:len(dir)] != dir || path[len(dir)] != '/' || path[n:n+len(id)] != id {
		return false
	}
	rest := path[n+len(id):]
	return rest[0] == '-' || rest == ".md"
}

// ByNamedID returns the record with this id when NamedByID(dir) holds: the
// base's by binary search on the path, those put since by a map of them.
func (ss *Summaries) ByNamedID(dir, id string) *Record {
	var found *Record
	prefix := dir + "/" + id
	for i := ss.search(prefix); i < len(ss.base) && strings.HasPrefix(ss.base[i].Path, prefix); i++ {
		if r := &ss.base[i]; !r.gone && r.ID == id {
			found = r
			break
		}
	}
	if len(ss.added) != ss.addedIDsOf {
		ss.addedIDs = map[string][]*Record{}
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

// ByIDMap maps every id to its record.
func (ss *Summaries) ByIDMap() map[string]*Record {
	m := make(map[string]*Record, ss.n)
	ss.Each(func(r *Record) {
		if r.ID != "" && holdsID(r, m[r.ID]) {
			m[r.ID] = r
		}
	})
	return m
}
