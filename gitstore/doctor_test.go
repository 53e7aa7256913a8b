package gitstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/internal/testgit"
)

// checkup opens the store around dir without locking it, as orch doctor
// does, and looks.
func checkup(t *testing.T, dir string) (*Store, *Checkup) {
	t.Helper()
	st, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return st, st.Checkup()
}

func TestDoctorHealthyStore(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa", "T-bbbbbb")
	st, cu := checkup(t, dir)
	if cu.TipErr != nil || cu.SnapErr != nil || cu.Tip.String() != tip(t, dir) {
		t.Fatalf("tip %s %v %v, want %s", cu.Tip, cu.TipErr, cu.SnapErr, tip(t, dir))
	}
	if h := cu.Cache(); !h.Exists || h.Stale || len(h.Corrupt) > 0 || h.Tasks != 2 {
		t.Fatalf("cache: %+v", h)
	}
	if d := cu.ViewDrift(); len(d) > 0 {
		t.Fatalf("drift: %+v", d)
	}
	if c := cu.Conflicts(); len(c) > 0 {
		t.Fatalf("conflicts: %+v", c)
	}
	if o := cu.Objects(); len(o.Missing) > 0 || o.Files != 4 {
		t.Fatalf("objects: %+v", o)
	}
	if l := st.RefLockFiles(); len(l) > 0 {
		t.Fatalf("locks: %+v", l)
	}
	if tf := st.TempFiles(0); len(tf) > 0 {
		t.Fatalf("temp files: %v", tf)
	}
}

// A view file whose content changed while its stat data still matches the
// sync index: the reconcile trusts the stat data and never notices; the
// doctor reads the file, and DistrustViewStat makes the reconcile read it.
func TestDoctorStaleIndex(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa")
	p := taskPath("T-aaaaaa")
	full := viewFile(dir, p)
	orig := testgit.ReadFile(t, full)
	edited := strings.Replace(orig, "priority: P2", "priority: P1", 1)
	testgit.WriteFile(t, full, edited)
	// Make the index claim the edited file is the committed blob.
	st, _ := checkup(t, dir)
	c := statecache.Load(st.cachePath(), st.Ref, false)
	ie := c.Index.Get(p)
	ws, ok := lstatPath(full)
	if ie == nil || !ok {
		t.Fatal("no index entry or view file")
	}
	ie.Size, ie.Mtime, ie.Ctime, ie.Ino, ie.Racy = ws.size, ws.mtime, ws.ctime, ws.ino, false
	ie.MarkChanged()
	if err := c.Save(st.cachePath()); err != nil {
		t.Fatal(err)
	}
	before := tip(t, dir)
	rep, _ := reconcile(t, dir)
	if len(rep.Committed) > 0 || tip(t, dir) != before {
		t.Fatalf("the reconcile noticed after all: %+v", rep)
	}

	st, cu := checkup(t, dir)
	drift := cu.ViewDrift()
	if len(drift) != 1 || drift[0].Path != p || drift[0].Kind != DriftStaleIndex {
		t.Fatalf("drift: %+v", drift)
	}
	release, err := st.DoctorLock(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DistrustViewStat([]string{p}); err != nil {
		t.Fatal(err)
	}
	release()
	rep, _ = reconcile(t, dir)
	if len(rep.Committed) != 1 || showFile(t, dir, "orch", p) != edited {
		t.Fatalf("hand edit not committed: %+v", rep)
	}
	if _, cu := checkup(t, dir); len(cu.ViewDrift()) > 0 {
		t.Fatalf("still out of step: %+v", cu.ViewDrift())
	}
}

func TestDoctorViewDriftKinds(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa", "T-bbbbbb", "T-cccccc")
	os.Remove(viewFile(dir, taskPath("T-aaaaaa")))
	testgit.WriteFile(t, viewFile(dir, "tasks/new.md"), "---\ntitle: New\n---\n")
	testgit.WriteFile(t, viewFile(dir, taskPath("T-bbbbbb")), taskDoc("T-bbbbbb", "Edited", "incoming", "x"))
	gitMoveBranch(t, dir, "moved", taskPath("T-cccccc"), taskDoc("T-cccccc", "Moved", "incoming", "y"))
	_, cu := checkup(t, dir)
	got := map[string]string{}
	for _, d := range cu.ViewDrift() {
		got[d.Path] = d.Kind
	}
	want := map[string]string{
		taskPath("T-aaaaaa"): DriftMissing,
		"tasks/new.md":       DriftExtra,
		taskPath("T-bbbbbb"): DriftEdited,
		taskPath("T-cccccc"): DriftBehind,
	}
	if len(got) != len(want) {
		t.Fatalf("drift %v, want %v", got, want)
	}
	for p, k := range want {
		if got[p] != k {
			t.Errorf("%s: %q, want %q", p, got[p], k)
		}
	}
	if h := cu.Cache(); !h.Stale {
		t.Errorf("cache not stale after the branch moved: %+v", h)
	}
}

func TestDoctorCacheProblems(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa")
	st, _ := checkup(t, dir)
	path := st.cachePath()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// A flipped byte: the checksum fails.
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0xff
	testgit.WriteFile(t, path, string(bad))
	if _, cu := checkup(t, dir); len(cu.Cache().Corrupt) == 0 {
		t.Fatal("flipped byte not found")
	}

	// Another version's format.
	testgit.WriteFile(t, path, "orch-state-cache v1\nold")
	if _, cu := checkup(t, dir); len(cu.Cache().Corrupt) != 1 || !strings.Contains(cu.Cache().Corrupt[0], "another version of orch") {
		t.Fatalf("old format: %+v", cu.Cache())
	}

	// A cache that decodes but lies about the tip's tasks.
	testgit.WriteFile(t, path, string(good))
	c := statecache.Load(path, st.Ref, false)
	var lies []*Summary
	c.Summaries.Each(func(r *statecache.Record) {
		s := *r.Summary()
		s.Blob = plumbing.ZeroHash
		lies = append(lies, &s)
	})
	for _, s := range lies {
		c.PutSummary(s)
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	_, cu := checkup(t, dir)
	if h := cu.Cache(); len(h.Corrupt) != 1 || !strings.Contains(h.Corrupt[0], "task summaries differ") {
		t.Fatalf("lying summaries: %+v", h)
	}

	// A torn journal batch.
	testgit.WriteFile(t, path, string(good))
	os.Remove(statecache.JournalPath(path)) // the lies' batch
	st = openStore(t, dir)
	commitFiles(t, st, "two", taskPath("T-bbbbbb"), taskDoc("T-bbbbbb", "Two", "incoming", "b"))
	closeStore(t, st)
	f, err := os.OpenFile(statecache.JournalPath(path), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0x7f, 1, 2, 3, 4, 5})
	f.Close()
	st, cu = checkup(t, dir)
	if h := cu.Cache(); len(h.Corrupt) != 1 || !strings.Contains(h.Corrupt[0], "journal is damaged") {
		t.Fatalf("torn journal: %+v", h)
	}
}

// RebuildCache keeps the sync index (and with it the conflict marks) and
// drops what the branch can rebuild.
func TestDoctorRebuildCacheKeepsIndex(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa")
	p := taskPath("T-aaaaaa")
	st, _ := checkup(t, dir)
	c := statecache.Load(st.cachePath(), st.Ref, false)
	ie := c.Index.Get(p)
	ie.ConflictW, ie.ConflictR = plumbing.NewHash("1111111111111111111111111111111111111111"), plumbing.NewHash("2222222222222222222222222222222222222222")
	ie.MarkChanged()
	if err := c.Save(st.cachePath()); err != nil {
		t.Fatal(err)
	}
	kept, err := st.RebuildCache()
	if err != nil || !kept {
		t.Fatalf("RebuildCache: %v %v", kept, err)
	}
	c = statecache.Load(st.cachePath(), st.Ref, false)
	if !c.Tip.IsZero() || len(c.Dirs) > 0 || c.Summaries.Len() > 0 || c.Index.Get(p) == nil || c.Index.Get(p).ConflictW.IsZero() {
		t.Fatalf("rebuilt cache: tip %s, %d dirs, %d summaries, index %+v", c.Tip, len(c.Dirs), c.Summaries.Len(), c.Index.Get(p))
	}
	testgit.WriteFile(t, viewFile(dir, p), taskDoc("T-aaaaaa", "Mine", "incoming", "x"))
	_, cu := checkup(t, dir)
	if cf := cu.Conflicts(); len(cf) != 1 || cf[0].Path != p || !cf[0].Changed {
		t.Fatalf("conflict lost: %+v", cf)
	}
	closeStore(t, openStore(t, dir))
	if _, cu := checkup(t, dir); cu.Cache().Stale || len(cu.Cache().Corrupt) > 0 {
		t.Fatalf("not rebuilt: %+v", cu.Cache())
	}

	// A cache that does not decode is removed.
	testgit.WriteFile(t, st.cachePath(), "garbage")
	if kept, err := st.RebuildCache(); err != nil || kept {
		t.Fatalf("RebuildCache of garbage: %v %v", kept, err)
	}
	if _, err := os.Stat(st.cachePath()); !os.IsNotExist(err) {
		t.Fatalf("garbage kept: %v", err)
	}
}

func TestDoctorRefLocksAndTempFiles(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa")
	testgit.Git(t, dir, "remote", "add", "origin", "https://example.invalid/x.git")
	st, _ := checkup(t, dir)
	lock := filepath.Join(st.Repo.CommonDir, "refs", "heads", "orch.lock")
	tracking := filepath.Join(st.Repo.CommonDir, "refs", "remotes", "origin", "orch.lock")
	testgit.WriteFile(t, lock, "")
	testgit.WriteFile(t, tracking, "")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(tracking, old, old)
	locks := st.RefLockFiles()
	if len(locks) != 2 || locks[0].Path != lock || locks[0].Stale || locks[1].Ref != "refs/remotes/origin/orch" || !locks[1].Stale {
		t.Fatalf("locks: %+v", locks)
	}
	if ok, err := st.RemoveStaleRefLock(lock); ok || err != nil {
		t.Fatalf("a fresh lock was removed: %v %v", ok, err)
	}
	if ok, err := st.RemoveStaleRefLock(tracking); !ok || err != nil {
		t.Fatalf("a stale lock was kept: %v %v", ok, err)
	}

	// Left by an orch process that is gone.
	testgit.WriteFile(t, st.Repo.LockOwnerFile, "2147483000\n")
	mt := time.Now().Add(-5 * time.Second)
	os.Chtimes(lock, mt, mt)
	os.Chtimes(st.Repo.LockOwnerFile, mt, mt)
	if l := st.RefLockFiles(); len(l) != 1 || !l[0].Stale || !strings.Contains(l[0].Why, "2147483000") {
		t.Fatalf("dead orch's lock: %+v", l)
	}
	if _, pid, stale := st.StaleLockOwnerNote(); !stale || pid != 2147483000 {
		t.Fatalf("note: %d %v", pid, stale)
	}
	if err := st.RemoveStaleLockOwnerNote(); err != nil {
		t.Fatal(err)
	}
	testgit.WriteFile(t, st.Repo.LockOwnerFile, "1\n") // init: alive
	if _, _, stale := st.StaleLockOwnerNote(); stale {
		t.Fatal("a live process's note is stale")
	}

	tmpView := viewFile(dir, "tasks/.orch-tmp-1")
	tmpCache := filepath.Join(st.PrivDir(), ".cache-1")
	testgit.WriteFile(t, tmpView, "x")
	testgit.WriteFile(t, tmpCache, "x")
	testgit.WriteFile(t, viewFile(dir, "tasks/.other"), "x")
	if tf := st.TempFiles(0); len(tf) != 2 {
		t.Fatalf("temp files: %v", tf)
	}
	if tf := st.TempFiles(StaleTempAge); len(tf) != 0 {
		t.Fatalf("fresh temp files counted as stale: %v", tf)
	}
	if err := st.RemoveTempFile(viewFile(dir, "tasks/.other")); err == nil {
		t.Fatal("removed a file that is not orch's temp file")
	}
	for _, p := range st.TempFiles(0) {
		if err := st.RemoveTempFile(p); err != nil {
			t.Fatal(err)
		}
	}
	if tf := st.TempFiles(0); len(tf) != 0 {
		t.Fatalf("left: %v", tf)
	}
}

// Looking takes a shared lock and creates nothing; a held exclusive lock
// makes it wait, then fail.
func TestDoctorLock(t *testing.T) {
	dir := testgit.MakeRepo(t)
	st, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	release, err := st.DoctorLock(false)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := os.Stat(st.PrivDir()); !os.IsNotExist(err) {
		t.Fatalf("looking created %s", st.PrivDir())
	}
	held, err := st.DoctorLock(true)
	if err != nil {
		t.Fatal(err)
	}
	defer held()
	old := doctorLockWait
	doctorLockWait = 50 * time.Millisecond
	defer func() { doctorLockWait = old }()
	st2, _ := Open(Options{Dir: dir})
	if _, err := st2.DoctorLock(false); err == nil {
		t.Fatal("shared lock taken while held exclusively")
	} else if _, ok := err.(*ErrLockTimeout); !ok {
		t.Fatalf("error %T %v", err, err)
	}
}
