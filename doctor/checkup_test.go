package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/internal/testgit"
)

func TestDoctorHealthyStore(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa", "T-bbbbbb")
	st, cu := checkupOf(t, dir)
	if cu.tipErr != nil || cu.snapErr != nil || cu.tip.String() != tip(t, dir) {
		t.Fatalf("tip %s %v %v, want %s", cu.tip, cu.tipErr, cu.snapErr, tip(t, dir))
	}
	if h := cu.cacheHealth(); !h.exists || h.stale || len(h.corrupt) > 0 || h.tasks != 2 {
		t.Fatalf("cache: %+v", h)
	}
	if d := cu.viewDrift(); len(d) > 0 {
		t.Fatalf("drift: %+v", d)
	}
	if c := cu.conflicts(); len(c) > 0 {
		t.Fatalf("conflicts: %+v", c)
	}
	if o := cu.objects(); len(o.missing) > 0 || o.files != 4 {
		t.Fatalf("objects: %+v", o)
	}
	if l := refLocks(st); len(l) > 0 {
		t.Fatalf("locks: %+v", l)
	}
	if tf := st.TempFiles(0); len(tf) > 0 {
		t.Fatalf("temp files: %v", tf)
	}
}

// A view file whose content changed while its stat data still matches the
// sync index: the reconcile trusts the stat data and never notices; the
// doctor reads the file, and distrustViewStat makes the reconcile read it.
func TestDoctorStaleIndex(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa")
	p := taskPath("T-aaaaaa")
	full := viewFile(dir, p)
	orig := testgit.ReadFile(t, full)
	edited := strings.Replace(orig, "priority: P2", "priority: P1", 1)
	testgit.WriteFile(t, full, edited)
	// Make the index claim the edited file is the committed blob.
	st, _ := checkupOf(t, dir)
	c := statecache.Load(st.CachePath(), st.Ref, false)
	ie := c.Index.Get(p)
	if ie == nil {
		t.Fatal("no index entry or view file")
	}
	forgeStat(t, full, &ie.Size, &ie.Mtime, &ie.Ctime, &ie.Ino)
	ie.Racy = false
	ie.MarkChanged()
	if err := c.Save(st.CachePath()); err != nil {
		t.Fatal(err)
	}
	before := tip(t, dir)
	rep := reconcile(t, dir)
	if len(rep.Committed) > 0 || tip(t, dir) != before {
		t.Fatalf("the reconcile noticed after all: %+v", rep)
	}

	st, cu := checkupOf(t, dir)
	drift := cu.viewDrift()
	if len(drift) != 1 || drift[0].path != p || drift[0].kind != driftStaleIndex {
		t.Fatalf("drift: %+v", drift)
	}
	release, err := st.DoctorLock(true, lockWait)
	if err != nil {
		t.Fatal(err)
	}
	if err := distrustViewStat(st, []string{p}); err != nil {
		t.Fatal(err)
	}
	release()
	rep = reconcile(t, dir)
	if len(rep.Committed) != 1 || showFile(t, dir, "orch", p) != edited {
		t.Fatalf("hand edit not committed: %+v", rep)
	}
	if _, cu := checkupOf(t, dir); len(cu.viewDrift()) > 0 {
		t.Fatalf("still out of step: %+v", cu.viewDrift())
	}
}

func TestDoctorViewDriftKinds(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa", "T-bbbbbb", "T-cccccc")
	os.Remove(viewFile(dir, taskPath("T-aaaaaa")))
	testgit.WriteFile(t, viewFile(dir, "tasks/new.md"), "---\ntitle: New\n---\n")
	testgit.WriteFile(t, viewFile(dir, taskPath("T-bbbbbb")), taskDoc("T-bbbbbb", "Edited", "incoming", "x"))
	gitMoveBranch(t, dir, "moved", taskPath("T-cccccc"), taskDoc("T-cccccc", "Moved", "incoming", "y"))
	_, cu := checkupOf(t, dir)
	got := map[string]string{}
	for _, d := range cu.viewDrift() {
		got[d.path] = d.kind
	}
	want := map[string]string{
		taskPath("T-aaaaaa"): driftMissing,
		"tasks/new.md":       driftExtra,
		taskPath("T-bbbbbb"): driftEdited,
		taskPath("T-cccccc"): driftBehind,
	}
	if len(got) != len(want) {
		t.Fatalf("drift %v, want %v", got, want)
	}
	for p, k := range want {
		if got[p] != k {
			t.Errorf("%s: %q, want %q", p, got[p], k)
		}
	}
	if h := cu.cacheHealth(); !h.stale {
		t.Errorf("cache not stale after the branch moved: %+v", h)
	}
}

func TestDoctorCacheProblems(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa")
	st, _ := checkupOf(t, dir)
	path := st.CachePath()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// A flipped byte: the checksum fails.
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0xff
	testgit.WriteFile(t, path, string(bad))
	if _, cu := checkupOf(t, dir); len(cu.cacheHealth().corrupt) == 0 {
		t.Fatal("flipped byte not found")
	}

	// Another version's format.
	testgit.WriteFile(t, path, "orch-state-cache v1\nold")
	if _, cu := checkupOf(t, dir); len(cu.cacheHealth().corrupt) != 1 || !strings.Contains(cu.cacheHealth().corrupt[0], "another version of orch") {
		t.Fatalf("old format: %+v", cu.cacheHealth())
	}

	// A cache that decodes but lies about the tip's tasks.
	testgit.WriteFile(t, path, string(good))
	c := statecache.Load(path, st.Ref, false)
	var lies []*statecache.Summary
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
	_, cu := checkupOf(t, dir)
	if h := cu.cacheHealth(); len(h.corrupt) != 1 || !strings.Contains(h.corrupt[0], "task summaries differ") {
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
	_, cu = checkupOf(t, dir)
	if h := cu.cacheHealth(); len(h.corrupt) != 1 || !strings.Contains(h.corrupt[0], "journal is damaged") {
		t.Fatalf("torn journal: %+v", h)
	}
}

// Rebuilding the cache (statecache.Rebuild, as --fix does) keeps the sync
// index (and with it the conflict marks) and drops what the branch can
// rebuild.
func TestDoctorRebuildCacheKeepsIndex(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa")
	p := taskPath("T-aaaaaa")
	st, _ := checkupOf(t, dir)
	c := statecache.Load(st.CachePath(), st.Ref, false)
	ie := c.Index.Get(p)
	ie.ConflictW, ie.ConflictR = plumbing.NewHash("1111111111111111111111111111111111111111"), plumbing.NewHash("2222222222222222222222222222222222222222")
	ie.MarkChanged()
	if err := c.Save(st.CachePath()); err != nil {
		t.Fatal(err)
	}
	kept, err := statecache.Rebuild(st.CachePath(), st.Ref)
	if err != nil || !kept {
		t.Fatalf("Rebuild: %v %v", kept, err)
	}
	c = statecache.Load(st.CachePath(), st.Ref, false)
	if !c.Tip.IsZero() || len(c.Dirs) > 0 || c.Summaries.Len() > 0 || c.Index.Get(p) == nil || c.Index.Get(p).ConflictW.IsZero() {
		t.Fatalf("rebuilt cache: tip %s, %d dirs, %d summaries, index %+v", c.Tip, len(c.Dirs), c.Summaries.Len(), c.Index.Get(p))
	}
	testgit.WriteFile(t, viewFile(dir, p), taskDoc("T-aaaaaa", "Mine", "incoming", "x"))
	_, cu := checkupOf(t, dir)
	if cf := cu.conflicts(); len(cf) != 1 || cf[0].path != p || !cf[0].changed {
		t.Fatalf("conflict lost: %+v", cf)
	}
	closeStore(t, openStore(t, dir))
	if _, cu := checkupOf(t, dir); cu.cacheHealth().stale || len(cu.cacheHealth().corrupt) > 0 {
		t.Fatalf("not rebuilt: %+v", cu.cacheHealth())
	}

	// A cache that does not decode is removed.
	testgit.WriteFile(t, st.CachePath(), "garbage")
	if kept, err := statecache.Rebuild(st.CachePath(), st.Ref); err != nil || kept {
		t.Fatalf("Rebuild of garbage: %v %v", kept, err)
	}
	if _, err := os.Stat(st.CachePath()); !os.IsNotExist(err) {
		t.Fatalf("garbage kept: %v", err)
	}
}

func TestDoctorRefLocksAndTempFiles(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa")
	testgit.Git(t, dir, "remote", "add", "origin", "https://example.invalid/x.git")
	st, _ := checkupOf(t, dir)
	lock := filepath.Join(st.Repo.CommonDir, "refs", "heads", "orch.lock")
	tracking := filepath.Join(st.Repo.CommonDir, "refs", "remotes", "origin", "orch.lock")
	testgit.WriteFile(t, lock, "")
	testgit.WriteFile(t, tracking, "")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(tracking, old, old)
	locks := refLocks(st)
	if len(locks) != 2 || locks[0].path != lock || locks[0].stale || locks[1].ref != "refs/remotes/origin/orch" || !locks[1].stale {
		t.Fatalf("locks: %+v", locks)
	}
	if ok, err := removeStaleRefLock(st, lock); ok || err != nil {
		t.Fatalf("a fresh lock was removed: %v %v", ok, err)
	}
	if ok, err := removeStaleRefLock(st, tracking); !ok || err != nil {
		t.Fatalf("a stale lock was kept: %v %v", ok, err)
	}

	// Left by an orch process that is gone.
	testgit.WriteFile(t, st.Repo.LockOwnerFile, "2147483000\n")
	mt := time.Now().Add(-5 * time.Second)
	os.Chtimes(lock, mt, mt)
	os.Chtimes(st.Repo.LockOwnerFile, mt, mt)
	if l := refLocks(st); len(l) != 1 || !l[0].stale || !strings.Contains(l[0].why, "2147483000") {
		t.Fatalf("dead orch's lock: %+v", l)
	}
	if _, pid, stale := st.Repo.StaleLockOwnerNote(); !stale || pid != 2147483000 {
		t.Fatalf("note: %d %v", pid, stale)
	}
	if err := st.Repo.RemoveStaleLockOwnerNote(); err != nil {
		t.Fatal(err)
	}
	testgit.WriteFile(t, st.Repo.LockOwnerFile, "1\n") // init: alive
	if _, _, stale := st.Repo.StaleLockOwnerNote(); stale {
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
	if tf := st.TempFiles(staleTempAge); len(tf) != 0 {
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

// The checkup reads the tip's trees from the objects, not from the cache it
// checks: a cache whose tree for tasks/ keeps its id but lies about its
// entries is found out.
func TestDoctorCheckupTrustsNoCachedTree(t *testing.T) {
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aaaaaa")
	st, _ := checkupOf(t, dir)
	c := statecache.Load(st.CachePath(), st.Ref, false)
	d := c.Dirs[gitstore.TasksDir]
	if d == nil || len(d.Entries) != 1 {
		t.Fatalf("cached tasks/: %+v", d)
	}
	lie := append([]gitrepo.TreeEntry(nil), d.Entries...)
	lie[0].Hash = plumbing.NewHash("3333333333333333333333333333333333333333")
	c.Dirs[gitstore.TasksDir] = &gitrepo.Tree{Hash: d.Hash, Entries: lie}
	if err := c.Save(st.CachePath()); err != nil {
		t.Fatal(err)
	}
	_, cu := checkupOf(t, dir)
	if h := cu.cacheHealth(); len(h.corrupt) != 1 || !strings.Contains(h.corrupt[0], "trees differ from the tip's in tasks/") {
		t.Fatalf("lying tree: %+v", h)
	}
}
