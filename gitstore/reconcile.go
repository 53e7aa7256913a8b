package gitstore

import (
	"errors"
	"sort"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/internal/trace"
	"github.com/orch-tool/orch/taskfile"
)

// Policy is what the reconciler needs from the workflow: who the actor is,
// how to complete a task file made by hand, and how to check other files.
type Policy struct {
	Actor gitrepo.Signature
	// PrepareNewTask completes a task file a person created: an id if it
	// has none (or a fresh one when its id is taken), a queue, a created
	// time. It returns the content to commit and the task's id.
	PrepareNewTask func(path string, data []byte, taken func(id string) bool) ([]byte, string, error)
	// CheckFile validates a hand-edited file that is not a task.
	CheckFile func(path string, data []byte) error
	// CheckTask checks a hand-edited task against the other tasks (a
	// depends_on cycle): an error keeps it out of the branch, reported.
	CheckTask func(f *taskfile.File) error
	// Event returns the event-log change recording a task made by hand, so
	// that the log (and stats) see it like a task made with orch new.
	Event func(snap *Snapshot, id, path string) (Change, error)
	// OrchFields, for a hand edit of a task, returns what to commit with the
	// orch-owned fields the person may not change by hand taken from the
	// branch (the bytes on the branch), and a note saying so ("" when
	// nothing was kept out).
	OrchFields func(path string, result, branch []byte) ([]byte, string, error)
	// Hold, when it returns an error for a path, keeps a hand edit of it
	// out of the branch for now (a policy file edited while an agent's
	// command runs waits for a human's): reported, never overwritten.
	Hold func(path string) error
}

// Reconciled summarises what Reconcile did.
type Reconciled struct {
	Committed []string // paths of hand edits and hand-made files now committed
	Pulled    []string // view files updated from the branch
	Restored  []string // files deleted by hand, restored from the branch
	Removed   []string // view files removed because the branch removed them
	Broken    map[string]error
	Conflicts map[string][]taskfile.Conflict
	Held      map[string]error // hand edits kept out of the branch by Policy.Hold
}

// Reconcile brings the view and the branch into step, as the table in
// docs/design.md §1.2 says. It must be called with the lock held.
func (st *Store) Reconcile(pol Policy) (*Reconciled, error) {
	rep := &Reconciled{Broken: map[string]error{}, Conflicts: map[string][]taskfile.Conflict{}, Held: map[string]error{}}
	if st.View == "" || st.scan == nil {
		return rep, nil
	}
	scan := st.scan.wait()
	trace.Phase("view scan")
	if scan.leftovers {
		st.removeLeftoverTemps()
	}
	if !scan.exists && st.snap.Tip.IsZero() {
		return rep, nil // nothing to mirror yet
	}
	for attempt := 0; ; attempt++ {
		var paths []string
		if pre := st.pre; pre != nil && attempt == 0 {
			<-pre.done
			if pre.snap == st.snap {
				paths = pre.paths
			} else {
				paths = st.pendingPaths(scan)
			}
		} else {
			paths = st.pendingPaths(scan)
		}
		st.pre = nil
		err := st.reconcilePaths(paths, pol, rep)
		if errors.Is(err, gitrepo.ErrRefMoved) && attempt < maxRetries {
			// Another writer moved the branch while we committed a hand
			// edit: look at every path again against the new tip.
			continue
		}
		if err != nil {
			return rep, err
		}
		break
	}
	st.broken, st.conflicts, st.held = rep.Broken, rep.Conflicts, rep.Held
	for _, r := range st.Recovered() {
		st.note("%s holds a save that raced orch: copy what you need into the task file, then delete it", r)
	}
	trace.Phase("reconcile")
	return rep, nil
}

// pendingPaths returns, sorted, the paths where the sync index, the view
// and the branch disagree. Finding them costs map lookups, not reads or
// allocations: at 10,000 unchanged tasks this is the whole cost of a
// reconcile.
func (st *Store) pendingPaths(scan *viewScan) []string { return st.pendingPathsAt(st.snap, scan) }

// pendingPathsAt is pendingPaths against snap. It only reads the store, so
// an optimistic command runs it in the background (see Defer).
func (st *Store) pendingPathsAt(snap *Snapshot, scan *viewScan) []string {
	pending := map[string]bool{}
	seen := 0     // index entries matched with a file of the branch
	scanHits := 0 // view files matched with an index entry and a branch file
	for _, d := range append([]string{""}, mirroredDirs...) {
		dt := snap.dirs[d]
		if dt == nil {
			continue
		}
		// A large directory (tasks/) is compared in two halves at once:
		// the comparison only reads the maps, and it is on the critical
		// path of every command.
		parts := 1
		if len(dt.Entries) >= 2048 {
			parts = 2
		}
		results := make([]dirCompare, parts)
		var wg sync.WaitGroup
		for k := 0; k < parts; k++ {
			lo, hi := k*len(dt.Entries)/parts, (k+1)*len(dt.Entries)/parts
			wg.Add(1)
			go func(r *dirCompare) {
				defer wg.Done()
				*r = st.compareEntries(d, dt.Entries, lo, hi, scan.dirs[d])
			}(&results[k])
		}
		wg.Wait()
		for _, r := range results {
			seen += r.seen
			scanHits += r.scanHits
			for _, p := range r.pending {
				pending[p] = true
			}
		}
	}
	if seen != st.cache.Index.Len() {
		// Some index entries have no file on the branch (deleted there).
		st.cache.Index.Each(func(p string, _ *statecache.IndexEntry) {
			if _, ok := snap.Get(p); !ok {
				pending[p] = true
			}
		})
	}
	if scanHits != scan.n {
		for dir, files := range scan.dirs {
			visit := files.each
			if dt := snap.dirs[dir]; dt != nil && files.sameEntries(dt.Entries) {
				// The files found by position are the branch's, which
				// the comparison above went through: only the others
				// can be new.
				visit = files.eachExtra
			}
			visit(func(name string) {
				p := name
				if dir != "" {
					p = dir + "/" + name
				}
				if st.cache.Index.Get(p) == nil {
					pending[p] = true // made by hand (or the index was lost)
				}
			})
		}
	}
	sorted := make([]string, 0, len(pending))
	for p := range pending {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	return sorted
}

// dirCompare is what compareEntries found in part of a directory.
type dirCompare struct {
	seen, scanHits int
	pending        []string
}

// compareEntries compares the branch entries [lo, hi) of dir with the sync
// index and the scanned view files; it only reads.
func (st *Store) compareEntries(d string, all []gitrepo.TreeEntry, lo, hi int, files *scanFiles) dirCompare {
	var r dirCompare
	if lo >= hi {
		return r
	}
	path := func(name string) string {
		if d == "" {
			return name
		}
		return d + "/" + name
	}
	// The scan stat-ed these very entries (the usual case): their stat
	// data is found by position, not by name.
	byPos := files.sameEntries(all)
	var byName *scanCursor
	if !byPos {
		byName = files.cursor(&all[lo])
	}
	index := st.cache.Index.Cursor(d, all[lo].Name)
	for i := lo; i < hi; i++ {
		e := &all[i]
		if e.Mode != gitrepo.ModeFile && e.Mode != gitrepo.ModeExec {
			continue
		}
		if ie := index.Get(e.Name); ie != nil {
			r.seen++
			var ws fileStat
			var wok bool
			if byPos {
				ws, wok = files.at(i)
			} else {
				ws, wok = byName.get(e)
			}
			if wok {
				r.scanHits++
			}
			if wok && statMatches(ie, ws) && e.Hash == ie.Blob && ie.ConflictW.IsZero() {
				continue // the common case: nothing changed anywhere
			}
			r.pending = append(r.pending, path(e.Name))
			continue
		}
		if p := path(e.Name); Mirrored(p) {
			r.pending = append(r.pending, p)
		}
	}
	return r
}

func (st *Store) reconcilePaths(paths []string, pol Policy, rep *Reconciled) error {
	if st.Progress != nil && len(paths) > 0 {
		defer st.Progress("syncing .orchestrator/", len(paths), len(paths))
	}
	for i, p := range paths {
		if st.Progress != nil {
			st.Progress("syncing .orchestrator/", i, len(paths))
		}
		err := st.reconcilePath(p, pol, rep)
		var co *ErrCheckedOut
		if errors.As(err, &co) {
			// The hand edit waits, untouched, until the branch is no longer
			// checked out; reading commands keep working meanwhile.
			rep.Broken[p] = err
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// reconcilePath is docs/design.md §1.2's reconcile table for one path: B is the blob
// in the sync index (ie), R the blob at the branch tip (r), W the file in
// the view (w). Each case below names its row of the table.
func (st *Store) reconcilePath(p string, pol Policy, rep *Reconciled) error {
	full := viewPath(st.View, p)
	ie := st.cache.Index.Get(p)
	r, rok := st.snap.Get(p)
	if !Mirrored(p) {
		rok = false
	}
	ws, wok := lstatPath(full)
	var wdata []byte
	var w plumbing.Hash
	if wok {
		if ie != nil && statMatches(ie, ws) {
			w = ie.Blob
		} else {
			var known []plumbing.Hash
			if rok {
				known = append(known, r)
			}
			if ie != nil {
				known = append(known, ie.Blob)
			}
			data, h, fs, err := st.readSettled(p, known...)
			if err != nil {
				rep.Broken[p] = err
				return nil
			}
			wdata, w, ws = data, h, fs
		}
	}
	var b plumbing.Hash
	if ie != nil {
		b = ie.Blob
	}
	switch {
	case !wok && !rok:
		// Gone from both: forget the record.
		if ie != nil {
			st.cache.DropIndex(p)
			st.dirty = true
		}
	case wok && rok && w == r:
		// "W = B, R = B: nothing changed" (or both reached the same blob).
		if ie == nil || ie.Blob != r || !statMatches(ie, ws) || !ie.ConflictW.IsZero() {
			st.record(p, r, ws)
		}
	case !wok && rok:
		// "W missing: file deleted by hand": restore it from the branch.
		placed, err := st.pullToView(p, r, plumbing.ZeroHash)
		if err != nil {
			return err
		}
		if ie != nil && placed {
			rep.Restored = append(rep.Restored, p)
			st.note("restored %s from the state branch (to delete a task, use orch archive)", st.rel(p))
		}
	case ie != nil && w == b && ie.ConflictW.IsZero():
		// "W = B, R ≠ B: branch moved": write R to the view.
		if !rok {
			st.removeView(p)
			rep.Removed = append(rep.Removed, p)
			return nil
		}
		if _, err := st.pullToView(p, r, b); err != nil {
			return err
		}
		rep.Pulled = append(rep.Pulled, p)
	case ie != nil && !ie.ConflictW.IsZero():
		// A task marked conflicted earlier: resolved, still in conflict, or moved on.
		return st.reconcileConflicted(p, pol, rep, ie, w, wdata, r, rok, ws)
	case ie != nil && rok && r == b:
		// "W ≠ B, R = B: hand edit": validate and commit it.
		return st.handEdit(p, pol, rep, b, wdata, w, ie.Prev, ws)
	case ie == nil && !rok:
		// "new file, no B, no R: task created by hand".
		return st.handNew(p, pol, rep, wdata, ws)
	case ie == nil && rok:
		// No sync record (the private state was deleted): W is either an old
		// version the view still holds, or a hand edit of unknown base.
		if st.objs.Has(w) {
			if _, err := st.pullToView(p, r, w); err != nil {
				return err
			}
			rep.Pulled = append(rep.Pulled, p)
			return nil
		}
		return st.handEdit(p, pol, rep, plumbing.ZeroHash, wdata, w, nil, ws)
	case !rok:
		// Edited here, deleted on the branch.
		st.markConflict(p, rep, ie, w, r, []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "removed from the state branch"}})
	default:
		// "W ≠ B, R ≠ B: both changed": merge; on conflict keep W.
		return st.merge(p, pol, rep, b, wdata, w, r, ws)
	}
	return nil
}

// held reports whether the policy keeps a hand edit of p out of the branch
// for now, and records why.
func held(pol Policy, p string, rep *Reconciled) bool {
	if pol.Hold == nil {
		return false
	}
	if err := pol.Hold(p); err != nil {
		rep.Held[p] = err
		return true
	}
	return false
}
