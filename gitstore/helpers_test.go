package gitstore

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/taskfile"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/testgit"
)

// TestMain gives every git process of the package's tests a private,
// predictable configuration (internal/testgit).
func TestMain(m *testing.M) { testgit.Main(m, "gitstore-home-") }

// openStore opens and locks the store of the repository around dir: one
// orch "command". The store is closed at the end of the test unless the
// caller closes it first.
func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	st, err := Open(Options{Dir: dir})
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
func closeStore(t testing.TB, st *Store) {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

var testActor = gitrepo.Signature{Name: "Ada Tester", Email: "ada@example.com", When: time.Date(2026, 2, 6, 10, 0, 0, 0, time.UTC)}

// commitFiles commits path/content pairs ("" content with a leading "-" on
// the path deletes it) on the store and returns the commit.
func commitFiles(t testing.TB, st *Store, msg string, pairs ...string) plumbing.Hash {
	t.Helper()
	var changes []Change
	for i := 0; i+1 < len(pairs); i += 2 {
		p := pairs[i]
		if strings.HasPrefix(p, "-") {
			changes = append(changes, Change{Path: p[1:], Delete: true})
			continue
		}
		changes = append(changes, Change{Path: p, Data: []byte(pairs[i+1])})
	}
	h, err := st.Commit(&CommitRequest{Changes: changes, Message: msg, Author: testActor})
	if err != nil {
		t.Fatalf("Commit(%s): %v", msg, err)
	}
	return h
}

// taskDoc is a valid task file.
func taskDoc(id, title, queue, body string) string {
	return "---\nid: " + id + "\ntitle: " + title + "\nqueue: " + queue +
		"\npriority: P2\ncreated: 2026-02-06T10:00:00Z\n---\n# " + title + "\n\n" + body + "\n"
}

// taskPath is where a task with this id lives on the branch.
func taskPath(id string) string { return "tasks/" + id + "-" + taskfile.Slug(id) + ".md" }

// initStore creates the state branch with a config file and the given tasks
// (id → body) and returns the repository's top directory.
func initStore(t testing.TB, dir string, ids ...string) {
	t.Helper()
	st := openStore(t, dir)
	pairs := []string{ConfigFile, "id_prefix: T\n", "prompts/implementer.md", "Do the work.\n"}
	for _, id := range ids {
		pairs = append(pairs, taskPath(id), taskDoc(id, "Task "+id, "incoming", "Body of "+id+"."))
	}
	commitFiles(t, st, "orch: init", pairs...)
	if _, err := st.Reconcile(testPolicy()); err != nil {
		t.Fatal(err)
	}
	closeStore(t, st)
}

var idCounter atomic.Int64

// testPolicy completes hand-made task files the way the workflow does: a
// fresh id when there is none or the id is taken, a queue and a created time.
func testPolicy() Policy {
	return Policy{
		Actor: testActor,
		PrepareNewTask: func(path string, data []byte, taken func(string) bool) ([]byte, string, error) {
			f, err := taskfile.Parse(path, data)
			if err != nil {
				return nil, "", err
			}
			var edits []taskfile.Edit
			id := f.Task.ID
			if id != "" && !taskfile.ValidID(id) {
				return nil, "", &taskfile.ParseError{Path: path, Line: f.Line(taskfile.KeyID), Msg: "bad id"}
			}
			if id == "" || taken(id) {
				for {
					id = fmt.Sprintf("T-n%05d", idCounter.Add(1))
					if !taken(id) {
						break
					}
				}
				edits = append(edits, taskfile.Set(taskfile.KeyID, taskfile.String(id)))
			}
			if !f.Has(taskfile.KeyQueue) {
				edits = append(edits, taskfile.Set(taskfile.KeyQueue, taskfile.String("incoming")))
			}
			if !f.Has(taskfile.KeyCreated) {
				edits = append(edits, taskfile.Set(taskfile.KeyCreated, taskfile.Time(testActor.When)))
			}
			out, err := f.Apply(edits...)
			if err != nil {
				return nil, "", err
			}
			if errs := out.Validate(); len(errs) > 0 {
				return nil, "", errs[0]
			}
			return out.Src, id, nil
		},
		CheckFile: func(path string, data []byte) error {
			if strings.Contains(string(data), "INVALID") {
				return &taskfile.ParseError{Path: path, Line: 1, Msg: "contains INVALID"}
			}
			return nil
		},
	}
}

// branchFiles lists every file of the state branch with its blob, as the
// git CLI sees it.
func branchFiles(t testing.TB, dir, rev string) map[string]string {
	t.Helper()
	out := testgit.Git(t, dir, "ls-tree", "-r", "--full-tree", rev)
	files := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		meta, path, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		files[path] = f[2]
	}
	return files
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

// gitMoveBranch commits changes to the state branch with the git CLI alone
// (temporary index, commit-tree, update-ref with the old value), the way a
// person or another tool would. A pair whose path starts with "-" deletes it.
func gitMoveBranch(t testing.TB, dir, msg string, pairs ...string) string {
	t.Helper()
	old := testgit.RevParse(dir, "refs/heads/orch")
	idx := filepath.Join(t.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + idx}
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, err := testgit.Run(dir, env, stdin, args...)
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	if old != "" {
		run("", "read-tree", old)
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		p := pairs[i]
		if strings.HasPrefix(p, "-") {
			run("", "update-index", "--force-remove", p[1:])
			continue
		}
		blob := run(pairs[i+1], "hash-object", "-w", "--stdin")
		run("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+p)
	}
	tree := run("", "write-tree")
	args := []string{"commit-tree", tree, "-m", msg}
	if old != "" {
		args = append(args, "-p", old)
	}
	c := run("", args...)
	uargs := []string{"update-ref", "-m", msg, "refs/heads/orch", c}
	if old != "" {
		uargs = append(uargs, old)
	} else {
		uargs = append(uargs, strings.Repeat("0", 40))
	}
	run("", uargs...)
	return c
}

// scratchSummaries computes the task summaries of rev from nothing: the git
// CLI lists and reads the blobs, summarize parses them.
func scratchSummaries(t testing.TB, dir, rev string) []*Summary {
	t.Helper()
	out, err := testgit.Run(dir, nil, "", "ls-tree", rev+":"+TasksDir)
	if err != nil {
		return []*Summary{}
	}
	var paths []string
	var blobs []string
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		meta, name, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if f[1] != "blob" || !strings.HasSuffix(name, ".md") {
			continue
		}
		paths = append(paths, TasksDir+"/"+name)
		blobs = append(blobs, f[2])
	}
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(strings.Join(blobs, "\n") + "\n")
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file --batch: %v", err)
	}
	rd := bufio.NewReader(bytes.NewReader(raw))
	res := []*Summary{}
	for i, p := range paths {
		hdr, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(hdr)
		n, _ := strconv.Atoi(f[2])
		data := make([]byte, n+1)
		if _, err := io.ReadFull(rd, data); err != nil {
			t.Fatal(err)
		}
		res = append(res, summarize(p, plumbing.NewHash(blobs[i]), data[:n]))
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Path < res[j].Path })
	return res
}

// normSummary makes empty and nil lists compare equal; everything else,
// times included, must be identical.
func normSummary(s *Summary) Summary {
	c := *s
	for _, l := range []*[]string{&c.Task.LockedOut, &c.Task.DependsOn, &c.Task.Labels} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return c
}

func sameSummaries(t testing.TB, what string, got, want []*Summary) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d summaries, want %d\n got: %v\nwant: %v", what, len(got), len(want), summaryPaths(got), summaryPaths(want))
	}
	for i := range got {
		g, w := normSummary(got[i]), normSummary(want[i])
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: summary %d differs\n got: %+v\nwant: %+v", what, i, g, w)
		}
	}
}

func summaryPaths(l []*Summary) []string {
	var out []string
	for _, s := range l {
		out = append(out, s.Path)
	}
	return out
}

// viewFile is the absolute path of a view file of the repository at dir.
func viewFile(dir, p string) string { return filepath.Join(dir, ViewDirName, filepath.FromSlash(p)) }

// reconcile opens the store around dir, reconciles with the test policy and
// closes it, like one orch command. It returns the report and the store
// (closed) for inspection of Notes, BrokenFile and Conflicted.
func reconcile(t testing.TB, dir string) (*Reconciled, *Store) {
	t.Helper()
	st := openStore(t, dir)
	rep, err := st.Reconcile(testPolicy())
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	closeStore(t, st)
	return rep, st
}

// tip is the state branch's commit as the git CLI sees it.
func tip(t testing.TB, dir string) string {
	t.Helper()
	return testgit.RevParse(dir, "refs/heads/orch")
}
