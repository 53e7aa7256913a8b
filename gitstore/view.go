package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

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

// BrokenFile returns why the view's copy of path cannot be committed, if it
// cannot. Commands refuse to change such a task until it is fixed.
func (st *Store) BrokenFile(path string) error { return st.broken[path] }

// Conflicted returns the conflicts of path, if its view copy and the branch
// both changed it in ways that could not be merged.
func (st *Store) Conflicted(path string) []taskfile.Conflict { return st.conflicts[path] }

// Held lists the hand edits kept out of the branch for now (Policy.Hold),
// with why.
func (st *Store) Held() map[string]error { return st.held }

// ViewProblems lists every broken or conflicted view file.
func (st *Store) ViewProblems() (map[string]error, map[string][]taskfile.Conflict) {
	return st.broken, st.conflicts
}

// Reconcile brings the view and the branch into step, as the table in
// DESIGN §2 says. It must be called with the lock held.
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
			data, fs, err := st.readSettled(p)
			if err != nil {
				rep.Broken[p] = err
				return nil
			}
			wdata, w, ws = data, gitrepo.HashBlob(data), fs
		}
	}
	var b plumbing.Hash
	if ie != nil {
		b = ie.Blob
	}
	switch {
	case !wok && !rok:
		if ie != nil {
			st.cache.DropIndex(p)
			st.dirty = true
		}
	case wok && rok && w == r:
		// The view holds the branch's version.
		if ie == nil || ie.Blob != r || !statMatches(ie, ws) || !ie.ConflictW.IsZero() {
			st.record(p, r, ws)
		}
	case !wok && rok:
		placed, err := st.pullToView(p, r, plumbing.ZeroHash)
		if err != nil {
			return err
		}
		if ie != nil && placed {
			rep.Restored = append(rep.Restored, p)
			st.note("restored %s from the state branch (to delete a task, use orch archive)", st.rel(p))
		}
	case ie != nil && w == b && ie.ConflictW.IsZero():
		// The branch moved; the view did not.
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
		return st.reconcileConflicted(p, pol, rep, ie, w, wdata, r, rok, ws)
	case ie != nil && rok && r == b:
		return st.handEdit(p, pol, rep, b, wdata, w, ie.Prev, ws)
	case ie == nil && !rok:
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
		// Both changed: merge.
		return st.merge(p, pol, rep, b, wdata, w, r, ws)
	}
	return nil
}

func (st *Store) rel(p string) string {
	return filepath.ToSlash(filepath.Join(ViewDirName, p))
}

// readViewFile reads the view's copy of branch path p, refusing a file
// larger than taskfile.MaxFileSize (named from the view down, as every
// message names it).
func (st *Store) readViewFile(p string) ([]byte, error) {
	f, _, err := openRegular(viewPath(st.View, p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return st.readOpenView(p, f)
}

func (st *Store) readOpenView(p string, f *os.File) ([]byte, error) {
	data, err := readAllAt(f)
	if errors.Is(err, taskfile.ErrTooLarge) {
		return nil, &taskfile.ParseError{Path: st.rel(p), Msg: fmt.Sprintf("file is larger than %d bytes (%d MiB), the limit for a file orch reads", taskfile.MaxFileSize, taskfile.MaxFileSize>>20), Err: taskfile.ErrTooLarge}
	}
	return data, err
}

// savingWait bounds how long a command waits for a program that is writing
// a task file in place (truncate, then write) to finish, when what it has
// written so far does not parse.
const savingWait = 250 * time.Millisecond

// readSettled reads view file p for the reconcile, with the stat data it
// had just before the read. A task file that does not parse while another
// program has it open for writing is most likely a save in progress (an
// editor that truncates and rewrites): it is read again once the writer is
// done, or savingWait has passed.
func (st *Store) readSettled(p string) ([]byte, fileStat, error) {
	f, fi, err := openRegular(viewPath(st.View, p))
	if err != nil {
		return nil, fileStat{}, err
	}
	defer f.Close()
	for waited := time.Duration(0); ; waited += 2 * time.Millisecond {
		ws := statOf(fi)
		data, err := st.readOpenView(p, f)
		if err != nil || !isTaskPath(p) || waited >= savingWait {
			return data, ws, err
		}
		if _, perr := taskfile.Parse(st.rel(p), data); perr == nil {
			return data, ws, nil
		}
		if attached, _ := writerAttached(f); !attached {
			// No writer now; one may have finished since the read.
			if again, err := st.readOpenView(p, f); err != nil || bytes.Equal(again, data) {
				return data, ws, err
			}
		} else {
			time.Sleep(2 * time.Millisecond)
		}
		if err := unix.Fstat(int(f.Fd()), fi); err != nil {
			return nil, fileStat{}, err
		}
	}
}

// record notes that the view file at p holds blob h with stat s.
func (st *Store) record(p string, h plumbing.Hash, s fileStat) {
	ie := st.cache.Index.Get(p)
	if ie == nil {
		ie = &statecache.IndexEntry{}
		st.cache.PutIndex(p, ie)
	}
	if !ie.Blob.IsZero() && ie.Blob != h {
		ie.Prev = append([]plumbing.Hash{ie.Blob}, ie.Prev...)
		if len(ie.Prev) > 4 {
			ie.Prev = ie.Prev[:4]
		}
	}
	ie.MarkChanged()
	ie.Blob = h
	ie.Size, ie.Mtime, ie.Ctime, ie.Ino = s.size, s.mtime, s.ctime, s.ino
	ie.Racy = isRacy(s)
	ie.ConflictW, ie.ConflictR = plumbing.ZeroHash, plumbing.ZeroHash
	st.dirty = true
}

// pullToView writes the branch's blob r of p into the view, in place of
// the file holding expect (zero: none), and reports whether it did.
func (st *Store) pullToView(p string, r, expect plumbing.Hash) (bool, error) {
	data, err := st.objs.Read(plumbing.BlobObject, r)
	if err != nil {
		return false, err
	}
	return st.placeView(p, data, r, expect), nil
}

// writeView writes a committed file into the view, unless the person changed
// the view file since orch last looked (then the next reconcile merges).
func (st *Store) writeView(p string, data []byte, blob plumbing.Hash) {
	if st.View == "" || !Mirrored(p) {
		return
	}
	ie := st.cache.Index.Get(p)
	if ie != nil && !ie.ConflictW.IsZero() {
		return // in conflict: the person's file stays until they resolve it
	}
	expect := plumbing.ZeroHash
	if ie != nil {
		expect = ie.Blob
	}
	if ws, ok := lstatPath(viewPath(st.View, p)); ok && (ie == nil || !statMatches(ie, ws)) {
		cur, err := st.readViewFile(p)
		if err != nil || gitrepo.HashBlob(cur) != expect {
			if err == nil && gitrepo.HashBlob(cur) == blob {
				st.record(p, blob, ws)
			}
			return
		}
	}
	st.placeView(p, data, blob, expect)
}

// placeEdited puts the result of committing a person's edit (wdata, blob
// w) into the view, when orch changed it (an id added, a merge). If the
// person saved again meanwhile, their file stays, based on wdata, which is
// kept as an object so that the next reconcile can merge from it.
func (st *Store) placeEdited(p string, result []byte, wdata []byte, w plumbing.Hash) error {
	blob, _ := st.snap.Get(p)
	if st.placeView(p, result, blob, w) {
		return nil
	}
	_, err := st.objs.Write(plumbing.BlobObject, wdata)
	return err
}

// viewWriteAge is how far in the past orch dates the view files it writes:
// more than the coarsest timestamp tick isRacy allows for.
const viewWriteAge = 3 * time.Second

// viewDirOK reports whether the directory of view path p is a real
// directory of the view, not a symlink to somewhere else: orch never writes
// or removes files outside the view (the scan does not follow such links
// either). It notes why when it is not.
func (st *Store) viewDirOK(p string) bool {
	d := filepath.Dir(filepath.FromSlash(p))
	if d == "." {
		return true
	}
	fi, err := os.Lstat(filepath.Join(st.View, d))
	if err == nil && fi.IsDir() {
		return true
	}
	st.note("cannot write %s: %s is not a directory (a symlink?); orch writes only inside the view", st.rel(p), st.rel(filepath.ToSlash(d)))
	return false
}

// removeView removes a file the branch removed from the view, unless the
// person changed it (the reconcile then reports it).
func (st *Store) removeView(p string) {
	if st.View == "" || !Mirrored(p) || !st.viewDirOK(p) {
		return
	}
	ie := st.cache.Index.Get(p)
	if _, ok := lstatPath(viewPath(st.View, p)); ok {
		if ie == nil || !ie.ConflictW.IsZero() || !st.dropView(p, ie.Blob) {
			return
		}
	}
	st.cache.DropIndex(p)
	st.dirty = true
}

func isTaskPath(p string) bool {
	return strings.HasPrefix(p, TasksDir+"/") && strings.HasSuffix(p, ".md")
}

// handEdit commits a change a person made to a view file. base is the blob
// the view held before (zero when unknown); prev are older blobs the view
// held, used to recognise a stale editor buffer.
func (st *Store) handEdit(p string, pol Policy, rep *Reconciled, base plumbing.Hash, wdata []byte, w plumbing.Hash, prev []plumbing.Hash, ws fileStat) error {
	r, _ := st.snap.Get(p)
	rdata, err := st.objs.Read(plumbing.BlobObject, r)
	if err != nil {
		return err
	}
	result := wdata
	id := ""
	if isTaskPath(p) {
		wf, err := taskfile.Parse(st.rel(p), wdata)
		if err != nil {
			rep.Broken[p] = err
			return nil
		}
		if errs := wf.Validate(); len(errs) > 0 {
			rep.Broken[p] = taskfile.Problems(errs)
			return nil
		}
		if pol.CheckTask != nil {
			if err := pol.CheckTask(wf); err != nil {
				rep.Broken[p] = err
				return nil
			}
		}
		rf, err := taskfile.Parse(st.rel(p), rdata)
		if err != nil {
			rf = nil
		}
		if rf != nil {
			if perr := taskfile.CheckIDKept(st.rel(p), wf, rf.Task.ID); perr != nil {
				rep.Broken[p] = perr
				return nil
			}
		}
		id = wf.Task.ID
		if rf != nil {
			merged, stale, conflicts, err := st.staleBuffer(p, wf, rf, base, prev)
			if err != nil {
				return err
			}
			if len(conflicts) > 0 {
				st.markConflict(p, rep, st.cache.Index.Get(p), w, r, conflicts)
				return nil
			}
			if stale {
				result = merged.Src
				st.note("%s was saved from an old copy: kept your edits and orch's newer %s", st.rel(p), strings.Join(changedOrchFields(wf, rf), ", "))
			}
		}
	} else if pol.CheckFile != nil {
		if err := pol.CheckFile(st.rel(p), wdata); err != nil {
			rep.Broken[p] = err
			return nil
		}
	}
	if isTaskPath(p) && pol.OrchFields != nil {
		out, note, err := pol.OrchFields(st.rel(p), result, rdata)
		if err != nil {
			return err
		}
		if note != "" {
			result = out
			st.note("%s", note)
		}
	}
	if bytes.Equal(result, rdata) {
		if !bytes.Equal(result, wdata) {
			// Only orch-owned fields changed, and were kept out: the view
			// gets the branch's version back.
			return st.placeEdited(p, result, wdata, w)
		}
		st.record(p, r, ws)
		return nil
	}
	if held(pol, p, rep) {
		return nil
	}
	if err := st.commitHandEdit(p, id, ActionEdit, result, pol); err != nil {
		return err
	}
	if !bytes.Equal(result, wdata) {
		if err := st.placeEdited(p, result, wdata, w); err != nil {
			return err
		}
	} else {
		blob, _ := st.snap.Get(p)
		st.record(p, blob, ws)
	}
	rep.Committed = append(rep.Committed, p)
	return nil
}

// staleBuffer recognises a file saved from an editor buffer older than the
// branch: its orch-owned fields equal those of an older version the view
// held, and differ from the branch's. The person's other edits are kept and
// orch's fields win, by merging with that older version as the base. When
// base is unknown, the branch's orch-owned fields are simply kept.
func (st *Store) staleBuffer(p string, wf, rf *taskfile.File, base plumbing.Hash, prev []plumbing.Hash) (*taskfile.File, bool, []taskfile.Conflict, error) {
	if sameOrchFields(wf, rf) {
		return nil, false, nil, nil
	}
	if base.IsZero() {
		out := wf
		for _, k := range taskfile.OrchOwned {
			if !taskfile.SameField(wf, rf, k) {
				var err error
				out, err = taskfile.TakeField(out, rf, k)
				if err != nil {
					return nil, false, nil, err
				}
			}
		}
		return out, true, nil, nil
	}
	for _, h := range prev {
		data, err := st.objs.Read(plumbing.BlobObject, h)
		if err != nil {
			continue
		}
		pf, err := taskfile.Parse(wf.Path, data)
		if err != nil || !sameOrchFields(wf, pf) {
			continue
		}
		merged, conflicts, err := taskfile.Merge3(pf, wf, rf)
		if err != nil {
			return nil, false, nil, err
		}
		return merged, true, conflicts, nil
	}
	return nil, false, nil, nil
}

func sameOrchFields(a, b *taskfile.File) bool {
	for _, k := range taskfile.OrchOwned {
		if !taskfile.SameField(a, b, k) {
			return false
		}
	}
	return true
}

func changedOrchFields(a, b *taskfile.File) []string {
	var out []string
	for _, k := range taskfile.OrchOwned {
		if !taskfile.SameField(a, b, k) {
			out = append(out, k)
		}
	}
	return out
}

func (st *Store) merge(p string, pol Policy, rep *Reconciled, b plumbing.Hash, wdata []byte, w, r plumbing.Hash, ws fileStat) error {
	bdata, err := st.objs.Read(plumbing.BlobObject, b)
	if err != nil {
		// Without the base we cannot merge; treat as a hand edit on the branch.
		return st.handEdit(p, pol, rep, plumbing.ZeroHash, wdata, w, nil, ws)
	}
	if older := st.startedFrom(p, bdata, wdata); older != nil {
		bdata = older
	}
	return st.mergeFrom(p, pol, rep, bdata, wdata, w, r, ws)
}

// startedFrom finds the version a person's task file was edited from when
// it is older than base, the version the view held last: an editor buffer
// loaded before orch changed the file, saved after (even while orch put a
// raced save back, see placeView). It is the newest earlier view version
// whose orch-owned fields are those of the person's file; merging from it
// keeps orch's changes since. nil when base is that version, or none is.
func (st *Store) startedFrom(p string, bdata, wdata []byte) []byte {
	ie := st.cache.Index.Get(p)
	if !isTaskPath(p) || ie == nil || len(ie.Prev) == 0 {
		return nil
	}
	wf, err1 := taskfile.Parse(st.rel(p), wdata)
	bf, err2 := taskfile.Parse(st.rel(p), bdata)
	if err1 != nil || err2 != nil || sameOrchFields(wf, bf) {
		return nil
	}
	for _, h := range ie.Prev {
		data, err := st.objs.Read(plumbing.BlobObject, h)
		if err != nil {
			continue
		}
		if pf, err := taskfile.Parse(st.rel(p), data); err == nil && sameOrchFields(wf, pf) {
			return data
		}
	}
	return nil
}

// mergeFrom is merge with the base's content given.
func (st *Store) mergeFrom(p string, pol Policy, rep *Reconciled, bdata, wdata []byte, w, r plumbing.Hash, ws fileStat) error {
	rdata, err := st.objs.Read(plumbing.BlobObject, r)
	if err != nil {
		return err
	}
	var result []byte
	id := ""
	if isTaskPath(p) {
		wf, err := taskfile.Parse(st.rel(p), wdata)
		if err != nil {
			rep.Broken[p] = err
			return nil
		}
		if errs := wf.Validate(); len(errs) > 0 {
			rep.Broken[p] = taskfile.Problems(errs)
			return nil
		}
		bf, err1 := taskfile.Parse(st.rel(p), bdata)
		rf, err2 := taskfile.Parse(st.rel(p), rdata)
		if err1 != nil || err2 != nil {
			st.markConflict(p, rep, st.cache.Index.Get(p), w, r, []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "changed on the state branch"}})
			return nil
		}
		merged, conflicts, err := taskfile.Merge3(bf, wf, rf)
		if err != nil {
			return err
		}
		if len(conflicts) > 0 {
			st.markConflict(p, rep, st.cache.Index.Get(p), w, r, conflicts)
			return nil
		}
		if pol.CheckTask != nil {
			if err := pol.CheckTask(merged); err != nil {
				rep.Broken[p] = err
				return nil
			}
		}
		result, id = merged.Src, merged.Task.ID
		if pol.OrchFields != nil {
			out, note, err := pol.OrchFields(st.rel(p), result, rdata)
			if err != nil {
				return err
			}
			if note != "" {
				result = out
				st.note("%s", note)
			}
		}
	} else {
		text, ok := taskfile.MergeText(string(bdata), string(wdata), string(rdata))
		if !ok {
			st.markConflict(p, rep, st.cache.Index.Get(p), w, r, []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "changed on the state branch"}})
			return nil
		}
		result = []byte(text)
		if pol.CheckFile != nil {
			if err := pol.CheckFile(st.rel(p), result); err != nil {
				rep.Broken[p] = err
				return nil
			}
		}
	}
	if !bytes.Equal(result, rdata) && held(pol, p, rep) {
		return nil
	}
	if !bytes.Equal(result, rdata) {
		if err := st.commitHandEdit(p, id, ActionEdit, result, pol); err != nil {
			return err
		}
		rep.Committed = append(rep.Committed, p)
	}
	if bytes.Equal(result, wdata) {
		blob, _ := st.snap.Get(p)
		st.record(p, blob, ws)
	} else if err := st.placeEdited(p, result, wdata, w); err != nil {
		return err
	}
	st.note("%s: merged your edit with changes on the state branch", st.rel(p))
	return nil
}

func (st *Store) markConflict(p string, rep *Reconciled, ie *statecache.IndexEntry, w, r plumbing.Hash, conflicts []taskfile.Conflict) {
	rep.Conflicts[p] = conflicts
	if ie == nil {
		ie = &statecache.IndexEntry{}
		st.cache.PutIndex(p, ie)
	}
	if ie.ConflictW != w || ie.ConflictR != r {
		ie.MarkChanged()
		ie.ConflictW, ie.ConflictR = w, r
		if ie.Blob.IsZero() {
			ie.Blob = r
		}
		st.dirty = true
	}
	// Conflict details are recomputed each time from the three versions;
	// the record only says "do not touch until the person decides".
}

// reconcileConflicted handles a file in conflict. Until the person changes
// the view file it stays as it is; once they do, their version is their
// resolution and is committed (merged with anything newer on the branch).
func (st *Store) reconcileConflicted(p string, pol Policy, rep *Reconciled, ie *statecache.IndexEntry, w plumbing.Hash, wdata []byte, r plumbing.Hash, rok bool, ws fileStat) error {
	if w == ie.ConflictW && r == ie.ConflictR {
		// Unchanged: report it again, with details.
		if wdata == nil {
			var err error
			if wdata, err = st.readViewFile(p); err != nil {
				rep.Broken[p] = err
				return nil
			}
		}
		rep.Conflicts[p] = st.describeConflict(p, ie.Blob, wdata, r)
		return nil
	}
	if w == ie.ConflictW {
		// Only the branch moved: the person has not resolved anything yet.
		// Merge again from the version the view file was based on, so the
		// conflict stays (or goes, if the branch's new change settles it).
		if !rok {
			st.markConflict(p, rep, ie, w, r, []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "removed from the state branch"}})
			return nil
		}
		if wdata == nil {
			var err error
			if wdata, err = st.readViewFile(p); err != nil {
				rep.Broken[p] = err
				return nil
			}
		}
		ie.MarkChanged()
		ie.ConflictW, ie.ConflictR = plumbing.ZeroHash, plumbing.ZeroHash
		return st.merge(p, pol, rep, ie.Blob, wdata, w, r, ws)
	}
	if !rok {
		ie.MarkChanged()
		ie.ConflictW, ie.ConflictR = plumbing.ZeroHash, plumbing.ZeroHash
		return st.handNew(p, pol, rep, wdata, ws)
	}
	if wdata == nil {
		var err error
		if wdata, err = st.readViewFile(p); err != nil {
			rep.Broken[p] = err
			return nil
		}
	}
	seenR := ie.ConflictR
	ie.MarkChanged()
	ie.ConflictW, ie.ConflictR = plumbing.ZeroHash, plumbing.ZeroHash
	if base := st.resolutionBase(p, ie.Blob, seenR, wdata); base != nil {
		ie.Blob = seenR
		return st.mergeFrom(p, pol, rep, base, wdata, w, r, ws)
	}
	if r == seenR {
		// The person resolved it against the branch version they were shown.
		ie.Blob = r
		return st.handEdit(p, pol, rep, r, wdata, w, nil, ws)
	}
	ie.Blob = seenR
	return st.merge(p, pol, rep, seenR, wdata, w, r, ws)
}

// resolutionBase is what a person's resolution of a conflicted task is
// merged from, when orch changed orch-owned fields on the branch: the branch
// version the conflict was found against, with the orch-owned fields of the
// version the person's file was based on (b) wherever the resolution
// (wdata) still has them. So the person's file wins for everything they
// wrote, and the orch-owned fields they left as they were take the branch's
// values: like a stale editor buffer, a resolution must not undo orch's
// changes. nil when there is nothing of orch's to keep.
func (st *Store) resolutionBase(p string, b, seenR plumbing.Hash, wdata []byte) []byte {
	if !isTaskPath(p) || b.IsZero() || seenR.IsZero() || b == seenR {
		return nil
	}
	bdata, err1 := st.objs.Read(plumbing.BlobObject, b)
	rdata, err2 := st.objs.Read(plumbing.BlobObject, seenR)
	if err1 != nil || err2 != nil {
		return nil
	}
	bf, err1 := taskfile.Parse(st.rel(p), bdata)
	rf, err2 := taskfile.Parse(st.rel(p), rdata)
	wf, err3 := taskfile.Parse(st.rel(p), wdata)
	if err1 != nil || err2 != nil || err3 != nil || sameOrchFields(bf, rf) {
		return nil
	}
	out := rf
	for _, k := range taskfile.OrchOwned {
		if !taskfile.SameField(out, bf, k) && taskfile.SameField(wf, bf, k) {
			var err error
			if out, err = taskfile.TakeField(out, bf, k); err != nil {
				return nil
			}
		}
	}
	if out == rf {
		return nil
	}
	return out.Src
}

func (st *Store) describeConflict(p string, b plumbing.Hash, wdata []byte, r plumbing.Hash) []taskfile.Conflict {
	generic := []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "changed on the state branch"}}
	if !isTaskPath(p) {
		return generic
	}
	bdata, err1 := st.objs.Read(plumbing.BlobObject, b)
	rdata, err2 := st.objs.Read(plumbing.BlobObject, r)
	if err1 != nil || err2 != nil {
		return generic
	}
	bf, e1 := taskfile.Parse(p, bdata)
	wf, e2 := taskfile.Parse(p, wdata)
	rf, e3 := taskfile.Parse(p, rdata)
	if e1 != nil || e2 != nil || e3 != nil {
		return generic
	}
	_, c, err := taskfile.Merge3(bf, wf, rf)
	if err != nil || len(c) == 0 {
		return generic
	}
	return c
}

// handNew commits a file a person created in the view.
func (st *Store) handNew(p string, pol Policy, rep *Reconciled, wdata []byte, ws fileStat) error {
	if wdata == nil {
		var err error
		if wdata, err = st.readViewFile(p); err != nil {
			rep.Broken[p] = err
			return nil
		}
	}
	result := wdata
	id := ""
	action := ActionEdit
	if isTaskPath(p) {
		if pol.PrepareNewTask == nil {
			return nil
		}
		taken := func(id string) bool {
			s := st.SummaryByID(id)
			return s != nil && s.Path != p
		}
		out, newID, err := pol.PrepareNewTask(st.rel(p), wdata, taken)
		if err != nil {
			rep.Broken[p] = err
			return nil
		}
		result, id, action = out, newID, ActionNew
	} else if pol.CheckFile != nil {
		if err := pol.CheckFile(st.rel(p), wdata); err != nil {
			rep.Broken[p] = err
			return nil
		}
	}
	if held(pol, p, rep) {
		return nil
	}
	if !bytes.Equal(result, wdata) {
		// Keep the person's version as an object: if this process dies
		// between the commit and the view write, the next reconcile (no
		// sync record, W = this, R = orch's completed copy) then pulls R
		// instead of reporting W as a broken hand edit for ever.
		if _, err := st.objs.Write(plumbing.BlobObject, wdata); err != nil {
			return err
		}
	}
	if err := st.commitHandEdit(p, id, action, result, pol); err != nil {
		return err
	}
	if bytes.Equal(result, wdata) {
		blob, _ := st.snap.Get(p)
		st.record(p, blob, ws)
	} else if err := st.placeEdited(p, result, wdata, gitrepo.HashBlob(wdata)); err != nil {
		return err
	}
	rep.Committed = append(rep.Committed, p)
	if action == ActionNew {
		st.note("committed the task you created by hand: %s (%s)", st.rel(p), id)
	} else {
		st.note("committed your new file %s", st.rel(p))
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

// commitHandEdit commits one hand-edited file.
func (st *Store) commitHandEdit(p, id, action string, data []byte, pol Policy) error {
	subject := "orch: edit " + p
	if id != "" {
		subject = fmt.Sprintf("orch(%s): %s", id, action)
	}
	body := "Hand edit of " + p + "."
	if action == ActionNew {
		body = "Task created by hand in the view (" + p + ")."
	}
	var tr Trailers
	if id != "" {
		tr.Add(TrailerTask, id)
	}
	tr.Add(TrailerAction, action)
	if action == ActionNew {
		tr.Add(TrailerTo, string(taskfile.Incoming))
	}
	tr.Add(TrailerActor, pol.Actor.Name)
	msg := tr.Message(subject, body)
	changes := []Change{{Path: p, Data: data}}
	if action == ActionNew && id != "" && pol.Event != nil {
		ev, err := pol.Event(st.snap, id, p)
		if err != nil {
			return err
		}
		changes = append(changes, ev)
	}
	_, err := st.Commit(&CommitRequest{Changes: changes, Message: msg, Author: pol.Actor})
	if errors.Is(err, gitrepo.ErrRefMoved) {
		// Another writer moved the branch between our reconcile and our
		// commit: the caller reconciles again from the new tip.
		return err
	}
	return err
}
