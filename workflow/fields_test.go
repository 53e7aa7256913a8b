package workflow

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/statecache"
)

// TestTaskFieldsOf: the custom keys of many tasks come from the fields
// cache, which is built on first use, follows a changed file (a new blob)
// and is rebuilt when damaged; a task or two are read from their files.
func TestTaskFieldsOf(t *testing.T) {
	dir := fieldsRepo(t)
	// A person adds custom keys to one task in the view.
	view := filepath.Join(dir, gitstore.ViewDirName, gitstore.TasksDir)
	ents, err := os.ReadDir(view)
	if err != nil {
		t.Fatal(err)
	}
	custom := filepath.Join(view, ents[3].Name())
	addKey := func(line string) {
		t.Helper()
		b, err := os.ReadFile(custom)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(b), "\n---\n", "\n"+line+"\n---\n", 1)
		if err := os.WriteFile(custom, []byte(s), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	addKey("estimate: 3")
	check := func(want string) {
		t.Helper()
		e, err := Open(Options{Dir: dir, Actor: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		sums := e.Store.Summaries()
		if len(sums) < manyFields {
			t.Fatalf("%d tasks: the cache is not used", len(sums))
		}
		got := map[string]string{}
		for i, f := range e.TaskFieldsOf(sums) {
			got[filepath.Base(sums[i].Path)] = string(f)
			if one := string(e.TaskFields(sums[i])); one != string(f) {
				t.Errorf("%s: TaskFieldsOf %s, TaskFields %s", sums[i].Path, f, one)
			}
		}
		for name, f := range got {
			w := "{}"
			if name == ents[3].Name() {
				w = want
			}
			if f != w {
				t.Errorf("%s: fields %s, want %s", name, f, w)
			}
		}
	}
	cache := filepath.Join(dir, ".git", "orch", fieldsCacheName)
	check(`{"estimate":3}`)
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no fields cache: %v", err)
	}
	check(`{"estimate":3}`) // from the cache
	base, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	additions := filepath.Join(dir, ".git", "orch", fieldsAdditionsName)
	addKey("team: [web, \"<api>\"]")
	check(`{"estimate":3,"team":["web","\u003capi\u003e"]}`)
	// The changed file's new blob went to the additions; the cache is as
	// it was, and the next list finds the blob there and writes nothing.
	if now, _ := os.ReadFile(cache); string(now) != string(base) {
		t.Error("one new blob rewrote the whole fields cache")
	}
	added := readFieldsAdditions(cache, readFieldsCache(cache))
	if added.len() != 1 {
		t.Fatalf("additions: %d blobs, want 1", added.len())
	}
	before, _ := os.Stat(additions)
	check(`{"estimate":3,"team":["web","\u003capi\u003e"]}`)
	if after, _ := os.Stat(additions); !after.ModTime().Equal(before.ModTime()) {
		t.Error("a list that found every blob wrote the additions again")
	}
	// Additions to another cache (another checksum) are not trusted: a
	// wrong value there changes nothing.
	h, _ := added.at(0)
	writeFieldsAdditions(cache, readFieldsCache(cache).sum+1, map[plumbing.Hash]json.RawMessage{h: json.RawMessage(`{"wrong":1}`)})
	check(`{"estimate":3,"team":["web","\u003capi\u003e"]}`)
	// Damaged additions are not trusted either, and are written again
	// whole: a flipped bit, a cut, entries out of order under a right
	// checksum (not a file this code wrote), a FIFO in their place.
	good, err := os.ReadFile(additions)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFieldsAdditions(cache, readFieldsCache(cache)); got.len() != 1 {
		t.Fatalf("the additions were not written again for the right cache: %d blobs", got.len())
	}
	changed := append([]byte(nil), good...)
	changed[len(changed)-6] ^= 0x20 // in the value: the file's checksum no longer matches
	flipped := append([]byte(nil), good...)
	flipped[len(fieldsAdditionsMagic)+2] ^= 1 // in the cache's checksum
	swapped := binary.BigEndian.AppendUint32([]byte(fieldsAdditionsMagic), readFieldsCache(cache).sum)
	for _, b := range []byte{0xff, 0x01} {
		swapped = append(swapped, bytes.Repeat([]byte{b}, len(plumbing.Hash{}))...)
		swapped = binary.AppendUvarint(swapped, 0)
	}
	swapped = binary.BigEndian.AppendUint32(swapped, crc32.ChecksumIEEE(swapped))
	for name, damaged := range map[string][]byte{"changed value": changed, "flipped": flipped, "cut": good[:len(good)-7], "out of order": swapped, "fifo": nil} {
		if err := os.Remove(additions); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if damaged == nil {
			if err := syscall.Mkfifo(additions, 0o666); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(additions, damaged, 0o666); err != nil {
			t.Fatal(err)
		}
		if readFieldsAdditions(cache, readFieldsCache(cache)) != nil {
			t.Errorf("%s: damaged additions were read", name)
		}
		check(`{"estimate":3,"team":["web","\u003capi\u003e"]}`)
		if now, err := os.ReadFile(additions); err != nil || !bytes.Equal(now, good) {
			t.Errorf("%s: the additions were not written again (%v)", name, err)
		}
	}
	// Past the limit the additions go into the cache, written whole.
	many := map[plumbing.Hash]json.RawMessage{}
	for i := 0; i < fieldsAdditionsLimit(0); i++ {
		many[plumbing.ComputeHash(plumbing.BlobObject, []byte{byte(i), byte(i >> 8)})] = NoFields
	}
	writeFieldsAdditions(cache, readFieldsCache(cache).sum, many)
	addKey("owner: ana")
	check(`{"estimate":3,"owner":"ana","team":["web","\u003capi\u003e"]}`)
	if _, err := os.Stat(additions); !os.IsNotExist(err) {
		t.Errorf("the additions outlived the cache they were merged into: %v", err)
	}
	if c := readFieldsCache(cache); c.len() != 22 {
		t.Errorf("the cache written whole holds %d blobs, want the 22 tasks'", c.len())
	}
	if err := os.WriteFile(cache, []byte(fieldsMagic+"damaged"), 0o666); err != nil {
		t.Fatal(err)
	}
	check(`{"estimate":3,"owner":"ana","team":["web","\u003capi\u003e"]}`)
	if c := readFieldsCache(cache); c.len() != 22 {
		t.Errorf("the cache was not rebuilt: %d blobs", c.len())
	}
	// Blobs no task has any more (tasks archived, say) dominate the cache:
	// a list of every task, all found, writes it without them.
	stale := map[plumbing.Hash]json.RawMessage{}
	live := map[plumbing.Hash]bool{}
	kept := readFieldsCache(cache)
	for i := range kept.len() {
		h, v := kept.at(i)
		stale[h], live[h] = v, true
	}
	for i := 0; i < 100; i++ {
		h := plumbing.ComputeHash(plumbing.BlobObject, []byte{byte(i)})
		stale[h], live[h] = NoFields, true
	}
	writeFieldsCache(cache, stale, live)
	check(`{"estimate":3,"owner":"ana","team":["web","\u003capi\u003e"]}`)
	if c := readFieldsCache(cache); c.len() != 22 {
		t.Errorf("the cache kept blobs of no task: %d, want 22", c.len())
	}
	// With the state cache and the fields cache gone, the store parses
	// every task file to build its summaries, and the custom keys come
	// from that parse.
	for _, name := range []string{fieldsCacheName, "state", "state.journal"} {
		if err := os.Remove(filepath.Join(dir, ".git", "orch", name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	cold, err := Open(Options{Dir: dir, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cold.parsedFields); n != 22 {
		t.Errorf("building the state cache noted the fields of %d files, want 22", n)
	}
	sums := cold.Store.Summaries()
	withKeys := 0
	for i, f := range cold.TaskFieldsOf(sums) {
		if one := string(cold.TaskFields(sums[i])); one != string(f) {
			t.Errorf("cold: %s: TaskFieldsOf %s, TaskFields %s", sums[i].Path, f, one)
		}
		if string(f) != "{}" {
			withKeys++
		}
	}
	if withKeys != 1 {
		t.Errorf("cold: %d tasks with custom keys, want 1", withKeys)
	}
	cold.Close()
	check(`{"estimate":3,"owner":"ana","team":["web","\u003capi\u003e"]}`)
}

// TestFieldsCacheUnwritable: a fields cache, or its additions, that cannot
// be written (here a directory stands where the file goes, so the rename
// fails, as a full disk fails the write) costs only time: the custom keys
// come from the task files, no temporary file is left behind, and what
// stands there is left alone.
func TestFieldsCacheUnwritable(t *testing.T) {
	dir := fieldsRepo(t)
	priv := filepath.Join(dir, ".git", "orch")
	view := filepath.Join(dir, gitstore.ViewDirName, gitstore.TasksDir)
	ents, err := os.ReadDir(view)
	if err != nil {
		t.Fatal(err)
	}
	custom := filepath.Join(view, ents[0].Name())
	list := func(want string) {
		t.Helper()
		e, err := Open(Options{Dir: dir, Actor: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		sums := e.Store.Summaries()
		for i, f := range e.TaskFieldsOf(sums) {
			w := "{}"
			if sums[i].Path == filepath.ToSlash(filepath.Join(gitstore.TasksDir, ents[0].Name())) {
				w = want
			}
			if string(f) != w {
				t.Errorf("%s: fields %s, want %s", sums[i].Path, f, w)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		left, _ := filepath.Glob(filepath.Join(priv, statecache.TempPrefix+"*"))
		if len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
	}
	block := func(name string) func() {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(priv, name, "kept"), 0o777); err != nil {
			t.Fatal(err)
		}
		return func() {
			t.Helper()
			if _, err := os.Stat(filepath.Join(priv, name, "kept")); err != nil {
				t.Errorf("what stood at %s was not left alone: %v", name, err)
			}
			if err := os.RemoveAll(filepath.Join(priv, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The whole cache cannot be written: every list parses the files.
	_ = os.Remove(filepath.Join(priv, fieldsCacheName))
	unblock := block(fieldsCacheName)
	list("{}")
	list("{}")
	unblock()
	list("{}") // writes the cache
	if readFieldsCache(filepath.Join(priv, fieldsCacheName)) == nil {
		t.Fatal("no fields cache once it could be written")
	}
	// Its additions cannot be written: the new blob is read from its file.
	unblock = block(fieldsAdditionsName)
	b, err := os.ReadFile(custom)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(custom, []byte(strings.Replace(string(b), "\n---\n", "\nestimate: 5\n---\n", 1)), 0o666); err != nil {
		t.Fatal(err)
	}
	list(`{"estimate":5}`)
	list(`{"estimate":5}`)
	unblock()
	list(`{"estimate":5}`)
	if readFieldsAdditions(filepath.Join(priv, fieldsCacheName), readFieldsCache(filepath.Join(priv, fieldsCacheName))).len() != 1 {
		t.Error("the additions were not written once they could be")
	}
}

// fieldsRepo is a repository with twenty tasks, without custom keys.
func fieldsRepo(t *testing.T) string {
	t.Helper()
	dir, _ := doctorRepo(t)
	e, err := Open(Options{Dir: dir, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := e.New(NewTask{Title: "Task " + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
