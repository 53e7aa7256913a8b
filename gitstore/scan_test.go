package gitstore

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
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
		name     string
		entries  []entry  // the branch's tasks/ (sorted below)
		files    []string // regular files in the view's tasks/
		dirs     []string // directories in the view's tasks/
		links    []string // symbolic links in the view's tasks/
		expect   bool     // hand the scan the entries (false: it lists only)
		want     []string // what the scan must find
		relisted bool     // found more than the branch has
	}{
		{name: "same files", expect: true,
			entries: []entry{{"a.md", modeFile}, {"b.md", modeFile}, {"c.md", modeExec}},
			files:   []string{"a.md", "b.md", "c.md"},
			want:    []string{"a.md", "b.md", "c.md"}},
		{name: "file deleted in the view", expect: true,
			entries: []entry{{"a.md", modeFile}, {"b.md", modeFile}},
			files:   []string{"b.md"},
			want:    []string{"b.md"}},
		{name: "made by hand", expect: true, relisted: true,
			entries: []entry{{"a.md", modeFile}},
			files:   []string{"a.md", "new.md", "notes.txt", ".a.md.swp", "x.md~"},
			want:    []string{"a.md", "new.md"}},
		{name: "removed on the branch", expect: true, relisted: true,
			entries: []entry{{"b.md", modeFile}},
			files:   []string{"a.md", "b.md"},
			want:    []string{"a.md", "b.md"}},
		{name: "directory and link under mirrored names", expect: true,
			entries: []entry{{"a.md", modeFile}, {"d.md", modeTree}, {"l.md", modeSymlink}},
			files:   []string{"a.md"},
			dirs:    []string{"d.md"},
			links:   []string{"l.md"},
			want:    []string{"a.md"}},
		{name: "branch entry not a file, view file is", expect: true, relisted: true,
			entries: []entry{{"a.md", modeFile}, {"l.md", modeSymlink}},
			files:   []string{"a.md", "l.md"},
			want:    []string{"a.md", "l.md"}},
		{name: "nothing handed over", expect: false,
			entries: []entry{{"a.md", modeFile}},
			files:   []string{"a.md", "b.md"},
			want:    []string{"a.md", "b.md"}},
		{name: "many files", expect: true},
		{name: "empty view dir", expect: true, entries: []entry{{"a.md", modeFile}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "many files" {
				// Past the size at which several workers share the stats.
				for i := 0; i < 700; i++ {
					n := "t" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".md"
					tc.entries = append(tc.entries, entry{n, modeFile})
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
			for _, l := range tc.links {
				if err := os.Symlink("a.md", filepath.Join(dir, l)); err != nil {
					t.Fatal(err)
				}
			}
			var ents []treeEntry
			for _, e := range tc.entries {
				ents = append(ents, treeEntry{name: e.name, mode: e.mode})
			}
			sort.Slice(ents, func(i, j int) bool { return entryCmp(&ents[i], &ents[j]) < 0 })

			s := startScan(view)
			if tc.expect {
				s.expect(map[string]*dirTree{TasksDir: {entries: ents}})
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
			if files.n != len(want) || s.n != len(want) {
				t.Errorf("n = %d (scan %d), want %d", files.n, s.n, len(want))
			}
			if relisted := len(files.extra) > 0; tc.expect && relisted != tc.relisted {
				t.Errorf("files found by the second listing: %v, want %v", files.extra, tc.relisted)
			}
			if tc.expect != files.sameEntries(ents) && len(ents) > 0 {
				t.Errorf("sameEntries = %v, want %v", files.sameEntries(ents), tc.expect)
			}
			for _, name := range want {
				ws, ok := files.get(name)
				ls, lok := lstatPath(filepath.Join(dir, name))
				if !ok || !lok || ws != ls {
					t.Errorf("get(%q) = %+v, %v; lstat says %+v, %v", name, ws, ok, ls, lok)
				}
			}
			for i, e := range ents {
				ws, ok := files.get(e.name)
				if !files.sameEntries(ents) {
					continue
				}
				ps, pok := files.at(i)
				if ok != pok && !slices.Contains(want, e.name) || pok && ps != ws {
					t.Errorf("at(%d) (%s) = %+v, %v; get = %+v, %v", i, e.name, ps, pok, ws, ok)
				}
			}
			for _, name := range []string{"absent.md", "d.md", "l.md", "notes.txt", ".a.md.swp"} {
				if _, ok := files.get(name); ok && !slices.Contains(want, name) {
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
	path := st.cachePath()
	closeStore(t, st)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-10] ^= 0xff // in the sync index, after the directories
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if c, _, err := decodeCacheDirs(b); err != nil || c.dirs[TasksDir] == nil {
		t.Fatalf("the directories no longer decode (%v): the test breaks the wrong part", err)
	}
	if _, err := decodeStateCache(b); err == nil {
		t.Fatal("the damaged cache decodes")
	}
	edited := setField(t, viewDoc("T-crc001"), "priority", "P0")
	writeFile(t, viewFile(dir, taskPath("T-crc001")), edited)
	made := "tasks/made-by-hand.md"
	writeFile(t, viewFile(dir, made), "---\ntitle: Made by hand\n---\n# Made by hand\n")
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
