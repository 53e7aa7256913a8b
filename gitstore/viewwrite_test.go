package gitstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/taskfile"
)

// saveByRename is an editor's save: a new file renamed over the old one.
func saveByRename(t *testing.T, full, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(full), ".editor-save.swp")
	testgit.WriteFile(t, tmp, content)
	if err := os.Rename(tmp, full); err != nil {
		t.Fatal(err)
	}
}

// withLine is the view document of id with a line the person added.
func withLine(id, line string) string {
	return strings.Replace(viewDoc(id), "Body of "+id+".", "Body of "+id+".\n"+line, 1)
}

// TestPlaceViewRaces: a save that lands while a commit replaces the view
// file is never lost: it is put back (and merged by the next reconcile),
// or kept in recovered/. Each case acts at one of the moments a save can
// race the write (viewHooks), with and without leases.
func TestPlaceViewRaces(t *testing.T) {
	type raceCase struct {
		name string
		// act sets the hooks or acts before the commit, and returns what
		// waits for the person's save to finish (or nil); after runs
		// between the commit and the next reconcile.
		act   func(t *testing.T, st *Store, full, id string) (wait func())
		after func(t *testing.T, full, id string)
		// wantView is the view file right after the commit ("" = the
		// branch's new version); wantRecovered, a save kept in recovered/.
		wantView      func(id string) string
		wantRecovered func(id string) string
		// onBranch must be in the task file after the next reconcile.
		onBranch []string
		leases   bool // needs leases (skipped without)
	}
	cases := []raceCase{
		{
			name: "nothing races",
			act:  func(*testing.T, *Store, string, string) func() { return nil },
		},
		{
			name: "editor renames in the window",
			act: func(t *testing.T, st *Store, full, id string) func() {
				st.hooks.held = func(full string) { saveByRename(t, full, withLine(id, "Saved by rename.")) }
				return nil
			},
			wantView: func(id string) string { return withLine(id, "Saved by rename.") },
			onBranch: []string{"Saved by rename.", "queue: claimed"},
		},
		{
			name: "append in the window",
			act: func(t *testing.T, st *Store, full, id string) func() {
				done := make(chan error, 1)
				st.hooks.held = func(full string) {
					go func() {
						// Blocks on orch's lease until orch lets go of the
						// file: the append must then land where a person
						// sees it.
						f, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND, 0)
						if err == nil {
							_, err = f.WriteString("Appended in the window.\n")
							err = errors.Join(err, f.Close())
						}
						done <- err
					}()
					waitLeaseBreak(t, full) // the open is waiting on orch's lease
				}
				st.hooks.placed = func(string) { t.Error("orch's file was placed although a writer opened the old one") }
				return func() {
					if err := <-done; err != nil {
						t.Error(err)
					}
				}
			},
			wantView: func(id string) string { return viewDoc(id) + "Appended in the window.\n" },
			onBranch: []string{"Appended in the window.", "queue: claimed"},
			leases:   true,
		},
		{
			name: "cat >> holds the file open",
			act: func(t *testing.T, st *Store, full, id string) func() {
				f, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				st.hooks.placed = func(string) {
					t.Error("orch's file was placed while a writer held the old one open")
				}
				st.hooks.held = func(string) { t.Error("a file open for writing was held") }
				heldOpen = f
				return nil
			},
			after: func(t *testing.T, full, id string) {
				if _, err := heldOpen.WriteString("Typed into cat.\n"); err != nil {
					t.Fatal(err)
				}
				heldOpen.Close()
			},
			wantView: func(id string) string { return viewDoc(id) },
			onBranch: []string{"Typed into cat.", "queue: claimed"},
			leases:   true,
		},
		{
			name: "a writer finishes while orch waits for it",
			act: func(t *testing.T, st *Store, full, id string) func() {
				// Open before the commit, written and closed while orch
				// waits for the lease: the stat data orch took on opening
				// is older than the write.
				f, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					time.Sleep(holdWait / 4)
					_, err := f.WriteString("Written while orch waited.\n")
					done <- errors.Join(err, f.Close())
				}()
				st.hooks.placed = func(string) { t.Error("orch's file was placed over a write it did not see") }
				return func() {
					if err := <-done; err != nil {
						t.Error(err)
					}
				}
			},
			wantView: func(id string) string { return viewDoc(id) + "Written while orch waited.\n" },
			onBranch: []string{"Written while orch waited.", "queue: claimed"},
			leases:   true,
		},
		{
			name: "editor keeps a backup",
			act: func(t *testing.T, st *Store, full, id string) func() {
				st.hooks.held = func(full string) {
					if err := os.Rename(full, full+"~"); err != nil {
						t.Fatal(err)
					}
				}
				return nil
			},
			after: func(t *testing.T, full, id string) {
				// The editor writes its new file over the path (over
				// orch's file, which took the empty place) and drops the
				// backup.
				testgit.WriteFile(t, full, withLine(id, "Saved with a backup."))
				os.Remove(full + "~")
			},
			onBranch: []string{"Saved with a backup.", "queue: claimed"},
		},
		{
			name: "saved twice in the window",
			act: func(t *testing.T, st *Store, full, id string) func() {
				st.hooks.held = func(full string) { saveByRename(t, full, withLine(id, "First save.")) }
				st.hooks.exchanged = func(full string) { saveByRename(t, full, withLine(id, "First save.\nSecond save.")) }
				return nil
			},
			wantView:      func(id string) string { return withLine(id, "First save.") },
			wantRecovered: func(id string) string { return withLine(id, "First save.\nSecond save.") },
			onBranch:      []string{"First save.", "queue: claimed"},
		},
		{
			name: "saved as orch's file lands",
			act: func(t *testing.T, st *Store, full, id string) func() {
				// Saved from a buffer loaded before the commit.
				// Copied in with its old mtime kept (cp -p, rsync -t): stat
				// data that is not racy, so only its inode tells it apart.
				st.hooks.placed = func(full string) {
					saveByRename(t, full, withLine(id, "Saved over orch's file."))
					old := time.Now().Add(-time.Hour)
					if err := os.Chtimes(full, old, old); err != nil {
						t.Fatal(err)
					}
				}
				return nil
			},
			wantView: func(id string) string { return withLine(id, "Saved over orch's file.") },
			onBranch: []string{"Saved over orch's file.", "queue: claimed"},
		},
	}
	for _, leases := range []bool{true, false} {
		for _, c := range cases {
			name := c.name
			if !leases {
				if c.leases {
					continue
				}
				name += " (no leases)"
			}
			t.Run(name, func(t *testing.T) {
				id := "T-race01"
				dir := viewRepo(t, id)
				p := taskPath(id)
				full := viewFile(dir, p)
				st := openStore(t, dir)
				st.noLeases = !leases
				wait := c.act(t, st, full, id)
				claimed := addField(setField(t, viewDoc(id), "queue", "claimed"), "claimed_by", "agent-a")
				commitFiles(t, st, "orch("+id+"): incoming -> claimed", p, claimed)
				closeStore(t, st)
				if wait != nil {
					wait()
				}
				want := claimed
				if c.wantView != nil {
					want = c.wantView(id)
				}
				if c.after == nil && testgit.ReadFile(t, full) != want {
					t.Fatalf("view after the commit:\n%s\nwant:\n%s\nnotes: %v", testgit.ReadFile(t, full), want, st.Notes())
				}
				rec := st.Recovered()
				switch {
				case c.wantRecovered == nil && len(rec) > 0:
					t.Fatalf("recovered %v, want none; notes %v", rec, st.Notes())
				case c.wantRecovered != nil:
					if len(rec) != 1 || testgit.ReadFile(t, filepath.Join(dir, rec[0])) != c.wantRecovered(id) {
						t.Fatalf("recovered %v, want one file holding the second save", rec)
					}
					if !strings.Contains(strings.Join(st.Notes(), "\n"), rec[0]) {
						t.Fatalf("the notes do not name %s: %v", rec[0], st.Notes())
					}
				}
				if c.after != nil {
					c.after(t, full, id)
				}
				rep, st2 := reconcile(t, dir)
				if len(rep.Conflicts)+len(rep.Broken) > 0 {
					t.Fatalf("reconcile after the race: %+v, notes %v", rep, st2.Notes())
				}
				got := showFile(t, dir, "orch", p)
				for _, s := range append([]string{"claimed_by: agent-a"}, c.onBranch...) {
					if !strings.Contains(got, s) {
						t.Errorf("branch lacks %q after the next reconcile:\n%s", s, got)
					}
				}
				if _, err := taskfile.Parse(p, []byte(got)); err != nil {
					t.Error(err)
				}
				if v := testgit.ReadFile(t, full); v != got {
					t.Errorf("view differs from the branch after the next reconcile:\n%s", v)
				}
				if rep, _ := reconcile(t, dir); !emptyReport(rep) {
					t.Errorf("a third reconcile still did something: %+v", rep)
				}
				if left, _ := filepath.Glob(filepath.Join(filepath.Dir(full), viewTempPrefix+"*")); len(left) > 0 {
					t.Errorf("temp files left in the view: %v", left)
				}
			})
		}
	}
}

// waitLeaseBreak returns once a process waits to open full for writing
// while orch holds its read lease: a new lease is refused (EAGAIN) while a
// lease break is pending.
func waitLeaseBreak(t *testing.T, full string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		f, err := os.Open(full)
		if err != nil {
			t.Fatal(err)
		}
		err = setLease(f, unix.F_RDLCK)
		if err == nil {
			_ = setLease(f, unix.F_UNLCK)
		}
		f.Close()
		if errors.Is(err, unix.EAGAIN) {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no writer came to wait on the lease")
}

// heldOpen is the file the "cat >>" case keeps open between its steps.
var heldOpen *os.File

// TestDropViewRace: a save that lands while orch removes a view file (the
// branch removed the task) is put back, and reported as a conflict.
func TestDropViewRace(t *testing.T) {
	id := "T-drop01"
	dir := viewRepo(t, id)
	p := taskPath(id)
	full := viewFile(dir, p)
	st := openStore(t, dir)
	st.hooks.held = func(full string) { saveByRename(t, full, withLine(id, "Saved as it went.")) }
	commitFiles(t, st, "orch("+id+"): archive", "-"+p, "")
	closeStore(t, st)
	if got := testgit.ReadFile(t, full); got != withLine(id, "Saved as it went.") {
		t.Fatalf("view after the removal: %q", got)
	}
	rep, _ := reconcile(t, dir)
	if len(rep.Conflicts[p]) == 0 {
		t.Fatalf("the save of a removed task is not reported: %+v", rep)
	}
}

// TestEmulatedExchange: the exchange of systems without an atomic one.
func TestEmulatedExchange(t *testing.T) {
	d := t.TempDir()
	a, b := filepath.Join(d, "a"), filepath.Join(d, "b")
	testgit.WriteFile(t, a, "new")
	testgit.WriteFile(t, b, "old")
	if err := emulatedExchange(a, b); err != nil {
		t.Fatal(err)
	}
	if testgit.ReadFile(t, a) != "old" || testgit.ReadFile(t, b) != "new" {
		t.Fatalf("after the exchange a=%q b=%q", testgit.ReadFile(t, a), testgit.ReadFile(t, b))
	}
	os.Remove(b)
	if err := emulatedExchange(a, b); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("exchange with a missing file: %v", err)
	}
	if testgit.ReadFile(t, a) != "old" {
		t.Fatal("a moved although the exchange failed")
	}
	if err := linkNoReplace(a, b); err != nil || testgit.ReadFile(t, b) != "old" {
		t.Fatalf("linkNoReplace onto nothing: %v", err)
	}
	testgit.WriteFile(t, a, "other")
	if err := linkNoReplace(a, b); !errors.Is(err, os.ErrExist) || testgit.ReadFile(t, b) != "old" {
		t.Fatalf("linkNoReplace onto a file: %v, b=%q", err, testgit.ReadFile(t, b))
	}
}

// TestLeftoverTempsRemoved: temp files a killed orch left in the view are
// cleaned up by the next command: a write it never finished (.orch-new-)
// and a whole one holding a version orch knows are removed; a displaced
// one holding anything else (a save that raced the killed orch) is kept in
// recovered/ and named.
func TestLeftoverTempsRemoved(t *testing.T) {
	id := "T-left01"
	dir := viewRepo(t, id)
	tasks := filepath.Join(dir, ViewDirName, TasksDir)
	testgit.WriteFile(t, filepath.Join(tasks, viewTempPrefix+"known"), viewDoc(id))
	testgit.WriteFile(t, filepath.Join(tasks, viewTempPrefix+"empty"), "")
	testgit.WriteFile(t, filepath.Join(tasks, viewTempPrefix+"typed"), withLine(id, "Typed as orch died."))
	testgit.WriteFile(t, filepath.Join(tasks, viewNewPrefix+"partial"), "---\nid: T-left01\nti")
	_, st := reconcile(t, dir)
	if left, _ := filepath.Glob(filepath.Join(tasks, ".orch-*")); len(left) > 0 {
		t.Fatalf("temp files left: %v", left)
	}
	rec := st.Recovered()
	if len(rec) != 1 || testgit.ReadFile(t, filepath.Join(dir, rec[0])) != withLine(id, "Typed as orch died.") {
		t.Fatalf("recovered %v", rec)
	}
	if !strings.Contains(strings.Join(st.Notes(), "\n"), rec[0]) {
		t.Fatalf("notes do not name %s: %v", rec[0], st.Notes())
	}
}
