package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
)

// What orch doctor needs from the store: read-only looks at the ref locks,
// temp files, the state cache, the view and the objects, none of which goes
// through Lock (which loads, and trusts, the cache), and the few repairs
// that cannot be made by the normal path. The workflow decides what is a
// problem and in which order to repair.

// doctorLockWait bounds how long orch doctor waits for the orch lock. A
// variable only for the tests.
var doctorLockWait = 10 * time.Second

// DoctorLockWait is doctorLockWait, for messages.
func DoctorLockWait() time.Duration { return doctorLockWait }

// StaleTempAge is the age after which a temp file found without holding the
// orch lock is taken to be left by a killed process.
const StaleTempAge = 10 * time.Minute

// DoctorLock takes the orch lock for orch doctor: shared to look, exclusive
// to repair. Looking creates nothing: without a lock file no orch process
// holds the lock. It fails with *ErrLockTimeout after doctorLockWait.
func (st *Store) DoctorLock(exclusive bool) (release func(), err error) {
	path := filepath.Join(st.priv, "lock")
	var f *os.File
	if exclusive {
		if err := os.MkdirAll(st.priv, 0o777); err != nil {
			return nil, err
		}
		f, err = privfile.Open(path, os.O_RDWR|os.O_CREATE, 0o666)
	} else {
		f, err = privfile.Open(path, os.O_RDONLY, 0)
		if errors.Is(err, os.ErrNotExist) {
			return func() {}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := waitFlock(f, path, how, doctorLockWait); err != nil {
		f.Close()
		return nil, err
	}
	if exclusive {
		l := finishLock(f, path)
		return l.release, nil
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// RefLockFile is a <ref>.lock file of the state branch or of one of its
// remote-tracking refs.
type RefLockFile struct {
	Path  string // absolute
	Ref   string
	Age   time.Duration
	Stale bool   // left by a process that is gone: safe to remove
	Why   string // why it is (or is not) taken to be stale
}

// RefLockFiles lists the .lock files of the state branch and of its
// remote-tracking refs, judged the way UpdateRef judges them before taking
// one over: older than gitrepo.StaleRefLockAge, or left by an orch process that is
// gone.
func (st *Store) RefLockFiles() []RefLockFile {
	refs := []string{st.Ref}
	if strings.HasPrefix(st.Ref, "refs/heads/") {
		for _, rem := range st.Repo.Remotes() {
			if tr := gitrepo.TrackingRef(rem, st.Ref); gitrepo.ValidRefName(tr) {
				refs = append(refs, tr)
			}
		}
	}
	var out []RefLockFile
	for _, ref := range refs {
		p := filepath.Join(st.Repo.CommonDir, filepath.FromSlash(ref)) + ".lock"
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		l := RefLockFile{Path: p, Ref: ref, Age: time.Since(fi.ModTime())}
		l.Stale, l.Why = st.refLockStale(p, fi)
		out = append(out, l)
	}
	return out
}

func (st *Store) refLockStale(p string, fi os.FileInfo) (bool, string) {
	if st.Repo.LeftByDeadOrch(p, fi) {
		pid, _, _ := st.Repo.LockOwner(p)
		return true, fmt.Sprintf("left by orch process %d, which is gone", pid)
	}
	if age := time.Since(fi.ModTime()); age > gitrepo.StaleRefLockAge() {
		return true, fmt.Sprintf("%s old: git holds a ref lock for milliseconds, so no live process owns it", roundAge(age))
	}
	return false, fmt.Sprintf("%s old: a git process may be updating the ref", roundAge(time.Since(fi.ModTime())))
}

func roundAge(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d.Round(time.Second)
}

// RemoveStaleRefLock removes a ref .lock file after judging it stale again
// (it may have been replaced since it was listed). The caller holds the
// exclusive orch lock.
func (st *Store) RemoveStaleRefLock(path string) (bool, error) {
	for _, l := range st.RefLockFiles() {
		if l.Path != path {
			continue
		}
		if !l.Stale {
			return false, nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// StaleLockOwnerNote reports a ref-lock-owner note naming a process that is
// gone (see gitrepo.Repo.StaleLockOwnerNote).
func (st *Store) StaleLockOwnerNote() (path string, pid int, stale bool) {
	return st.Repo.StaleLockOwnerNote()
}

// RemoveStaleLockOwnerNote removes every note that is still stale.
func (st *Store) RemoveStaleLockOwnerNote() error { return st.Repo.RemoveStaleLockOwnerNote() }

// Temp file prefixes of the view: a view file being written (.orch-new-,
// removed whenever found), a view file written whole or a view file
// displaced (.orch-tmp-, see placeView: kept in recovered/ when its content
// is not a version orch knows). The cache's are statecache.TempPrefix.
const (
	viewTempPrefix = ".orch-tmp-"
	viewNewPrefix  = ".orch-new-"
)

func isViewTemp(name string) bool {
	return strings.HasPrefix(name, viewTempPrefix) || strings.HasPrefix(name, viewNewPrefix)
}

// TempFiles lists the temp files orch writes and renames (view files, the
// state cache) that were left behind. orch writes them only while holding
// the orch lock, so a caller holding it passes minAge 0; one that does not
// passes StaleTempAge.
func (st *Store) TempFiles(minAge time.Duration) []string {
	var out []string
	look := func(dir string, temp func(string) bool) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if !temp(e.Name()) || !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info()
			if err != nil || time.Since(fi.ModTime()) < minAge {
				continue
			}
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	if st.View != "" {
		look(st.View, isViewTemp)
		for _, d := range mirroredDirs {
			if fi, err := os.Lstat(filepath.Join(st.View, d)); err == nil && fi.IsDir() {
				look(filepath.Join(st.View, d), isViewTemp)
			}
		}
	}
	look(st.priv, func(name string) bool { return strings.HasPrefix(name, statecache.TempPrefix) })
	sort.Strings(out)
	return out
}

// RemoveTempFile removes a file TempFiles listed (and nothing else).
func (st *Store) RemoveTempFile(path string) error {
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	ok := dir == filepath.Clean(st.priv) && strings.HasPrefix(name, statecache.TempPrefix)
	if st.View != "" && isViewTemp(name) {
		if dir == filepath.Clean(st.View) {
			ok = true
		}
		for _, d := range mirroredDirs {
			if dir == filepath.Join(st.View, d) {
				ok = true
			}
		}
	}
	if !ok {
		return fmt.Errorf("%s is not a temp file of orch", path)
	}
	if strings.HasPrefix(name, viewTempPrefix) && st.leftoverHoldsASave(path) {
		// A file orch displaced, holding what orch does not know: a save
		// that raced a killed orch. Kept, not removed.
		st.keepRecovered(filepath.Base(dir)+"/"+strings.TrimPrefix(name, viewTempPrefix), path)
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Checkup is a read-only look at the store for orch doctor: the branch tip
// and its tree read from the objects, and the state cache and sync index
// read from disk without trusting or changing them.
type Checkup struct {
	st *Store
	// Tip is the state branch's commit (ZeroHash: no branch); TipErr says
	// why the ref could not be read.
	Tip    plumbing.Hash
	TipErr error
	// SnapErr says why the tip's commit or trees could not be read.
	SnapErr error

	snap          *Snapshot
	cache         *statecache.Cache // as loaded (nil: none, or it did not decode)
	cacheSeen     bool              // the cache file exists
	cacheProblems []string          // why it cannot be trusted
}

// Checkup reads the branch and the cache for orch doctor.
func (st *Store) Checkup() *Checkup {
	cu := &Checkup{st: st}
	cu.Tip, cu.TipErr = st.Repo.ReadRef(st.Ref)
	if cu.TipErr == nil && !cu.Tip.IsZero() {
		cu.snap, cu.SnapErr = loadSnapshot(st.objs, cu.Tip, nil)
	}
	cu.cache, cu.cacheSeen, cu.cacheProblems = statecache.Inspect(st.cachePath(), st.Ref)
	return cu
}

// CacheHealth is what orch doctor finds in the state cache.
type CacheHealth struct {
	Path    string
	Exists  bool
	Tip     plumbing.Hash // the tip the cache describes
	Tasks   int
	Corrupt []string // reasons to rebuild it: it cannot be trusted
	Stale   bool     // it describes another tip (the next command catches up)
}

// Cache checks the state cache: it decodes, its journal is whole, and when
// it describes the branch tip its trees and task summaries are those of
// that tip.
func (cu *Checkup) Cache() CacheHealth {
	h := CacheHealth{Path: cu.st.cachePath(), Exists: cu.cacheSeen}
	h.Corrupt = append(h.Corrupt, cu.cacheProblems...)
	c := cu.cache
	if c == nil {
		return h
	}
	h.Tip, h.Tasks = c.Tip, c.Summaries.Len()
	if cu.TipErr != nil || c.Tip != cu.Tip {
		h.Stale = true
		return h
	}
	if cu.snap == nil {
		return h
	}
	if c.Root != cu.snap.Root {
		h.Corrupt = append(h.Corrupt, fmt.Sprintf("it names root tree %s, the tip has %s", short(c.Root), short(cu.snap.Root)))
	}
	var bad []string
	for d, want := range cu.snap.dirs {
		got := c.Dirs[d]
		if got == nil || got.Hash != want.Hash || !sameEntries(got.Entries, want.Entries) {
			bad = append(bad, dirName(d))
		}
	}
	for d := range c.Dirs {
		if cu.snap.dirs[d] == nil {
			bad = append(bad, dirName(d))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		h.Corrupt = append(h.Corrupt, "its trees differ from the tip's in "+strings.Join(bad, ", "))
	}
	var wrong []string
	tasks := map[string]bool{}
	for _, fe := range cu.snap.Files(TasksDir) {
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
		h.Corrupt = append(h.Corrupt, fmt.Sprintf("%d task summaries differ from the tip (%s)", len(wrong), clipList(wrong, 3)))
	}
	return h
}

func dirName(d string) string {
	if d == "" {
		return "the root"
	}
	return d + "/"
}

func short(h plumbing.Hash) string { return h.String()[:7] }

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

// RebuildCache replaces the state cache with one that holds only the view's
// sync index (when the old cache still decodes: it records which view files
// orch wrote, and which are in conflict), so that the next Lock rebuilds the
// trees and task summaries from the branch. It reports whether the index
// was kept. The caller holds the exclusive orch lock (DoctorLock).
func (st *Store) RebuildCache() (keptIndex bool, err error) {
	return statecache.Rebuild(st.cachePath(), st.Ref)
}

// View drift kinds: how a view file and the branch disagree before the
// reconcile every command runs.
const (
	DriftMissing    = "missing"     // on the branch, not in the view: restored
	DriftBehind     = "behind"      // the view holds an older version: updated
	DriftEdited     = "edited"      // changed in the view: committed as a hand edit (or merged)
	DriftExtra      = "extra"       // only in the view: committed as made by hand
	DriftRemoved    = "removed"     // removed on the branch, still in the view: removed
	DriftStaleIndex = "stale_index" // differs from what the sync index says, with the same stat data: no command would notice
	DriftUnreadable = "unreadable"  // the view file cannot be read
)

// ViewDrift is one view file out of step with the branch.
type ViewDrift struct {
	Path string // path on the state branch (tasks/x.md)
	Kind string
	Data []byte // the view file's content (edited and extra files)
	Err  error  // DriftUnreadable
}

// ViewDrift compares the view with the branch tip and the sync index, file
// by file, reading every view file (the reconcile trusts stat data; this
// does not). Files in conflict are left to Conflicts.
func (cu *Checkup) ViewDrift() []ViewDrift {
	st := cu.st
	if st.View == "" || st.scan == nil || cu.snap == nil {
		return nil
	}
	scan := st.scan.wait()
	var index statecache.Index
	if cu.cache != nil {
		index = cu.cache.Index
	}
	paths := map[string]bool{}
	for _, fe := range cu.snap.AllFiles() {
		if Mirrored(fe.Path) {
			paths[fe.Path] = true
		}
	}
	scan.each(func(p string) { paths[p] = true })
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var out []ViewDrift
	for _, p := range sorted {
		ie := index.Get(p)
		if ie != nil && !ie.ConflictW.IsZero() {
			continue
		}
		r, rok := cu.snap.Get(p)
		ws, wok := lstatPath(viewPath(st.View, p))
		if !wok {
			if rok {
				out = append(out, ViewDrift{Path: p, Kind: DriftMissing})
			}
			continue
		}
		data, err := st.ReadViewFile(p)
		if err != nil {
			out = append(out, ViewDrift{Path: p, Kind: DriftUnreadable, Err: err})
			continue
		}
		w := gitrepo.HashBlob(data)
		switch {
		case rok && w == r:
			// In step (a stale index entry is simply recorded again).
		case ie != nil && statMatches(ie, ws) && w != ie.Blob:
			out = append(out, ViewDrift{Path: p, Kind: DriftStaleIndex, Data: data})
		case !rok && ie == nil:
			out = append(out, ViewDrift{Path: p, Kind: DriftExtra, Data: data})
		case !rok && w == ie.Blob:
			out = append(out, ViewDrift{Path: p, Kind: DriftRemoved})
		case ie != nil && rok && w == ie.Blob:
			out = append(out, ViewDrift{Path: p, Kind: DriftBehind})
		case ie == nil && rok && st.objs.Has(w):
			// The index was lost and the view holds an older version.
			out = append(out, ViewDrift{Path: p, Kind: DriftBehind})
		default:
			out = append(out, ViewDrift{Path: p, Kind: DriftEdited, Data: data})
		}
	}
	return out
}

// DistrustViewStat marks the sync-index entries of paths as racy, so that
// the next reconcile reads those files instead of trusting their stat data.
// The caller holds the exclusive orch lock.
func (st *Store) DistrustViewStat(paths []string) error {
	path := st.cachePath()
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

// ConflictedFile is a view file kept uncommitted after both it and the
// branch changed in ways that could not be merged.
type ConflictedFile struct {
	Path      string // path on the state branch
	Conflicts []taskfile.Conflict
	// Changed: the view file changed since the conflict was found (the
	// person's resolution, which the next reconcile commits) or is gone.
	Changed bool
	// BranchGone: the branch no longer has the file.
	BranchGone bool
}

// Conflicts lists the view files the sync index marks as in conflict.
func (cu *Checkup) Conflicts() []ConflictedFile {
	st := cu.st
	if st.View == "" || cu.cache == nil || cu.snap == nil {
		return nil
	}
	var out []ConflictedFile
	cu.cache.Index.Each(func(p string, ie *statecache.IndexEntry) {
		if ie.ConflictW.IsZero() {
			return
		}
		cf := ConflictedFile{Path: p}
		r, rok := cu.snap.Get(p)
		cf.BranchGone = !rok
		data, err := st.ReadViewFile(p)
		var w plumbing.Hash
		if err == nil {
			w = gitrepo.HashBlob(data)
		}
		switch {
		case err == nil && rok && w == r:
			return // settled: the view holds the branch's version
		case err != nil || w != ie.ConflictW:
			cf.Changed = true
		case !rok:
			cf.Conflicts = []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "removed from the state branch"}}
		default:
			cf.Conflicts = st.describeConflict(p, ie.Blob, data, r)
		}
		out = append(out, cf)
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// ObjectsHealth is what orch doctor finds reading the tip's objects.
type ObjectsHealth struct {
	Trees   int
	Files   int
	Missing []string // files whose blob the repository lacks
}

// Objects checks that the tip's commit and trees could be read (SnapErr)
// and that every file's blob is present (without reading it).
func (cu *Checkup) Objects() ObjectsHealth {
	var h ObjectsHealth
	if cu.snap == nil {
		return h
	}
	h.Trees = len(cu.snap.dirs)
	for _, fe := range cu.snap.AllFiles() {
		h.Files++
		if !cu.st.objs.Has(fe.Blob) {
			h.Missing = append(h.Missing, fe.Path)
		}
	}
	return h
}
