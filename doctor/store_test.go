package doctor

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/taskfile"
)

// The checkup's tests build their repositories through gitstore's exported
// API, as gitstore's own tests do (gitstore/helpers_test.go), so that the
// state branch holds exactly the files they count.

// TestMain gives every git process of the package's tests a private,
// predictable configuration (internal/testgit).
func TestMain(m *testing.M) { testgit.Main(m, "doctor-home-") }

// openStore opens and locks the store of the repository around dir: one
// orch "command". The store is closed at the end of the test unless the
// caller closes it first.
func openStore(t testing.TB, dir string) *gitstore.Store {
	t.Helper()
	st, err := gitstore.Open(gitstore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	if err := st.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// closeStore closes a store opened by openStore and fails on error.
func closeStore(t testing.TB, st *gitstore.Store) {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

var testPolicy = gitstore.Policy{Actor: gitrepo.Signature{Name: "Ada Tester", Email: "ada@example.com", When: time.Date(2026, 2, 6, 10, 0, 0, 0, time.UTC)}}

// commitFiles commits path/content pairs on the store.
func commitFiles(t testing.TB, st *gitstore.Store, msg string, pairs ...string) {
	t.Helper()
	var changes []gitstore.Change
	for i := 0; i+1 < len(pairs); i += 2 {
		changes = append(changes, gitstore.Change{Path: pairs[i], Data: []byte(pairs[i+1])})
	}
	if _, err := st.Commit(&gitstore.CommitRequest{Changes: changes, Message: msg, Author: testPolicy.Actor}); err != nil {
		t.Fatalf("Commit(%s): %v", msg, err)
	}
}

// taskDoc is a valid task file.
func taskDoc(id, title, queue, body string) string {
	return "---\nid: " + id + "\ntitle: " + title + "\nqueue: " + queue +
		"\npriority: P2\ncreated: 2026-02-06T10:00:00Z\n---\n# " + title + "\n\n" + body + "\n"
}

// taskPath is where a task with this id lives on the branch.
func taskPath(id string) string { return "tasks/" + id + "-" + taskfile.Slug(id) + ".md" }

// initStore creates the state branch with a config file, a prompt and the
// given tasks, and writes the view.
func initStore(t testing.TB, dir string, ids ...string) {
	t.Helper()
	st := openStore(t, dir)
	pairs := []string{gitstore.ConfigFile, "id_prefix: T\n", "prompts/implementer.md", "Do the work.\n"}
	for _, id := range ids {
		pairs = append(pairs, taskPath(id), taskDoc(id, "Task "+id, "incoming", "Body of "+id+"."))
	}
	commitFiles(t, st, "orch: init", pairs...)
	if _, err := st.Reconcile(testPolicy); err != nil {
		t.Fatal(err)
	}
	closeStore(t, st)
}

// reconcile opens the store around dir, reconciles and closes it, like one
// orch command.
func reconcile(t testing.TB, dir string) *gitstore.Reconciled {
	t.Helper()
	st := openStore(t, dir)
	rep, err := st.Reconcile(testPolicy)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	closeStore(t, st)
	return rep
}

// checkupOf opens the store around dir without locking it, as orch doctor
// does, and looks.
func checkupOf(t *testing.T, dir string) (*gitstore.Store, *checkup) {
	t.Helper()
	st, err := gitstore.Open(gitstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return st, newCheckup(st)
}

// viewFile is the absolute path of a view file of the repository at dir.
func viewFile(dir, p string) string {
	return filepath.Join(dir, gitstore.ViewDirName, filepath.FromSlash(p))
}

// tip is the state branch's commit as the git CLI sees it.
func tip(t testing.TB, dir string) string {
	t.Helper()
	return testgit.RevParse(dir, "refs/heads/orch")
}

// showFile reads a file of the state branch with the git CLI.
func showFile(t testing.TB, dir, rev, path string) string {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "blob", rev+":"+path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file %s:%s: %v", rev, path, err)
	}
	return string(out)
}

// gitMoveBranch commits path/content pairs to the state branch with the
// git CLI alone (temporary index, commit-tree, update-ref with the old
// value), the way a person or another tool would.
func gitMoveBranch(t testing.TB, dir, msg string, pairs ...string) {
	t.Helper()
	old := tip(t, dir)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, err := testgit.Run(dir, env, stdin, args...)
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	run("", "read-tree", old)
	for i := 0; i+1 < len(pairs); i += 2 {
		blob := run(pairs[i+1], "hash-object", "-w", "--stdin")
		run("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+pairs[i])
	}
	c := run("", "commit-tree", run("", "write-tree"), "-m", msg, "-p", old)
	run("", "update-ref", "-m", msg, "refs/heads/orch", c, old)
}

// forgeStat makes sync-index stat data say what a view file's stat(2) says,
// the way gitstore records it (gitstore/scan.go's statOf).
func forgeStat(t testing.TB, path string, size, mtime, ctime *int64, ino *uint64) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		t.Fatalf("no view file %s: %v", path, err)
	}
	*size, *ino = st.Size, st.Ino
	*mtime = st.Mtim.Sec*1e9 + st.Mtim.Nsec
	*ctime = st.Ctim.Sec*1e9 + st.Ctim.Nsec
}
