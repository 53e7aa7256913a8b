package gitstore

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/testgit"
)

// userState is everything of the person's checkout that orch must never
// touch.
type userState struct {
	head, status, staged, unstaged string
	index                          []byte
}

func captureUserState(t *testing.T, dir string) userState {
	t.Helper()
	idx, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return userState{
		head:     testgit.Git(t, dir, "rev-parse", "HEAD") + " " + testgit.ReadFile(t, filepath.Join(dir, ".git", "HEAD")),
		status:   testgit.Git(t, dir, "status", "--porcelain=v1", "--untracked-files=all"),
		staged:   testgit.Git(t, dir, "diff", "--cached"),
		unstaged: testgit.Git(t, dir, "diff"),
		index:    idx,
	}
}

// expectBranch compares the whole tree of the state branch with want
// (path → content).
func expectBranch(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	got := branchFiles(t, dir, "refs/heads/orch")
	wantBlobs := map[string]string{}
	for p, c := range want {
		wantBlobs[p] = gitrepo.HashBlob([]byte(c)).String()
	}
	if !reflect.DeepEqual(got, wantBlobs) {
		var g, w []string
		for p := range got {
			g = append(g, p)
		}
		for p := range wantBlobs {
			w = append(w, p)
		}
		sort.Strings(g)
		sort.Strings(w)
		t.Fatalf("state branch tree differs\n got: %v\nwant: %v", g, w)
	}
}

func TestTreeSurgery(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	// The person's checkout: a staged change, an unstaged change, an
	// untracked file.
	testgit.WriteFile(t, filepath.Join(dir, "README.md"), "hello, staged\n")
	testgit.Git(t, dir, "add", "README.md")
	testgit.WriteFile(t, filepath.Join(dir, "README.md"), "hello, staged, then edited\n")
	testgit.WriteFile(t, filepath.Join(dir, "notes.txt"), "untracked\n")
	// As orch init does: the view is excluded from the person's status.
	testgit.WriteFile(t, filepath.Join(dir, ".git", "info", "exclude"), "/"+ViewDirName+"/\n")
	before := captureUserState(t, dir)
	if !strings.Contains(before.status, "MM README.md") {
		t.Fatalf("setup: status %q", before.status)
	}

	want := map[string]string{
		ConfigFile:                "id_prefix: T\n",
		"prompts/implementer.md":  "Do it.\n",
		"prompts/reviewer.md":     "Check it.\n",
		taskPath("T-tree01"):      taskDoc("T-tree01", "One", "incoming", "1"),
		taskPath("T-tree02"):      taskDoc("T-tree02", "Two", "incoming", "2"),
		taskPath("T-tree03"):      taskDoc("T-tree03", "Three", "incoming", "3"),
		"events/2026-02-06.jsonl": `{"a":1}` + "\n",
		"messages/hello.md":       "hi\n",
	}
	var pairs []string
	for p, c := range want {
		pairs = append(pairs, p, c)
	}
	st := openStore(t, dir)
	if st.Exists() {
		t.Fatal("state branch exists before the first commit")
	}
	c1 := commitFiles(t, st, "orch: init\n\nFirst.\n\nOrch-Action: init\n", pairs...)
	expectBranch(t, dir, want)
	if got := tip(t, dir); got != c1.String() {
		t.Fatalf("tip %s, Commit returned %s", got, c1)
	}
	if out := testgit.Git(t, dir, "rev-list", "--parents", "-n1", "orch"); out != c1.String() {
		t.Fatalf("root commit has parents: %q", out)
	}

	// Modify, add and delete across tasks/, events/ and messages/; the
	// last file of messages/ goes, so the directory goes too.
	want[taskPath("T-tree02")] = taskDoc("T-tree02", "Two", "claimed", "2")
	want["events/2026-02-07.jsonl"] = `{"b":2}` + "\n"
	delete(want, "messages/hello.md")
	delete(want, taskPath("T-tree03"))
	c2 := commitFiles(t, st, "orch(T-tree02): incoming -> claimed",
		taskPath("T-tree02"), want[taskPath("T-tree02")],
		"events/2026-02-07.jsonl", want["events/2026-02-07.jsonl"],
		"-messages/hello.md", "",
		"-"+taskPath("T-tree03"), "",
		"-messages/never-existed.md", "")
	expectBranch(t, dir, want)
	if testgit.RevParse(dir, "orch:messages") != "" {
		t.Fatal("messages/ still on the branch after its last file was deleted")
	}
	if got := testgit.RevParse(dir, "orch~1"); got != c1.String() {
		t.Fatalf("parent of %s is %s, want %s", c2, got, c1)
	}
	// Untouched subtrees keep their ids; touched ones change.
	if testgit.RevParse(dir, "orch:prompts") != testgit.RevParse(dir, "orch~1:prompts") {
		t.Fatal("prompts/ tree rewritten though unchanged")
	}
	if testgit.RevParse(dir, "orch:tasks") == testgit.RevParse(dir, "orch~1:tasks") {
		t.Fatal("tasks/ tree not rewritten")
	}
	if got := testgit.Git(t, dir, "rev-parse", "orch:"+taskPath("T-tree01")); got != testgit.RevParse(dir, "orch~1:"+taskPath("T-tree01")) {
		t.Fatal("untouched blob changed")
	}

	// Deep directories are created and pruned too.
	want["docs/a/b/deep.txt"] = "deep\n"
	commitFiles(t, st, "deep", "docs/a/b/deep.txt", "deep\n")
	expectBranch(t, dir, want)
	delete(want, "docs/a/b/deep.txt")
	commitFiles(t, st, "undeep", "-docs/a/b/deep.txt", "")
	expectBranch(t, dir, want)
	if testgit.RevParse(dir, "orch:docs") != "" {
		t.Fatal("empty docs/ left on the branch")
	}
	if testgit.RevParse(dir, "orch^{tree}") != testgit.RevParse(dir, "orch~2^{tree}") {
		t.Fatal("root tree after add+delete differs from before")
	}

	// Nothing changed: no commit.
	tipBefore := tip(t, dir)
	h, err := st.Commit(&CommitRequest{Changes: []Change{{Path: ConfigFile, Data: []byte(want[ConfigFile])}}, Message: "noop", Author: testActor})
	if err != nil || h.String() != tipBefore || tip(t, dir) != tipBefore {
		t.Fatalf("no-op commit: %s, %v (tip %s)", h, err, tip(t, dir))
	}

	// Delete every task: tasks/ goes.
	delete(want, taskPath("T-tree01"))
	delete(want, taskPath("T-tree02"))
	commitFiles(t, st, "archive all", "-"+taskPath("T-tree01"), "", "-"+taskPath("T-tree02"), "")
	expectBranch(t, dir, want)
	if testgit.RevParse(dir, "orch:tasks") != "" {
		t.Fatal("empty tasks/ left on the branch")
	}
	if len(st.Summaries()) != 0 {
		t.Fatalf("summaries after deleting every task: %v", summaryPaths(st.Summaries()))
	}

	// The snapshot agrees with git.
	snap := st.Snapshot()
	var files []string
	for _, fe := range snap.AllFiles() {
		files = append(files, fe.Path)
		data, err := snap.Read(fe.Path)
		if err != nil || string(data) != want[fe.Path] {
			t.Errorf("Snapshot.Read(%s) = %q, %v", fe.Path, data, err)
		}
	}
	if len(files) != len(want) {
		t.Errorf("Snapshot.AllFiles = %v, want %d files", files, len(want))
	}
	closeStore(t, st)

	// Author, committer and message as given.
	out := testgit.Git(t, dir, "log", "-1", "--format=%an|%ae|%at|%cn|%ce|%ct", "orch")
	if want := "Ada Tester|ada@example.com|1770372000|Ada Tester|ada@example.com|1770372000"; out != want {
		t.Fatalf("author/committer = %q, want %q", out, want)
	}
	if msg := testgit.Git(t, dir, "log", "--format=%B", "-1", c1.String()); msg != "orch: init\n\nFirst.\n\nOrch-Action: init" {
		t.Fatalf("message = %q", msg)
	}
	if tr := testgit.Git(t, dir, "log", "--format=%(trailers:key=Orch-Action,valueonly)", "-1", c1.String()); tr != "init" {
		t.Fatalf("git does not see the trailer: %q", tr)
	}

	testgit.Fsck(t, dir)
	after := captureUserState(t, dir)
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("the person's checkout changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if testgit.ReadFile(t, filepath.Join(dir, "README.md")) != "hello, staged, then edited\n" {
		t.Fatal("worktree file touched")
	}
}

func TestTreeSurgeryKeepsModesAndForeignEntries(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	// A branch made by the git CLI with an executable, a symlink and a
	// submodule entry orch does not know about.
	idx := filepath.Join(t.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + idx}
	blob := func(s string) string {
		out, err := testgit.Run(dir, nil, s, "hash-object", "-w", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	head := testgit.Git(t, dir, "rev-parse", "HEAD")
	for _, e := range []string{
		"100755," + blob("#!/bin/sh\n") + ",prompts/run.sh",
		"120000," + blob("implementer.md") + ",prompts/link.md",
		"160000," + head + ",vendor/sub",
		"100644," + blob("x\n") + ",tasks/keep.md",
	} {
		if _, err := testgit.Run(dir, env, "", "update-index", "--add", "--cacheinfo", e); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := testgit.Run(dir, env, "", "write-tree")
	if err != nil {
		t.Fatal(err)
	}
	c := testgit.Git(t, dir, "commit-tree", tree, "-m", "by hand")
	testgit.Git(t, dir, "update-ref", "refs/heads/orch", c)

	st := openStore(t, dir)
	commitFiles(t, st, "edit", "prompts/run.sh", "#!/bin/sh\necho hi\n", "tasks/new.md", "y\n")
	closeStore(t, st)
	out := testgit.Git(t, dir, "ls-tree", "-r", "orch")
	for _, want := range []string{
		"100755 blob " + gitrepo.HashBlob([]byte("#!/bin/sh\necho hi\n")).String() + "\tprompts/run.sh",
		"120000 blob " + blob("implementer.md") + "\tprompts/link.md",
		"160000 commit " + head + "\tvendor/sub",
		"100644 blob " + gitrepo.HashBlob([]byte("y\n")).String() + "\ttasks/new.md",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("ls-tree lacks %q:\n%s", want, out)
		}
	}
	if testgit.RevParse(dir, "orch:vendor") != testgit.RevParse(dir, "orch~1:vendor") {
		t.Error("vendor/ tree rewritten")
	}
	testgit.Fsck(t, dir)
}

func TestCommitRefusesBadPaths(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-path01")
	st := openStore(t, dir)
	before := tip(t, dir)
	for _, p := range []string{
		"", "/abs", "a//b", "../up", "tasks/../x", "./x", ".git/config", "tasks/.GIT/x", "a\\b", "tasks/",
		"tasks",                       // a file where a directory is
		taskPath("T-path01") + "/x",   // a directory where a file is
		ConfigFile + "/nested/deeper", // the same, deeper
	} {
		_, err := st.Commit(&CommitRequest{Changes: []Change{{Path: p, Data: []byte("x\n")}}, Message: "bad", Author: testActor})
		if err == nil {
			t.Errorf("Commit accepted path %q", p)
		}
	}
	closeStore(t, st)
	if got := tip(t, dir); got != before {
		t.Fatalf("a refused commit moved the branch (%s -> %s)", before, got)
	}
	testgit.Fsck(t, dir)
}

func TestCommitRefusesCheckedOutBranch(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	initStore(t, dir, "T-chk001")
	wt := filepath.Join(filepath.Dir(dir), "wt-orch")
	testgit.Git(t, dir, "worktree", "add", "-q", wt, "orch")
	st := openStore(t, dir)
	_, err := st.Commit(&CommitRequest{Changes: []Change{{Path: "messages/x.md", Data: []byte("x\n")}}, Message: "m", Author: testActor})
	var co *ErrCheckedOut
	if !errors.As(err, &co) || len(co.Worktrees) != 1 || co.Worktrees[0] != wt {
		t.Fatalf("commit on a checked-out state branch: %v", err)
	}
	closeStore(t, st)
	// Without the lock, nothing is committed either.
	st2, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st2.Commit(&CommitRequest{Message: "m"}); err == nil {
		t.Fatal("commit without the lock accepted")
	}
}

func TestWalkAndTrailers(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	st := openStore(t, dir)
	var made []plumbing.Hash
	for i, msg := range []string{
		"orch: init",
		"orch(T-walk01): incoming -> claimed\n\nBody.\n\nOrch-Task: T-walk01\nOrch-From: incoming\nOrch-To: claimed\n",
		"orch(T-walk01): claimed -> provisional\n\nOrch-Task: T-walk01\nOrch-To: provisional",
	} {
		made = append(made, commitFiles(t, st, msg, "messages/m.md", strings.Repeat("x", i+1)))
	}
	var seen []*gitrepo.CommitInfo
	if err := st.Walk(func(c *gitrepo.CommitInfo) bool { seen = append(seen, c); return true }); err != nil {
		t.Fatal(err)
	}
	closeStore(t, st)
	if len(seen) != 3 || seen[0].Hash != made[2] || seen[2].Hash != made[0] {
		t.Fatalf("Walk order wrong: %v", seen)
	}
	if s := seen[1].Subject(); s != "orch(T-walk01): incoming -> claimed" {
		t.Fatalf("Subject = %q", s)
	}
	if tr := ParseTrailers(seen[1].Message); tr.Get(TrailerTo) != "claimed" || tr.Get(TrailerTask) != "T-walk01" {
		t.Fatalf("Trailers = %v", tr)
	}
	if seen[0].Author.Name != testActor.Name || !seen[0].Author.When.Equal(testActor.When) {
		t.Fatalf("Author = %+v", seen[0].Author)
	}
	if want := testgit.Git(t, dir, "log", "--format=%T", "-1", made[1].String()); seen[1].Tree.String() != want {
		t.Fatalf("Tree = %s, git says %s", seen[1].Tree, want)
	}
}
