package gitstore

import (
	"strings"
	"testing"

	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/taskfile"
)

func TestArchiveShard(t *testing.T) {
	for id, want := range map[string]string{"T-4k9x2m": "4", "PROJ-AB12cd": "a", "T-x": "x", "T-": "_", "noid": "n"} {
		if got := ArchiveShard(id); got != want {
			t.Errorf("ArchiveShard(%q) = %q, want %q", id, got, want)
		}
	}
	if got := ArchivePath("T-4k9x2m", taskfile.Done, "tasks/T-4k9x2m-fix-it.md"); got != "archive/done/4/T-4k9x2m-fix-it.md" {
		t.Errorf("ArchivePath = %q", got)
	}
	if got := ArchivePath("T-4k9x2m", taskfile.Failed, "tasks/fix-it.md"); got != "archive/failed/4/T-4k9x2m-fix-it.md" {
		t.Errorf("ArchivePath of a name a person chose = %q", got)
	}
	if got := UnarchivedPath("archive/done/4/T-4k9x2m-fix-it.md"); got != "tasks/T-4k9x2m-fix-it.md" {
		t.Errorf("UnarchivedPath = %q", got)
	}
}

// The archive is carried by tree id: a snapshot, its cache and the view
// never hold its files, yet commits change it, git sees it whole, and
// ArchivedIn, Archived and GetAny read it.
func TestArchiveNeverLoaded(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-aa0001", "T-aa0002", "T-bb0003")
	st := openStore(t, dir)
	move := func(id string) []string {
		p := taskPath(id)
		data, err := st.Snapshot().Read(p)
		if err != nil {
			t.Fatal(err)
		}
		return []string{"-" + p, "", ArchivePath(id, taskfile.Done, p), string(data)}
	}
	var pairs []string
	for _, id := range []string{"T-aa0001", "T-aa0002", "T-bb0003"} {
		pairs = append(pairs, move(id)...)
	}
	commitFiles(t, st, "orch: archive 3", pairs...)

	snap := st.Snapshot()
	for d := range snap.dirs {
		if d == ArchiveDir || strings.HasPrefix(d, ArchiveDir+"/") {
			t.Errorf("the snapshot holds %s", d)
		}
	}
	for d := range st.cache.Dirs {
		if strings.HasPrefix(d, ArchiveDir) {
			t.Errorf("the state cache holds %s", d)
		}
	}
	if snap.ArchiveTree().IsZero() {
		t.Fatal("no archive tree at the root")
	}
	if snap.Has(ArchivePath("T-aa0001", taskfile.Done, taskPath("T-aa0001"))) {
		t.Error("Get sees into the archive (it must not load it)")
	}
	if h, ok, err := snap.GetAny(ArchivePath("T-aa0001", taskfile.Done, taskPath("T-aa0001"))); err != nil || !ok || h.IsZero() {
		t.Errorf("GetAny = %v %v %v", h, ok, err)
	}
	aa, err := snap.ArchivedIn("a", "")
	if err != nil || len(aa) != 2 {
		t.Fatalf("ArchivedIn(a) = %v, %v", aa, err)
	}
	all, err := snap.Archived()
	if err != nil || len(all) != 3 {
		t.Fatalf("Archived() = %v, %v", all, err)
	}
	files := branchFiles(t, dir, "refs/heads/orch")
	for _, id := range []string{"T-aa0001", "T-aa0002", "T-bb0003"} {
		if _, ok := files[ArchivePath(id, taskfile.Done, taskPath(id))]; !ok {
			t.Errorf("git does not see %s in the archive: %v", id, files)
		}
		if _, ok := files[taskPath(id)]; ok {
			t.Errorf("%s is still among the tasks", id)
		}
	}
	if s := st.Summary(taskPath("T-aa0001")); s != nil {
		t.Errorf("a summary of an archived task: %+v", s)
	}

	// A commit elsewhere carries the archive over by id; taking a file
	// out of a shard drops the shard once it is empty.
	before := snap.ArchiveTree()
	commitFiles(t, st, "orch: new", taskPath("T-cc0004"), taskDoc("T-cc0004", "Another", "incoming", "x"))
	if st.Snapshot().ArchiveTree() != before {
		t.Error("a commit outside the archive changed its tree")
	}
	p := ArchivePath("T-bb0003", taskfile.Done, taskPath("T-bb0003"))
	data := showFile(t, dir, "refs/heads/orch", p)
	commitFiles(t, st, "orch: reopen", "-"+p, "", UnarchivedPath(p), data)
	files = branchFiles(t, dir, "refs/heads/orch")
	for f := range files {
		if strings.HasPrefix(f, "archive/done/b/") {
			t.Errorf("the empty shard is still there: %s", f)
		}
	}
	if _, ok := files[taskPath("T-bb0003")]; !ok {
		t.Error("the task did not come back")
	}
	testgit.Git(t, dir, "fsck", "--strict", "--no-dangling")
}
