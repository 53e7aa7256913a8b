package gitstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/testgit"
)

// gitView is what the git CLI says about a directory.
type gitView struct {
	gitDir, commonDir, top string
	bare                   bool
}

func askGit(t *testing.T, dir string) gitView {
	t.Helper()
	var v gitView
	v.gitDir = testgit.RealPath(t, testgit.Git(t, dir, "rev-parse", "--path-format=absolute", "--git-dir"))
	v.commonDir = testgit.RealPath(t, testgit.Git(t, dir, "rev-parse", "--path-format=absolute", "--git-common-dir"))
	v.bare = testgit.Git(t, dir, "rev-parse", "--is-bare-repository") == "true"
	if out, err := testgit.Run(dir, nil, "", "rev-parse", "--show-toplevel"); err == nil {
		v.top = out
	}
	return v
}

// checkDiscover compares Discover(dir) with the git CLI and with the
// expected main worktree.
func checkDiscover(t *testing.T, dir, wantMain string) *gitrepo.Repo {
	t.Helper()
	r, err := gitrepo.Discover(dir)
	if err != nil {
		t.Fatalf("Discover(%s): %v", dir, err)
	}
	g := askGit(t, dir)
	if r.GitDir != g.gitDir {
		t.Errorf("Discover(%s).GitDir = %q, git says %q", dir, r.GitDir, g.gitDir)
	}
	if r.CommonDir != g.commonDir {
		t.Errorf("Discover(%s).CommonDir = %q, git says %q", dir, r.CommonDir, g.commonDir)
	}
	if r.Bare != g.bare {
		t.Errorf("Discover(%s).Bare = %v, git says %v", dir, r.Bare, g.bare)
	}
	if r.WorkTree != g.top {
		t.Errorf("Discover(%s).WorkTree = %q, git says %q", dir, r.WorkTree, g.top)
	}
	if r.MainWorkTree != wantMain {
		t.Errorf("Discover(%s).MainWorkTree = %q, want %q", dir, r.MainWorkTree, wantMain)
	}
	return r
}

func TestDiscoverMainAndLinkedWorktrees(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	sub := filepath.Join(dir, "src", "deep")
	if err := os.MkdirAll(sub, 0o777); err != nil {
		t.Fatal(err)
	}
	checkDiscover(t, dir, dir)
	checkDiscover(t, sub, dir)
	// From inside the git dir (where hooks and some tools run), the same
	// repository and the same view.
	for _, in := range []string{filepath.Join(dir, ".git"), filepath.Join(dir, ".git", "refs", "heads")} {
		r, err := gitrepo.Discover(in)
		if err != nil || r.CommonDir != filepath.Join(dir, ".git") || r.MainWorkTree != dir {
			t.Errorf("Discover(%s) = %+v, %v", in, r, err)
		}
	}
	if _, err := gitrepo.Discover(filepath.Join(dir, "README.md")); err == nil {
		t.Error("Discover of a file accepted")
	}

	wt := filepath.Join(filepath.Dir(dir), "wt-feature")
	testgit.Git(t, dir, "worktree", "add", "-q", "-b", "feature", wt)
	wsub := filepath.Join(wt, "a", "b")
	if err := os.MkdirAll(wsub, 0o777); err != nil {
		t.Fatal(err)
	}
	r := checkDiscover(t, wt, dir)
	if r.GitDir == r.CommonDir {
		t.Errorf("linked worktree: GitDir %q should be its own worktrees/ dir", r.GitDir)
	}
	checkDiscover(t, wsub, dir)
	if got := r.HeadBranch(); got != "feature" {
		t.Errorf("HeadBranch in linked worktree = %q, want feature", got)
	}

	// Every worktree uses the one view in the main worktree.
	initStore(t, dir, "T-aaaa01")
	st := openStore(t, wsub)
	if want := filepath.Join(dir, ViewDirName); st.View != want {
		t.Fatalf("View from a linked worktree = %q, want %q", st.View, want)
	}
	commitFiles(t, st, "from the linked worktree", taskPath("T-aaaa02"), taskDoc("T-aaaa02", "Two", "incoming", "x"))
	closeStore(t, st)
	if got := testgit.ReadFile(t, viewFile(dir, taskPath("T-aaaa02"))); got != taskDoc("T-aaaa02", "Two", "incoming", "x") {
		t.Fatalf("view file written from the linked worktree = %q", got)
	}
	if _, err := os.Stat(filepath.Join(wt, ViewDirName)); !os.IsNotExist(err) {
		t.Fatalf("a view appeared in the linked worktree: %v", err)
	}
}

func TestDiscoverBare(t *testing.T) {
	t.Parallel()
	bare := testgit.MakeBareRepo(t)
	r := checkDiscover(t, bare, "")
	if !r.Bare || r.WorkTree != "" {
		t.Fatalf("bare repo: %+v", r)
	}
	// A directory inside the bare repository finds it too.
	r2, err := gitrepo.Discover(filepath.Join(bare, "refs", "heads"))
	if err != nil || r2.CommonDir != bare {
		t.Fatalf("Discover(bare/refs/heads) = %+v, %v", r2, err)
	}

	// The store works on the branch alone: no view.
	st := openStore(t, bare)
	if st.View != "" {
		t.Fatalf("bare repo has a view: %q", st.View)
	}
	commitFiles(t, st, "init", ConfigFile, "a: 1\n", taskPath("T-bbbb01"), taskDoc("T-bbbb01", "One", "incoming", "x"))
	rep, err := st.Reconcile(testPolicy())
	if err != nil || len(rep.Committed)+len(rep.Pulled)+len(rep.Restored) != 0 {
		t.Fatalf("Reconcile on a bare repo: %+v, %v", rep, err)
	}
	closeStore(t, st)
	if got := showFile(t, bare, "orch", taskPath("T-bbbb01")); got != taskDoc("T-bbbb01", "One", "incoming", "x") {
		t.Fatalf("branch content %q", got)
	}
	if _, err := os.Stat(filepath.Join(bare, ViewDirName)); !os.IsNotExist(err) {
		t.Fatalf("a view appeared in the bare repository")
	}
	testgit.Fsck(t, bare)
}

func TestDiscoverBareCloneWithLinkedWorktree(t *testing.T) {
	t.Parallel()
	src := testgit.MakeRepo(t)
	clone := filepath.Join(filepath.Dir(src), "clone.git")
	testgit.Git(t, "", "clone", "-q", "--bare", src, clone)
	wt := filepath.Join(filepath.Dir(src), "clone-wt")
	testgit.Git(t, clone, "worktree", "add", "-q", "-b", "work", wt)
	sub := filepath.Join(wt, "x")
	if err := os.MkdirAll(sub, 0o777); err != nil {
		t.Fatal(err)
	}

	rb := checkDiscover(t, clone, "")
	if !rb.Bare {
		t.Fatalf("bare clone not bare: %+v", rb)
	}
	r := checkDiscover(t, wt, "")
	if r.CommonDir != clone {
		t.Fatalf("linked worktree of bare clone: CommonDir %q, want %q", r.CommonDir, clone)
	}
	checkDiscover(t, sub, "")

	// The worktree of a bare repository has no main worktree, so no view;
	// the store still works on the branch.
	st := openStore(t, sub)
	if st.View != "" {
		t.Fatalf("view %q for a bare repository's linked worktree", st.View)
	}
	commitFiles(t, st, "init", ConfigFile, "a: 1\n")
	closeStore(t, st)
	if testgit.RevParse(clone, "refs/heads/orch") == "" {
		t.Fatal("state branch not created in the bare clone")
	}
	if _, err := os.Stat(filepath.Join(wt, ViewDirName)); !os.IsNotExist(err) {
		t.Fatal("a view appeared in the bare clone's worktree")
	}
	testgit.Fsck(t, clone)
}

func TestDiscoverGitDirEnv(t *testing.T) {
	dir := testgit.MakeRepo(t)
	elsewhere := testgit.RealPath(t, t.TempDir())

	t.Setenv("GIT_DIR", filepath.Join(dir, ".git"))
	r, err := gitrepo.Discover(elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	if r.CommonDir != filepath.Join(dir, ".git") || r.MainWorkTree != dir || r.Bare {
		t.Fatalf("GIT_DIR=%s: %+v", filepath.Join(dir, ".git"), r)
	}

	// Relative GIT_DIR is taken from the directory given.
	t.Setenv("GIT_DIR", ".git")
	r, err = gitrepo.Discover(dir)
	if err != nil || r.CommonDir != filepath.Join(dir, ".git") {
		t.Fatalf("relative GIT_DIR: %+v, %v", r, err)
	}

	// GIT_DIR naming a linked worktree's git dir.
	t.Setenv("GIT_DIR", "")
	os.Unsetenv("GIT_DIR")
	wt := filepath.Join(filepath.Dir(dir), "wt")
	testgit.Git(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	wgd := testgit.RealPath(t, testgit.Git(t, wt, "rev-parse", "--path-format=absolute", "--git-dir"))
	t.Setenv("GIT_DIR", wgd)
	r, err = gitrepo.Discover(elsewhere)
	if err != nil || r.CommonDir != filepath.Join(dir, ".git") || r.GitDir != wgd || r.MainWorkTree != dir {
		t.Fatalf("GIT_DIR=%s: %+v, %v", wgd, r, err)
	}

	// GIT_DIR naming a bare repository.
	bare := testgit.MakeBareRepo(t)
	t.Setenv("GIT_DIR", bare)
	r, err = gitrepo.Discover(elsewhere)
	if err != nil || r.CommonDir != bare || !r.Bare || r.MainWorkTree != "" {
		t.Fatalf("GIT_DIR=%s: %+v, %v", bare, r, err)
	}
	// And the store works through it.
	st := openStore(t, elsewhere)
	commitFiles(t, st, "init", ConfigFile, "a: 1\n")
	closeStore(t, st)
	if testgit.RevParse(bare, "refs/heads/orch") == "" {
		t.Fatal("no state branch in the GIT_DIR repository")
	}
}

func TestDiscoverNotARepo(t *testing.T) {
	t.Parallel()
	dir := testgit.RealPath(t, t.TempDir())
	if _, err := testgit.Run(dir, nil, "", "rev-parse", "--git-dir"); err == nil {
		t.Skip("the temp dir is inside a git repository")
	}
	_, err := gitrepo.Discover(dir)
	var nr *gitrepo.ErrNotRepo
	if !errors.As(err, &nr) {
		t.Fatalf("Discover outside a repository: %v", err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Fatalf("error does not name the directory: %v", err)
	}
}
