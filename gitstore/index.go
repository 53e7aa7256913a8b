package gitstore

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
)

// This file is the store's index: the state cache's record of every task
// file (summary, blob, queue), read when the store opens and kept in step
// with each commit, so that no command reads every task file.

// load reads the index and brings it to the state branch's tip.
func (st *Store) load() error {
	if st.cache == nil {
		if l := st.early; l != nil && l.Current() {
			st.cache = l.Finish()
		} else {
			// Changed while we waited (the scan then stats the files it
			// was handed, and they are matched by name), or not read early.
			if l := st.startCache(); l != nil {
				st.cache = l.Finish()
			} else {
				st.cache = statecache.Empty(st.Ref)
			}
		}
		st.early = nil
	}
	tip, err := st.Repo.ReadRef(st.Ref)
	if err != nil {
		return err
	}
	// History only moves forward: a branch that no longer contains the tip
	// orch saw last was rewound (or rewritten) outside orch. Following it
	// silently would let a claim be taken twice and finished work reopen.
	if seen := st.cache.Tip; !seen.IsZero() && !tip.IsZero() && tip != seen && tip != st.movedTo && !st.AcceptRewind && !st.Contains(tip, seen) {
		return st.MovedBackwards(st.Ref, seen, tip)
	}
	if tip == st.cache.Tip && len(st.cache.Dirs) > 0 || tip.IsZero() && st.cache.Tip.IsZero() {
		st.snap = &Snapshot{Tip: tip, Root: st.cache.Root, dirs: st.cache.Dirs, objs: st.objs, view: st.readView}
		if tip.IsZero() {
			st.snap = emptySnapshot(st.objs)
		}
		st.expectScan()
	} else {
		snap, err := loadSnapshot(st.objs, tip, st.cache.Dirs)
		if err != nil {
			return err
		}
		snap.view = st.readView
		st.snap = snap
		st.expectScan()
		st.cache.Tip, st.cache.Root, st.cache.Dirs = snap.Tip, snap.Root, snap.dirs
		st.dirty = true
		st.refreshSummaries(nil)
		return nil
	}
	// The cache was saved with the summaries of exactly this tip; a count
	// that disagrees means it is not to be trusted.
	if st.cache.Summaries.Len() != st.countTaskFiles() {
		st.refreshSummaries(nil)
	}
	st.byID, st.named = nil, nil
	return nil
}

// expectScan tells the view scan which files the branch has: it stats them
// by name, in the order the reconcile compares them.
func (st *Store) expectScan() {
	if st.scan != nil {
		st.scan.expect(st.snap.dirs)
	}
}

func (st *Store) countTaskFiles() int {
	d := st.snap.dirs[TasksDir]
	if d == nil {
		return 0
	}
	n := 0
	for _, e := range d.Entries {
		if (e.Mode == gitrepo.ModeFile || e.Mode == gitrepo.ModeExec) && strings.HasSuffix(e.Name, ".md") {
			n++
		}
	}
	return n
}

// updateSummaries brings the summaries of the task files a commit changed
// up to date (the others cannot have changed).
func (st *Store) updateSummaries(changes []Change) {
	for _, c := range changes {
		if !strings.HasPrefix(c.Path, TasksDir+"/") || !strings.HasSuffix(c.Path, ".md") || strings.Count(c.Path, "/") != 1 {
			continue
		}
		if c.Delete {
			st.cache.DropSummary(c.Path)
			st.byID = nil
			continue
		}
		blob, _ := st.snap.Get(c.Path)
		prev := st.cache.Summaries.Get(c.Path)
		r := st.cache.PutSummary(summarize(c.Path, blob, c.Data))
		if st.named != nil && *st.named && r.ID != "" && !statecache.NamedFor(TasksDir, r.Path, r.ID) {
			st.named = nil
		}
		if st.byID != nil {
			// Keep the map (rebuilding it costs more than the commit's
			// other bookkeeping) when the file kept its id and holds it;
			// otherwise build it again when next needed.
			if holder := st.byID[r.ID]; r.ID == "" || prev == nil || prev.ID != r.ID || holder != prev {
				st.byID = nil
			} else {
				st.byID[r.ID] = r
			}
		}
	}
}

// readView returns the view's copy of path when the sync index says it holds
// blob h and its content hashes to h.
func (st *Store) readView(p string, h plumbing.Hash) ([]byte, bool) {
	if st.View == "" || !Mirrored(p) {
		return nil, false
	}
	if ie := st.cache.Index.Get(p); ie == nil || ie.Blob != h || !ie.ConflictW.IsZero() {
		return nil, false
	}
	data, err := st.ReadViewFile(p)
	if err != nil || gitrepo.HashBlob(data) != h {
		return nil, false
	}
	return data, true
}

// reload re-reads the branch tip after another writer moved it.
func (st *Store) reload() error {
	return st.load()
}

// refreshSummaries brings the task summaries in line with the snapshot,
// parsing only task files whose blob changed. changed, when given, holds the
// content of files just committed, so they need not be read back.
func (st *Store) refreshSummaries(changed map[string][]byte) {
	files := st.snap.Files(TasksDir)
	seen := make(map[string]bool, len(files))
	var read []FileEntry // files whose blob must be read
	for _, fe := range files {
		if !strings.HasSuffix(fe.Path, ".md") {
			continue
		}
		seen[fe.Path] = true
		if r := st.cache.Summaries.Get(fe.Path); r != nil && r.Blob() == fe.Blob {
			continue
		}
		if data, ok := changed[fe.Path]; ok {
			st.cache.PutSummary(summarize(fe.Path, fe.Blob, data))
			st.dirty = true
			continue
		}
		read = append(read, fe)
	}
	blobs := make([]plumbing.Hash, len(read))
	for i, fe := range read {
		blobs[i] = fe.Blob
	}
	st.objs.ReadBlobs(blobs, func(i int, data []byte, err error) {
		fe := read[i]
		if err != nil {
			st.cache.PutSummary(&Summary{Path: fe.Path, Blob: fe.Blob, Problem: err.Error()})
		} else {
			s, f := summarizeFile(fe.Path, fe.Blob, data)
			st.cache.PutSummary(s)
			if f != nil && st.Parsed != nil {
				st.Parsed(fe.Blob, f)
			}
		}
		st.dirty = true
	})
	var gone []string
	st.cache.Summaries.Each(func(r *statecache.Record) {
		if !seen[r.Path] {
			gone = append(gone, r.Path)
		}
	})
	for _, p := range gone {
		st.cache.DropSummary(p)
		st.dirty = true
	}
	st.byID, st.named = nil, nil
}

// Summary is what orch knows about a task without reading its file again,
// and SummaryHeader the part of it that claim order sorts by: the state
// cache keeps them (see statecache), the store hands them out.
type (
	Summary       = statecache.Summary
	SummaryHeader = statecache.SummaryHeader
)

// NoCreated is a header's Created when its task has no creation time.
const NoCreated = statecache.NoCreated

// CreatedKey is a creation time as a header's Created holds it.
func CreatedKey(t time.Time) int64 { return statecache.CreatedKey(t) }

func summarize(path string, blob plumbing.Hash, data []byte) *Summary {
	s, _ := summarizeFile(path, blob, data)
	return s
}

// summarizeFile is summarize, with the parsed file (nil when it does not
// parse).
func summarizeFile(path string, blob plumbing.Hash, data []byte) (*Summary, *taskfile.File) {
	s := &Summary{Path: path, Blob: blob}
	f, err := taskfile.Parse(path, data)
	if err != nil {
		var pe *taskfile.ParseError
		if errors.As(err, &pe) {
			s.Problem, s.ProblemLine = pe.Msg, pe.Line
		} else {
			s.Problem = err.Error()
		}
		return s, nil
	}
	s.Task = f.Task
	if s.Task.Priority == "" {
		s.Task.Priority = taskfile.DefaultPriority
	} else if p, ok := taskfile.NormalizePriority(s.Task.Priority); ok {
		s.Task.Priority = p
	}
	if errs := f.Validate(); len(errs) > 0 {
		s.Problem, s.ProblemLine = errs[0].Msg, errs[0].Line
	}
	return s, f
}

// Summaries returns every task on the state branch, ordered by path.
func (st *Store) Summaries() []*Summary {
	out := make([]*Summary, 0, st.cache.Summaries.Len())
	for _, r := range st.cache.Summaries.Sorted() {
		out = append(out, r.Summary())
	}
	return out
}

// SummaryCount is the number of tasks on the state branch.
func (st *Store) SummaryCount() int { return st.cache.Summaries.Len() }

// EachSummaryWhile calls fn for tasks, in no particular order, until it
// returns false; the tasks after that are not decoded.
func (st *Store) EachSummaryWhile(fn func(*Summary) bool) {
	going := true
	st.cache.Summaries.Each(func(r *statecache.Record) {
		if going {
			going = fn(r.Summary())
		}
	})
}

// EachSummaryIn calls fn for every task in one of the queues (all when
// queues is empty), in no particular order. Tasks in other queues are not
// decoded: a claim looks at the open queues, not at thousands of done tasks.
func (st *Store) EachSummaryIn(queues map[taskfile.Queue]bool, fn func(*Summary)) {
	in := queueFilter(queues)
	st.cache.Summaries.Each(func(r *statecache.Record) {
		if in(r.Queue) {
			fn(r.Summary())
		}
	})
}

// EachSummaryHeaderIn is EachSummaryIn without decoding the tasks: fn gets
// each task's header (what claim order sorts by), in no particular order;
// the header's Summary is the whole task.
func (st *Store) EachSummaryHeaderIn(queues map[taskfile.Queue]bool, fn func(*SummaryHeader)) {
	st.eachHeaderIn(queues, fn, st.cache.Summaries.Each)
}

func (st *Store) eachHeaderIn(queues map[taskfile.Queue]bool, fn func(*SummaryHeader), each func(func(*statecache.Record))) {
	in := queueFilter(queues)
	each(func(r *statecache.Record) {
		if in(r.Queue) {
			fn(&r.SummaryHeader)
		}
	})
}

// queueFilter reports whether a queue is one of queues (all when empty),
// comparing with a short list: hashing every task's queue into the map
// cost more than the walk it filters.
func queueFilter(queues map[taskfile.Queue]bool) func(taskfile.Queue) bool {
	if len(queues) == 0 {
		return func(taskfile.Queue) bool { return true }
	}
	list := make([]taskfile.Queue, 0, len(queues))
	for q, ok := range queues {
		if ok {
			list = append(list, q)
		}
	}
	return func(q taskfile.Queue) bool { return slices.Contains(list, q) }
}

// EachTaskID calls fn with every task's ID and queue, without decoding the
// rest of the task (for resolving ID prefixes).
func (st *Store) EachTaskID(fn func(id string, q taskfile.Queue)) {
	st.cache.Summaries.Each(func(r *statecache.Record) { fn(r.ID, r.Queue) })
}

// SummaryByID returns the task with exactly this id.
func (st *Store) SummaryByID(id string) *Summary {
	if r := st.recByID(id); r != nil {
		return r.Summary()
	}
	return nil
}

func (st *Store) recByID(id string) *statecache.Record {
	if id == "" {
		return nil
	}
	if st.byID != nil {
		return st.byID[id]
	}
	// When every task file is named after its id, as orch names them, an
	// id is found by binary search on the paths. Checking that walks the
	// records once.
	if st.named == nil {
		named := st.cache.Summaries.NamedByID(TasksDir)
		st.named = &named
	}
	if *st.named {
		return st.cache.Summaries.ByNamedID(TasksDir, id)
	}
	// Otherwise the first lookups walk the records; then a map, costly to
	// build, pays off: orch new looks up one id, a claim the dependencies
	// of every task it considers.
	if st.byIDScans < 2 {
		st.byIDScans++
		return st.cache.Summaries.ByID(id)
	}
	if st.byID == nil {
		st.byID = st.cache.Summaries.ByIDMap()
	}
	return st.byID[id]
}

// QueueByID returns the queue of the task with exactly this id, without
// decoding the rest of its summary (a claim checks the dependencies of
// every task it considers).
func (st *Store) QueueByID(id string) (taskfile.Queue, bool) {
	if r := st.recByID(id); r != nil {
		return r.Queue, true
	}
	return "", false
}

// Summary returns the task at path.
func (st *Store) Summary(path string) *Summary {
	if r := st.cache.Summaries.Get(path); r != nil {
		return r.Summary()
	}
	return nil
}
