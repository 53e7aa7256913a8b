package gitrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orch-tool/orch/internal/testgit"
)

// DiscardWorktree leaves git knowing the worktree no more, as git worktree
// remove does, with its files moved into the trash; the main worktree and
// a locked one are refused, as git refuses them.
func TestDiscardWorktree(t *testing.T) {
	dir := testgit.RealPath(t, testgit.MakeRepo(t))
	wt := dir + "-wt"
	testgit.Git(t, dir, "worktree", "add", "-q", "-b", "task", wt)
	r, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	trash := filepath.Join(r.CommonDir, "orch", "trash")
	got, err := r.DiscardWorktree(wt, trash)
	if err != nil || got == "" || filepath.Dir(got) != trash {
		t.Fatalf("DiscardWorktree = %q, %v", got, err)
	}
	if _, err := os.Lstat(wt); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", wt, err)
	}
	if _, err := os.Stat(filepath.Join(got, "tree", ".git")); err != nil {
		t.Errorf("the trash lacks the worktree: %v", err)
	}
	if list := testgit.Git(t, dir, "worktree", "list", "--porcelain"); strings.Contains(list, wt) {
		t.Errorf("git still lists %s:\n%s", wt, list)
	}
	prune := exec.Command("git", "worktree", "prune", "-n", "-v")
	prune.Dir = dir
	if out, err := prune.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("git worktree prune would prune: %s (%v)", out, err)
	}
	testgit.Git(t, dir, "branch", "-D", "task") // checked out nowhere now

	if got, err := r.DiscardWorktree(dir, trash); err == nil || got != "" {
		t.Errorf("the main worktree: DiscardWorktree = %q, %v", got, err)
	}
	testgit.Git(t, dir, "worktree", "add", "-q", "-b", "locked", wt)
	testgit.Git(t, dir, "worktree", "lock", wt)
	if got, err := r.DiscardWorktree(wt, trash); err == nil || got != "" {
		t.Errorf("a locked worktree: DiscardWorktree = %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(wt, ".git")); err != nil {
		t.Errorf("the locked worktree was touched: %v", err)
	}
}
