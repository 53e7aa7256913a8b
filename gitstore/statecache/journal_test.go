package statecache

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

func sampleCache(n int) *Cache {
	c := newCache("refs/heads/orch")
	c.Tip = plumbing.NewHash("1111111111111111111111111111111111111111")
	c.Root = plumbing.NewHash("2222222222222222222222222222222222222222")
	var ents []gitrepo.TreeEntry
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("tasks/T-%06d-x.md", i)
		h := gitrepo.HashBlob([]byte(p))
		ents = append(ents, gitrepo.TreeEntry{Name: filepath.Base(p), Mode: gitrepo.ModeFile, Hash: h})
		c.PutSummary(&Summary{Path: p, Blob: h, Task: taskfile.Task{ID: fmt.Sprintf("T-%06d", i), Title: "t", Queue: taskfile.Incoming, Labels: []string{"a"}}})
		c.Index.put(p, &IndexEntry{Blob: h, Size: int64(i), Mtime: int64(i) * 7, Ino: uint64(i)})
	}
	c.Dirs["tasks"] = &gitrepo.Tree{Hash: plumbing.NewHash("3333333333333333333333333333333333333333"), Entries: ents}
	c.Dirs[""] = &gitrepo.Tree{Hash: c.Root, Entries: []gitrepo.TreeEntry{{Name: "tasks", Mode: gitrepo.ModeTree, Hash: c.Dirs["tasks"].Hash}}}
	return c
}

// view of a cache that ignores the private bookkeeping.
func cacheView(c *Cache) map[string]any {
	out := map[string]any{"tip": c.Tip, "root": c.Root}
	c.Summaries.Each(func(r *Record) {
		out["s "+r.Path] = normSummary(r.Summary())
	})
	c.Index.Each(func(p string, ie *IndexEntry) {
		e := *ie
		e.raw = nil
		if len(e.Prev) == 0 {
			e.Prev = nil
		}
		out["i "+p] = e
	})
	for p, d := range c.Dirs {
		out["d "+p] = fmt.Sprint(d.Hash, d.Entries)
	}
	return out
}

// normSummary makes empty and nil lists compare equal.
func normSummary(s *Summary) Summary {
	c := *s
	for _, l := range []*[]string{&c.Task.LockedOut, &c.Task.DependsOn, &c.Task.Labels} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return c
}

func keysOf(m map[string]any) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

func TestJournalRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	c := sampleCache(50)
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + journalSuffix); err == nil {
		t.Fatal("a first save wrote a journal, want a base")
	}
	// Change a little, save: a journal batch, not a base.
	c2 := Load(path, "refs/heads/orch", false)
	baseBefore, _ := os.ReadFile(path)
	c2.Tip = plumbing.NewHash("4444444444444444444444444444444444444444")
	c2.PutSummary(&Summary{Path: "tasks/T-000001-x.md", Task: taskfile.Task{ID: "T-000001", Queue: taskfile.Claimed}})
	c2.DropSummary("tasks/T-000002-x.md")
	touch(c2.Index.Get("tasks/T-000003-x.md")).Racy = true
	c2.DropIndex("tasks/T-000004-x.md")
	c2.Index.put("tasks/new.md", &IndexEntry{Blob: gitrepo.HashBlob([]byte("n")), ConflictW: gitrepo.HashBlob([]byte("w"))})
	nd := *c2.Dirs["tasks"]
	nd.Entries = nd.Entries[1:]
	c2.Dirs["tasks"] = &nd
	delete(c2.Dirs, "")
	if err := c2.Save(path); err != nil {
		t.Fatal(err)
	}
	if baseAfter, _ := os.ReadFile(path); string(baseAfter) != string(baseBefore) {
		t.Fatal("a small change rewrote the base")
	}
	if fi, err := os.Stat(path + journalSuffix); err != nil || fi.Size() > 5000 {
		t.Fatalf("journal: %v %v", fi, err)
	}
	c3 := Load(path, "refs/heads/orch", false)
	want, got := cacheView(c2), cacheView(c3)
	if !reflect.DeepEqual(want, got) {
		for _, k := range keysOf(want) {
			if !reflect.DeepEqual(want[k], got[k]) {
				t.Errorf("%s: got %v, want %v", k, got[k], want[k])
			}
		}
		t.Fatalf("reloaded cache differs (%d vs %d keys)", len(got), len(want))
	}
	// A second batch on top of the first.
	touch(c3.Index.Get("tasks/T-000005-x.md")).Size = 999
	if err := c3.Save(path); err != nil {
		t.Fatal(err)
	}
	c4 := Load(path, "refs/heads/orch", false)
	if !reflect.DeepEqual(cacheView(c3), cacheView(c4)) {
		t.Fatal("second batch lost")
	}
	// Nothing changed: nothing written.
	fi1, _ := os.Stat(path + journalSuffix)
	if err := c4.Save(path); err != nil {
		t.Fatal(err)
	}
	fi2, _ := os.Stat(path + journalSuffix)
	if fi1.Size() != fi2.Size() {
		t.Fatal("an unchanged cache appended to the journal")
	}
}

func TestJournalTornAndForeign(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	c := sampleCache(20)
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	c2 := Load(path, "refs/heads/orch", false)
	touch(c2.Index.Get("tasks/T-000001-x.md")).Size = 1001
	if err := c2.Save(path); err != nil {
		t.Fatal(err)
	}
	good := cacheView(Load(path, "refs/heads/orch", false))
	c3 := Load(path, "refs/heads/orch", false)
	touch(c3.Index.Get("tasks/T-000002-x.md")).Size = 1002
	if err := c3.Save(path); err != nil {
		t.Fatal(err)
	}
	j, _ := os.ReadFile(path + journalSuffix)
	// Tear the last batch: the first still applies, the torn one does not.
	for cut := 1; cut < 12; cut++ {
		if err := os.WriteFile(path+journalSuffix, j[:len(j)-cut], 0o600); err != nil {
			t.Fatal(err)
		}
		if got := cacheView(Load(path, "refs/heads/orch", false)); !reflect.DeepEqual(got, good) {
			t.Fatalf("torn by %d bytes: the cache is not the state before the torn batch", cut)
		}
	}
	// After a torn tail, the next save appends after the good part.
	c4 := Load(path, "refs/heads/orch", false)
	touch(c4.Index.Get("tasks/T-000003-x.md")).Size = 1003
	if err := c4.Save(path); err != nil {
		t.Fatal(err)
	}
	if got := cacheView(Load(path, "refs/heads/orch", false)); !reflect.DeepEqual(got, cacheView(c4)) {
		t.Fatal("save after a torn tail lost data")
	}
	// A flipped byte in a batch: that batch and what follows are ignored.
	j, _ = os.ReadFile(path + journalSuffix)
	bad := append([]byte(nil), j...)
	bad[len(bad)-3] ^= 0xff
	os.WriteFile(path+journalSuffix, bad, 0o600)
	if got := cacheView(Load(path, "refs/heads/orch", false)); !reflect.DeepEqual(got, good) {
		t.Fatal("a damaged batch was applied")
	}
	// A journal of another generation is ignored.
	os.WriteFile(path+journalSuffix, j, 0o600)
	other := sampleCache(20)
	other.Summaries.Get("tasks/T-000000-x.md").Summary().Task.Title = "other"
	if err := other.Save(path); err != nil { // new base, new generation
		t.Fatal(err)
	}
	os.WriteFile(path+journalSuffix, j, 0o600) // the old generation's journal
	if got := cacheView(Load(path, "refs/heads/orch", false)); !reflect.DeepEqual(got, cacheView(other)) {
		t.Fatal("a journal of another generation was applied")
	}
}

func TestJournalCompacts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := sampleCache(200).Save(path); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		c := Load(path, "refs/heads/orch", false)
		c.PutSummary(&Summary{Path: fmt.Sprintf("tasks/T-%06d-x.md", i%200), Task: taskfile.Task{ID: fmt.Sprint(i), Title: "a long enough title to grow the journal quickly"}})
		if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
		base, _ := os.Stat(path)
		if fi, err := os.Stat(path + journalSuffix); err == nil && fi.Size() > journalLimit(int(base.Size()))+64<<10 {
			t.Fatalf("journal grew to %d bytes (base %d) without a new base", fi.Size(), base.Size())
		}
	}
	c := Load(path, "refs/heads/orch", false)
	if r := c.Summaries.Get("tasks/T-000199-x.md"); r == nil || r.Summary().Task.ID != "1999" {
		t.Fatalf("last change lost: %+v", r)
	}
}

func TestDiffPatchEntries(t *testing.T) {
	mk := func(specs ...string) []gitrepo.TreeEntry {
		var out []gitrepo.TreeEntry
		for _, s := range specs {
			mode := uint32(gitrepo.ModeFile)
			name := s
			if s[len(s)-1] == '/' {
				mode, name = gitrepo.ModeTree, s[:len(s)-1]
			}
			out = append(out, gitrepo.TreeEntry{Name: name, Mode: mode, Hash: gitrepo.HashBlob([]byte(s))})
		}
		return out
	}
	cases := [][2][]gitrepo.TreeEntry{
		{mk(), mk("a")},
		{mk("a"), mk()},
		{mk("a", "b", "c"), mk("a", "c", "d")},
		{mk("a-b", "a.x", "b"), mk("a-b", "a.x", "a/")},
		{mk("a-b", "a/", "b"), mk("a-b", "b")},
		{mk("x", "y", "z"), mk("x", "y", "z")},
	}
	changed := mk("a", "b")
	changed[1].Hash = gitrepo.HashBlob([]byte("other"))
	cases = append(cases, [2][]gitrepo.TreeEntry{mk("a", "b"), changed})
	// A name that changes kind: a file becomes a directory.
	cases = append(cases, [2][]gitrepo.TreeEntry{mk("a", "b", "c"), mk("a", "b/", "c")})
	for i, c := range cases {
		// As a journal replay does: the delta into an overlay, flushed
		// onto the directory as it was.
		ups, dels := diffEntries(c[0], c[1])
		cache := newCache("refs/heads/orch")
		cache.Dirs["d"] = &gitrepo.Tree{Entries: c[0]}
		ov := cache.overlay("d")
		for _, en := range dels {
			ov.put[en.Name] = gitrepo.TreeEntry{Name: en.Name}
		}
		for _, en := range ups {
			ov.put[en.Name] = en
		}
		cache.flushOverlay("d")
		got := cache.Dirs["d"].Entries
		if fmt.Sprint(got) != fmt.Sprint(c[1]) {
			t.Errorf("case %d: patch(diff) = %v, want %v (ups %v dels %v)", i, got, c[1], ups, dels)
		}
	}
}

// touch marks an index entry changed, as the store's own mutations do.
func touch(ie *IndexEntry) *IndexEntry {
	ie.MarkChanged()
	return ie
}
