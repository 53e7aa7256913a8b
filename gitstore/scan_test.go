package gitstore

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/internal/testgit"
)

// TestScanByEntries checks the view scan against what it must find: every
// regular file the view holds under a mirrored name, with its stat data,
// whether the branch lists it (found by position) or not (found by the
// second listing), and nothing else.
func TestScanByEntries(t *testing.T) {
	type entry struct {
		name string
		mode uint32
	}
	cases := []struct {
		name      string
		entries   []entry  // the branch's tasks/ (sorted below)
		files     []string // regular files in the view's tasks/
		dirs      []string // directories in the view's tasks/
		links     []string // symbolic links in the view's tasks/
		hard      []string // hard links to the first file, made by hand
		expect    bool     // hand the scan the entries (false: it lists only)
		want      []string // what the scan must find
		relisted  bool     // found more than the branch has
		uncounted int      // files counted but not reported (see maybeMirrored)
	}{
		{name: "same files", expect: true,
			entries: []entry{{"a.md", gitrepo.ModeFile}, {"b.md", gitrepo.ModeFile}, {"c.md", gitrepo.ModeExec}},
			files:   []string{"a.md", "b.md", "c.md"},
			want:    []string{"a.md", "b.md", "c.md"}},
		{name: "file deleted in the view", expect: true,
			entries: []entry{{"a.md", gitrepo.ModeFile}, {"b.md", gitrepo.ModeFile}},
			files:   []string{"b.md"},
			want:    []string{"b.md"}},
		{name: "made by hand", expect: true, relisted: true,
			entries: []entry{{"a.md", gitrepo.ModeFile}},
			files:   []string{"a.md", "new.md", "notes.txt", ".a.md.swp", "x.md~"},
			want:    []string{"a.md", "new.md"}},
		{name: "removed on the branch", expect: true, relisted: true,
			entries: []entry{{"b.md", gitrepo.ModeFile}},
			files:   []string{"a.md", "b.md"},
			want:    []string{"a.md", "b.md"}},
		{name: "directory and link under mirrored names", expect: true,
			entries: []entry{{"a.md", gitrepo.ModeFile}, {"d.md", gitrepo.ModeTree}, {"l.md", gitrepo.ModeSymlink}},
			files:   []string{"a.md"},
			dirs:    []string{"d.md"},
			links:   []string{"l.md"},
			want:    []string{"a.md"}},
		{name: "branch entry not a file, view file is", expect: true, relisted: true,
			entries: []entry{{"a.md", gitrepo.ModeFile}, {"l.md", gitrepo.ModeSymlink}},
			files:   []string{"a.md", "l.md"},
			want:    []string{"a.md", "l.md"}},
		{name: "hard link made by hand", expect: true, relisted: true,
			entries: []entry{{"a.md", gitrepo.ModeFile}, {"b.md", gitrepo.ModeFile}},
			files:   []string{"a.md", "b.md"},
			hard:    []string{"copy.md"},
			want:    []string{"a.md", "b.md", "copy.md"}},
		{name: "name with a control character", expect: true,
			entries: []entry{{"a.md", gitrepo.ModeFile}, {"b\x01.md", gitrepo.ModeFile}},
			files:   []string{"a.md", "b\x01.md"},
			want:    []string{"a.md"}, uncounted: 1},
		{name: "name with a control character, made by hand", expect: true,
			entries: []entry{{"a.md", gitrepo.ModeFile}},
			files:   []string{"a.md", "b\x01.md"},
			want:    []string{"a.md"}},
		{name: "nothing handed over", expect: false,
			entries: []entry{{"a.md", gitrepo.ModeFile}},
			files:   []string{"a.md", "b.md"},
			want:    []string{"a.md", "b.md"}},
		{name: "many files", expect: true},
		{name: "empty view dir", expect: true, entries: []entry{{"a.md", gitrepo.ModeFile}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "many files" {
				// Past the size at which several workers share the stats.
				for i := 0; i < 700; i++ {
					n := "t" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".md"
					tc.entries = append(tc.entries, entry{n, gitrepo.ModeFile})
					if i%7 != 0 {
						tc.files = append(tc.files, n)
						tc.want = append(tc.want, n)
					}
				}
			}
			view := t.TempDir()
			dir := filepath.Join(view, TasksDir)
			if err := os.MkdirAll(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("x "+f), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range tc.dirs {
				if err := os.Mkdir(filepath.Join(dir, d), 0o777); err != nil {
					t.Fatal(err)
				}
			}
			for _, h := range tc.hard {
				if err := os.Link(filepath.Join(dir, tc.files[0]), filepath.Join(dir, h)); err != nil {
					t.Fatal(err)
				}
			}
			for _, l := range tc.links {
				if err := os.Symlink("a.md", filepath.Join(dir, l)); err != nil {
					t.Fatal(err)
				}
			}
			var ents []gitrepo.TreeEntry
			for _, e := range tc.entries {
				ents = append(ents, gitrepo.TreeEntry{Name: e.name, Mode: e.mode})
			}
			sort.Slice(ents, func(i, j int) bool { return gitrepo.CompareEntries(&ents[i], &ents[j]) < 0 })

			s := startScan(view)
			if tc.expect {
				s.expect(map[string]*gitrepo.Tree{TasksDir: {Entries: ents}})
				s.expect(nil) // only the first call counts
			}
			s.wait()
			files := s.dirs[TasksDir]
			var got []string
			files.each(func(name string) { got = append(got, name) })
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("found %q, want %q", got, want)
			}
			if files.n != len(want)+tc.uncounted || s.n != files.n {
				t.Errorf("n = %d (scan %d), want %d", files.n, s.n, len(want)+tc.uncounted)
			}
			if relisted := len(files.extra) > 0; tc.expect && relisted != tc.relisted {
				t.Errorf("files found by the second listing: %v, want %v", files.extra, tc.relisted)
			}
			if tc.expect != files.sameEntries(ents) && len(ents) > 0 {
				t.Errorf("sameEntries = %v, want %v", files.sameEntries(ents), tc.expect)
			}
			for _, name := range want {
				ws, ok := scanGet(files, name)
				ls, lok := lstatPath(filepath.Join(dir, name))
				if !ok || !lok || ws != ls {
					t.Errorf("get(%q) = %+v, %v; lstat says %+v, %v", name, ws, ok, ls, lok)
				}
			}
			for i, e := range ents {
				ws, ok := scanGet(files, e.Name)
				if !files.sameEntries(ents) {
					continue
				}
				ps, pok := files.at(i)
				if ok != pok && !slices.Contains(want, e.Name) || pok && ps != ws {
					t.Errorf("at(%d) (%s) = %+v, %v; get = %+v, %v", i, e.Name, ps, pok, ws, ok)
				}
			}
			for _, name := range []string{"absent.md", "d.md", "l.md", "notes.txt", ".a.md.swp"} {
				if _, ok := scanGet(files, name); ok && !slices.Contains(want, name) {
					t.Errorf("get(%q) found a file the scan must not report", name)
				}
			}
		})
	}
}

// A cache file whose directories decode but whose checksum fails: the scan
// was handed the directories before the check, the cache is then rebuilt
// from the branch, and the reconcile still finds a hand edit and a file made
// by hand.
func TestReconcileCacheBadAfterDirs(t *testing.T) {
	t.Parallel()
	dir := viewRepo(t, "T-crc001", "T-crc002")
	st := openStore(t, dir)
	path := st.CachePath()
	closeStore(t, st)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-10] ^= 0xff // in the sync index, after the directories
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	l := statecache.Start(path, st.Ref, false)
	if l == nil || l.Dirs()[TasksDir] == nil {
		t.Fatal("the directories no longer decode: the test breaks the wrong part")
	}
	if c := l.Finish(); len(c.Dirs) > 0 {
		t.Fatal("the damaged cache decodes")
	}
	edited := setField(t, viewDoc("T-crc001"), "priority", "P0")
	testgit.WriteFile(t, viewFile(dir, taskPath("T-crc001")), edited)
	made := "tasks/made-by-hand.md"
	testgit.WriteFile(t, viewFile(dir, made), "---\ntitle: Made by hand\n---\n# Made by hand\n")
	rep, _ := reconcile(t, dir)
	if !contains(rep.Committed, taskPath("T-crc001")) || !contains(rep.Committed, made) {
		t.Fatalf("report %+v", rep)
	}
	if got := showFile(t, dir, "orch", taskPath("T-crc001")); got != edited {
		t.Fatalf("branch has\n%s", got)
	}
	if rep, _ := reconcile(t, dir); !emptyReport(rep) {
		t.Fatalf("after committing: %+v", rep)
	}
}

// Another command commits after this one read the cache early (to let the
// scan stat the branch's files while it waits for the lock) and before it
// takes the lock: the early read is not used, the scan's entries are of the
// older tip, and the reconcile still sees every hand edit, matching the
// scanned files by name.
func TestReconcileAfterCommitWhileWaiting(t *testing.T) {
	dir := viewRepo(t, "T-wait01", "T-wait02", "T-wait03")
	edited := setField(t, viewDoc("T-wait02"), "priority", "P0")
	testgit.WriteFile(t, viewFile(dir, taskPath("T-wait02")), edited)
	made := "tasks/made-while-waiting.md"
	testgit.WriteFile(t, viewFile(dir, made), "---\ntitle: Made while waiting\n---\n# Made while waiting\n")

	var other plumbing.Hash
	testHookBeforeLock = func() {
		testHookBeforeLock = nil
		b, err := Open(Options{Dir: dir})
		if err != nil {
			t.Error(err)
			return
		}
		if err := b.Lock(); err != nil {
			t.Error(err)
			return
		}
		// A branch change and a new task, made by the other command.
		other = commitFiles(t, b, "other", taskPath("T-wait01"), setField(t, viewDoc("T-wait01"), "priority", "P2"),
			taskPath("T-wait04"), taskDoc("T-wait04", "Task T-wait04", "incoming", "Body of T-wait04."))
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookBeforeLock = nil }()
	st, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Lock(); err != nil {
		t.Fatal(err)
	}
	if other.IsZero() {
		t.Fatal("the other command did not commit")
	}
	if st.early != nil {
		t.Fatal("the early read was kept")
	}
	scan := st.scan.wait()
	if files := scan.dirs[TasksDir]; files == nil || files.sameEntries(st.snap.dirs[TasksDir].Entries) {
		t.Fatal("the scan stat-ed the new tip's files: the test does not exercise the lookup by name")
	}
	// The new tip's files are found by name among those the scan stat-ed,
	// or stat-ed after it listed the directory again (the file made by
	// hand). Those the other command wrote may have been stat-ed before it
	// wrote them, or not at all: only the others are checked.
	ents := st.snap.dirs[TasksDir].Entries
	cur := scan.dirs[TasksDir].cursor(&ents[0])
	for i := range ents {
		ws, ok := cur.get(&ents[i])
		p := TasksDir + "/" + ents[i].Name
		if p == taskPath("T-wait01") || p == taskPath("T-wait04") {
			continue
		}
		ls, lok := lstatPath(viewFile(dir, p))
		if !ok || !lok || ws != ls {
			t.Errorf("%s: the scan has %+v, %v; lstat says %+v, %v", p, ws, ok, ls, lok)
		}
	}
	rep, err := st.Reconcile(testPolicy())
	if err != nil {
		t.Fatal(err)
	}
	closeStore(t, st)
	// The hand edit and the file made by hand are this command's to
	// commit; T-wait01 and T-wait04, which the other command wrote to the
	// view, are no hand edits.
	if !contains(rep.Committed, taskPath("T-wait02")) || !contains(rep.Committed, made) || len(rep.Committed) != 2 ||
		len(rep.Pulled)+len(rep.Restored)+len(rep.Broken)+len(rep.Conflicts) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if got := showFile(t, dir, "orch", taskPath("T-wait02")); got != edited {
		t.Fatalf("T-wait02 on the branch:\n%s", got)
	}
	if got := showFile(t, dir, "orch", taskPath("T-wait01")); got != setField(t, viewDoc("T-wait01"), "priority", "P2") {
		t.Fatalf("T-wait01 on the branch:\n%s", got)
	}
	if got := testgit.ReadFile(t, viewFile(dir, taskPath("T-wait04"))); got != taskDoc("T-wait04", "Task T-wait04", "incoming", "Body of T-wait04.") {
		t.Fatalf("view of T-wait04: %q", got)
	}
	if !strings.Contains(showFile(t, dir, "orch", made), "Made while waiting") {
		t.Fatal("the file made by hand is not on the branch")
	}
	if rep, _ := reconcile(t, dir); !emptyReport(rep) {
		t.Fatalf("left to reconcile: %+v", rep)
	}
}

// A deferred reconcile (Defer, then Settle) asks the command to run again
// when what it found could change the command's answer: a hand edit it
// committed, or a broken copy of a branch file. A broken file made by hand
// is no task, and is only reported.
func TestSettleBrokenFiles(t *testing.T) {
	t.Parallel()
	broken := "---\ntitle: [unclosed\n---\n# Broken\n"
	for _, tc := range []struct {
		name, path, content string
		again               bool
	}{
		{"broken file made by hand", "tasks/by-hand.md", broken, false},
		{"broken copy of a task", taskPath("T-setl01"), broken, true},
		{"hand edit", taskPath("T-setl01"), setField(t, viewDoc("T-setl01"), "priority", "P0"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := viewRepo(t, "T-setl01", "T-setl02")
			before := tip(t, dir)
			testgit.WriteFile(t, viewFile(dir, tc.path), tc.content)
			st, err := Open(Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Lock(); err != nil {
				t.Fatal(err)
			}
			st.Defer(testPolicy())
			rep, err := st.Settle()
			if again := errors.Is(err, ErrViewChanged); again != tc.again || err != nil && !again {
				t.Fatalf("Settle: %v, want run again %v", err, tc.again)
			}
			if tc.content == broken && rep.Broken[tc.path] == nil {
				t.Fatalf("not reported broken: %+v", rep)
			}
			closeStore(t, st)
			if moved := tip(t, dir) != before; moved != (tc.content != broken) {
				t.Fatalf("branch moved: %v", moved)
			}
			if got := testgit.ReadFile(t, viewFile(dir, tc.path)); got != tc.content {
				t.Fatalf("view file changed: %q", got)
			}
		})
	}
}

// scanGet looks up one name among the files a scan found.
func scanGet(f *scanFiles, name string) (fileStat, bool) {
	e := gitrepo.TreeEntry{Name: name, Mode: gitrepo.ModeFile}
	return f.cursor(&e).get(&e)
}
