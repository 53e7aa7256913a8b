package doctor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
)

// What doctor reads of the store, none of it through Lock (which loads,
// and trusts, the cache): the ref locks, the branch tip and its trees read
// from the objects, the state cache and sync index read from disk without
// trusting or changing them, and the view read file by file; and the
// repairs of those that the normal open cannot make.

// lockWait bounds how long orch doctor waits for the orch lock.
const lockWait = 10 * time.Second

// staleTempAge is the age after which a temp file found without holding
// the orch lock is taken to be left by a killed process.
const staleTempAge = 10 * time.Minute

// refLock is a <ref>.lock file of the state branch or of one of its
// remote-tracking refs.
type refLock struct {
	path  string // absolute
	ref   string
	stale bool   // left by a process that is gone: safe to remove
	why   string // why it is (or is not) taken to be stale
}

// refLocks lists the .lock files of the state branch and of its
// remote-tracking refs, judged the way gitrepo's UpdateRef judges them
// before taking one over: older than gitrepo.StaleRefLockAge, or left by an
// orch process that is gone.
func refLocks(st *gitstore.Store) []refLock {
	refs := []string{st.Ref}
	if strings.HasPrefix(st.Ref, "refs/heads/") {
		for _, rem := range st.Repo.Remotes() {
			if tr := gitrepo.TrackingRef(rem, st.Ref); gitrepo.ValidRefName(tr) {
				refs = append(refs, tr)
			}
		}
	}
	var out []refLock
	for _, ref := range refs {
		p := filepath.Join(st.Repo.CommonDir, filepath.FromSlash(ref)) + ".lock"
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		l := refLock{path: p, ref: ref}
		age := time.Since(fi.ModTime())
		switch {
		case st.Repo.LeftByDeadOrch(p, fi):
			pid, _, _ := st.Repo.LockOwner(p)
			l.stale, l.why = true, fmt.Sprintf("left by orch process %d, which is gone", pid)
		case age > gitrepo.StaleRefLockAge():
			l.stale, l.why = true, fmt.Sprintf("%s old: git holds a ref lock for milliseconds, so no live process owns it", roundAge(age))
		default:
			l.why = fmt.Sprintf("%s old: a git process may be updating the ref", roundAge(age))
		}
		out = append(out, l)
	}
	return out
}

func roundAge(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d.Round(time.Second)
}

// removeStaleRefLock removes a ref .lock file after judging it stale again
// (it may have been replaced since it was listed). The caller holds the
// exclusive orch lock.
func removeStaleRefLock(st *gitstore.Store, path string) (bool, error) {
	for _, l := range refLocks(st) {
		if l.path != path {
			continue
		}
		if !l.stale {
			return false, nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// checkup is a read-only look at the store: the branch tip and its tree
// read from the objects, and the state cache and sync index read from disk
// without trusting or changing them.
type checkup struct {
	st   *gitstore.Store
	objs *gitrepo.ObjectStore
	// tip is the state branch's commit (ZeroHash: no branch); tipErr says
	// why the ref could not be read.
	tip    plumbing.Hash
	tipErr error
	// snapErr says why the tip's commit or trees could not be read.
	snapErr error

	snap          *gitstore.Snapshot
	cache         *statecache.Cache // as loaded (nil: none, or it did not decode)
	cacheSeen     bool              // the cache file exists
	cacheProblems []string          // why it cannot be trusted
}

// newCheckup reads the branch and the cache of a store that is not locked
// (so that SnapshotOf reads every tree from the objects, trusting no cache).
func newCheckup(st *gitstore.Store) *checkup {
	cu := &checkup{st: st, objs: gitrepo.NewObjectStore(st.Repo.CommonDir)}
	cu.tip, cu.tipErr = st.Repo.ReadRef(st.Ref)
	if cu.tipErr == nil && !cu.tip.IsZero() {
		cu.snap, cu.snapErr = st.SnapshotOf(cu.tip)
	}
	cu.cache, cu.cacheSeen, cu.cacheProblems = statecache.Inspect(st.CachePath(), st.Ref)
	return cu
}

// cacheHealth is what doctor finds in the state cache.
type cacheHealth struct {
	path    string
	exists  bool
	tip     plumbing.Hash // the tip the cache describes
	tasks   int
	corrupt []string // reasons to rebuild it: it cannot be trusted
	stale   bool     // it describes another tip (the next command catches up)
}

// cacheHealth checks the state cache: it decodes, its journal is whole, and
// when it describes the branch tip its trees and task summaries are those
// of that tip.
func (cu *checkup) cacheHealth() cacheHealth {
	h := cacheHealth{path: cu.st.CachePath(), exists: cu.cacheSeen}
	h.corrupt = append(h.corrupt, cu.cacheProblems...)
	c := cu.cache
	if c == nil {
		return h
	}
	h.tip, h.tasks = c.Tip, c.Summaries.Len()
	if cu.tipErr != nil || c.Tip != cu.tip {
		h.stale = true
		return h
	}
	if cu.snap == nil {
		return h
	}
	if c.Root != cu.snap.Root {
		h.corrupt = append(h.corrupt, fmt.Sprintf("it names root tree %s, the tip has %s", shortHash(c.Root), shortHash(cu.snap.Root)))
	}
	var bad []string
	trees := cu.snap.Trees()
	for d, want := range trees {
		got := c.Dirs[d]
		if got == nil || got.Hash != want.Hash || !sameEntries(got.Entries, want.Entries) {
			bad = append(bad, dirName(d))
		}
	}
	for d := range c.Dirs {
		if trees[d] == nil {
			bad = append(bad, dirName(d))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		h.corrupt = append(h.corrupt, "its trees differ from the tip's in "+strings.Join(bad, ", "))
	}
	var wrong []string
	tasks := map[string]bool{}
	for _, fe := range cu.snap.Files(gitstore.TasksDir) {
		if !strings.HasSuffix(fe.Path, ".md") {
			continue
		}
		tasks[fe.Path] = true
		if r := c.Summaries.Get(fe.Path); r == nil || r.Blob() != fe.Blob {
			wrong = append(wrong, fe.Path)
		}
	}
	c.Summaries.Each(func(r *statecache.Record) {
		if !tasks[r.Path] {
			wrong = append(wrong, r.Path)
		}
	})
	if len(wrong) > 0 {
		sort.Strings(wrong)
		h.corrupt = append(h.corrupt, fmt.Sprintf("%d task summaries differ from the tip (%s)", len(wrong), clipList(wrong, 3)))
	}
	return h
}

func dirName(d string) string {
	if d == "" {
		return "the root"
	}
	return d + "/"
}

func clipList(l []string, n int) string {
	if len(l) <= n {
		return strings.Join(l, ", ")
	}
	return strings.Join(l[:n], ", ") + fmt.Sprintf(" and %d more", len(l)-n)
}

func sameEntries(a, b []gitrepo.TreeEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Mode != b[i].Mode || a[i].Hash != b[i].Hash {
			return false
		}
	}
	return true
}

// View drift kinds: how a view file and the branch disagree before the
// reconcile every command runs.
const (
	driftMissing    = "missing"     // on the branch, not in the view: restored
	driftBehind     = "behind"      // the view holds an older version: updated
	driftEdited     = "edited"      // changed in the view: committed as a hand edit (or merged)
	driftExtra      = "extra"       // only in the view: committed as made by hand
	driftRemoved    = "removed"     // removed on the branch, still in the view: removed
	driftStaleIndex = "stale_index" // differs from what the sync index says, with the same stat data: no command would notice
	driftUnreadable = "unreadable"  // the view file cannot be read
)

// viewDrift is one view file out of step with the branch.
type viewDrift struct {
	path string // path on the state branch (tasks/x.md)
	kind string
	data []byte // the view file's content (edited and extra files)
	err  error  // driftUnreadable
}

// viewDrift compares the view with the branch tip and the sync index, file
// by file, reading every view file (the reconcile trusts stat data; this
// does not). Files in conflict are left to conflicts.
func (cu *checkup) viewDrift() []viewDrift {
	st := cu.st
	if st.View == "" || cu.snap == nil {
		return nil
	}
	var index statecache.Index
	if cu.cache != nil {
		index = cu.cache.Index
	}
	paths := map[string]bool{}
	for _, fe := range cu.snap.AllFiles() {
		if gitstore.Mirrored(fe.Path) {
			paths[fe.Path] = true
		}
	}
	for _, p := range st.ViewFiles() {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var out []viewDrift
	for _, p := range sorted {
		ie := index.Get(p)
		if ie != nil && !ie.ConflictW.IsZero() {
			continue
		}
		r, rok := cu.snap.Get(p)
		present, statSame := st.ViewStat(p, ie)
		if !present {
			if rok {
				out = append(out, viewDrift{path: p, kind: driftMissing})
			}
			continue
		}
		data, err := st.ReadViewFile(p)
		if err != nil {
			out = append(out, viewDrift{path: p, kind: driftUnreadable, err: err})
			continue
		}
		w := gitrepo.HashBlob(data)
		switch {
		case rok && w == r:
			// In step (a stale index entry is simply recorded again).
		case ie != nil && statSame && w != ie.Blob:
			out = append(out, viewDrift{path: p, kind: driftStaleIndex, data: data})
		case !rok && ie == nil:
			out = append(out, viewDrift{path: p, kind: driftExtra, data: data})
		case !rok && w == ie.Blob:
			out = append(out, viewDrift{path: p, kind: driftRemoved})
		case ie != nil && rok && w == ie.Blob:
			out = append(out, viewDrift{path: p, kind: driftBehind})
		case ie == nil && rok && cu.objs.Has(w):
			// The index was lost and the view holds an older version.
			out = append(out, viewDrift{path: p, kind: driftBehind})
		default:
			out = append(out, viewDrift{path: p, kind: driftEdited, data: data})
		}
	}
	return out
}

// distrustViewStat marks the sync-index entries of paths as racy, so that
// the next reconcile reads those files instead of trusting their stat data.
// The caller holds the exclusive orch lock.
func distrustViewStat(st *gitstore.Store, paths []string) error {
	path := st.CachePath()
	c := statecache.Load(path, st.Ref, true)
	defer c.Close()
	changed := false
	for _, p := range paths {
		if ie := c.Index.Get(p); ie != nil {
			ie.Racy = true
			ie.MarkChanged()
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return c.Save(path)
}

// conflictedFile is a view file kept uncommitted after both it and the
// branch changed in ways that could not be merged.
type conflictedFile struct {
	path      string // path on the state branch
	conflicts []taskfile.Conflict
	// changed: the view file changed since the conflict was found (the
	// person's resolution, which the next reconcile commits) or is gone.
	changed bool
	// branchGone: the branch no longer has the file.
	branchGone bool
}

// conflicts lists the view files the sync index marks as in conflict.
func (cu *checkup) conflicts() []conflictedFile {
	st := cu.st
	if st.View == "" || cu.cache == nil || cu.snap == nil {
		return nil
	}
	var out []conflictedFile
	cu.cache.Index.Each(func(p string, ie *statecache.IndexEntry) {
		if ie.ConflictW.IsZero() {
			return
		}
		cf := conflictedFile{path: p}
		r, rok := cu.snap.Get(p)
		cf.branchGone = !rok
		data, err := st.ReadViewFile(p)
		var w plumbing.Hash
		if err == nil {
			w = gitrepo.HashBlob(data)
		}
		switch {
		case err == nil && rok && w == r:
			return // settled: the view holds the branch's version
		case err != nil || w != ie.ConflictW:
			cf.changed = true
		case !rok:
			cf.conflicts = []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "removed from the state branch"}}
		default:
			cf.conflicts = st.DescribeConflict(p, ie.Blob, data, r)
		}
		out = append(out, cf)
	})
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// objectsHealth is what doctor finds reading the tip's objects.
type objectsHealth struct {
	trees   int
	files   int
	missing []string // files whose blob the repository lacks
}

// objects checks that every file of the tip has its blob (without reading
// it); snapErr says whether the tip's commit and trees could be read.
func (cu *checkup) objects() objectsHealth {
	var h objectsHealth
	if cu.snap == nil {
		return h
	}
	h.trees = len(cu.snap.Trees())
	for _, fe := range cu.snap.AllFiles() {
		h.files++
		if !cu.objs.Has(fe.Blob) {
			h.missing = append(h.missing, fe.Path)
		}
	}
	return h
}
