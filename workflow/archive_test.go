package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
)

// An archived task is found by its ID and by a prefix of its random part,
// never by a prefix too short to name a shard; verbs other than the ones
// that read or reopen it get ArchivedError; a dependency on it is met when
// it is done; and the batch moves the oldest due tasks first, a batch at a
// time.
func TestArchiveLookupsAndBatches(t *testing.T) {
	dir, ids := scopeRepo(t, "base_branch: main\n", map[string][]string{"One": nil, "Two": nil, "Three": nil})
	e := openAs(t, dir, "lead", false)
	defer e.Close()
	for _, title := range []string{"One", "Two", "Three"} {
		if _, err := e.Approve(ids[title], ""); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing is due yet: archive_after is 30 days.
	if moved, err := e.archiveBatch(10); err != nil || len(moved) != 0 {
		t.Fatalf("archiveBatch at once = %v, %v", moved, err)
	}
	// 31 days on, a batch of 2 moves two of the three, the oldest first.
	now := time.Now()
	e.Now = func() time.Time { return now.Add(31 * 24 * time.Hour) }
	moved, err := e.archiveBatch(2)
	if err != nil || len(moved) != 2 {
		t.Fatalf("archiveBatch(2) = %v, %v", moved, err)
	}
	if moved[0] != ids["One"] && moved[0] != ids["Two"] && moved[0] != ids["Three"] {
		t.Fatalf("moved %v", moved)
	}
	// Dependencies read the archived IDs' cache, made from this archive.
	left := ""
	for _, title := range []string{"One", "Two", "Three"} {
		if ids[title] != moved[0] && ids[title] != moved[1] {
			left = ids[title]
		}
	}
	if !e.archivedDone(moved[0]) || !e.archivedDone(moved[1]) || e.archivedDone(left) {
		t.Fatalf("after one batch: archivedDone %v %v (archived), %v (not yet)", e.archivedDone(moved[0]), e.archivedDone(moved[1]), e.archivedDone(left))
	}
	rest, err := e.archiveBatch(2)
	if err != nil || len(rest) != 1 {
		t.Fatalf("second archiveBatch(2) = %v, %v", rest, err)
	}
	id := rest[0]
	// The archive changed: the cache follows it, here and on disk for the
	// next process.
	if !e.archivedDone(id) {
		t.Errorf("archivedDone(%s) after the batch that moved it = false", id)
	}
	tree, _ := e.Store.Snapshot().ArchivedQueueTree(taskfile.Done)
	onDisk := statecache.LoadArchivedIDs(filepath.Join(e.Store.PrivDir(), statecache.ArchivedDoneName), tree, func() ([]string, error) {
		return nil, errors.New("the cache on disk was not made from the archive as it is")
	})
	for _, d := range append(moved, id) {
		if onDisk == nil || !onDisk.Has(d) {
			t.Errorf("the cache on disk lacks %s", d)
		}
	}
	if e.Store.SummaryByID(id) != nil {
		t.Fatalf("%s is still among the tasks", id)
	}

	// Look-ups.
	_, rnd, _ := strings.Cut(id, "-")
	for _, ref := range []string{id, strings.ToLower(id), rnd, rnd[:3], id[:5]} {
		_, err := e.Find(ref)
		var ae *ArchivedError
		if !errors.As(err, &ae) || ae.Task.Task.ID != id {
			t.Errorf("Find(%q) = %v, want ArchivedError for %s", ref, err, id)
		}
		s, archived, err := e.LookupArchived(ref)
		if err != nil || !archived || s.Task.ID != id || !gitstore.IsArchivePath(s.Path) {
			t.Errorf("LookupArchived(%q) = %v %v %v", ref, s, archived, err)
		}
	}
	// One character names no shard to look in: never an archived task
	// (it may match live tasks: "t" is a prefix of every "T-" ID).
	var ae *ArchivedError
	if s, err := e.Find(rnd[:1]); errors.As(err, &ae) || (s != nil && gitstore.IsArchivePath(s.Path)) {
		t.Errorf("Find(%q), one character: %v %v, want no archived task", rnd[:1], s, err)
	}
	if _, err := e.Claim(ClaimOptions{Task: id}); err == nil {
		t.Error("a claim of an archived task")
	}
	// A dependency on an archived done task is met.
	if ok, pending := e.DepsDone(&taskfile.Task{DependsOn: []string{id}}); !ok {
		t.Errorf("DepsDone on archived done %s: pending %v", id, pending)
	}
	if !e.archivedDone(id) || !e.archived(id) {
		t.Errorf("archivedDone(%s) = %v, archived = %v", id, e.archivedDone(id), e.archived(id))
	}
	if e.archivedDone("T-zzzzzz") || e.archived("T-zzzzzz") {
		t.Error("an ID that is not archived is")
	}
	all, err := e.ArchivedTasks()
	if err != nil || len(all) != 3 {
		t.Errorf("ArchivedTasks = %d, %v", len(all), err)
	}
	// The summaries are cached: read back whole, and made again when the
	// file is damaged.
	cache := filepath.Join(e.Store.PrivDir(), statecache.ArchivedSummariesName)
	if got := statecache.ReadArchivedSummaries(cache); len(got) != 3 {
		t.Fatalf("the archived summaries' cache holds %d, want 3", len(got))
	}
	for _, damage := range []func([]byte) []byte{
		func(b []byte) []byte { return b },                                                // intact: read back
		func(b []byte) []byte { b[len(b)/2] ^= 1; return b },                              // a flipped bit
		func(b []byte) []byte { return b[:len(b)-7] },                                     // cut short
		func(b []byte) []byte { return append([]byte("orch-state-cache v0"), b[19:]...) }, // another format
	} {
		b, err := os.ReadFile(cache)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cache, damage(b), 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := e.ArchivedTasks()
		if err != nil || len(again) != len(all) {
			t.Fatalf("ArchivedTasks again = %d, %v", len(again), err)
		}
		for i := range all {
			if again[i].Path != all[i].Path || again[i].Blob != all[i].Blob || again[i].Task.ID != all[i].Task.ID ||
				again[i].Task.Queue != all[i].Task.Queue || !again[i].Task.FinishedAt.Equal(all[i].Task.FinishedAt) {
				t.Errorf("ArchivedTasks again [%d] = %+v, want %+v", i, again[i], all[i])
			}
		}
		if got := statecache.ReadArchivedSummaries(cache); len(got) != 3 {
			t.Errorf("after ArchivedTasks the cache holds %d, want 3", len(got))
		}
	}
}

// An edit whose task was archived while the editor was open is committed
// to the archived file: never lost.
func TestEditOfTaskArchivedMeanwhile(t *testing.T) {
	dir, ids := scopeRepo(t, "base_branch: main\n", map[string][]string{"Edited": nil})
	id := ids["Edited"]
	e := openAs(t, dir, "lead", false)
	defer e.Close()
	if _, err := e.Approve(id, ""); err != nil {
		t.Fatal(err)
	}
	target, err := e.EditStart(id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Archive(id); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(target.Data), "title: Edited", "title: Edited while archived", 1)
	res, err := e.EditFinish(target, []byte(edited))
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil || !gitstore.IsArchivePath(res.Task.Path) || res.Task.Task.Title != "Edited while archived" {
		t.Fatalf("edit result %+v", res.Task)
	}
	s, archived, err := e.LookupArchived(id)
	if err != nil || !archived || s.Task.Title != "Edited while archived" {
		t.Fatalf("after the edit: %+v %v %v", s, archived, err)
	}
}
