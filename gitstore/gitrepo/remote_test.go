package gitrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orch-tool/orch/internal/testgit"
)

// A fetch whose connectivity check meets a damaged object (here a task
// branch pointing at a loose object that is not zlib at all) is retried,
// and when the damage stays, reported: the retry hides only what goes away.
func TestFetchReportsLastingDamage(t *testing.T) {
	t.Parallel()
	remote := testgit.MakeBareRepo(t)
	src := testgit.MakeRepo(t)
	testgit.Git(t, src, "push", "-q", remote, "HEAD:refs/heads/orch")
	dir := testgit.MakeRepo(t)
	testgit.Git(t, dir, "remote", "add", "origin", remote)
	repo, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := repo.Fetch("origin", "refs/heads/orch"); err != nil || h.IsZero() {
		t.Fatalf("Fetch: %v, %v", h, err)
	}

	// A ref to an object whose file exists but cannot be read.
	bad := "1234567890123456789012345678901234567890"
	testgit.WriteFile(t, filepath.Join(dir, ".git", "objects", bad[:2], bad[2:]), "not an object")
	testgit.WriteFile(t, filepath.Join(dir, ".git", "refs", "heads", "task", "T-bad"), bad+"\n")
	testgit.Git(t, src, "commit", "-q", "--allow-empty", "-m", "more")
	testgit.Git(t, src, "push", "-q", remote, "HEAD:refs/heads/orch")
	_, err = repo.Fetch("origin", "refs/heads/orch")
	if err == nil || !strings.Contains(err.Error(), "did not send all necessary objects") {
		t.Fatalf("Fetch with a damaged object: %v", err)
	}

	// Once the damage is gone, the same fetch works.
	if err := os.Remove(filepath.Join(dir, ".git", "refs", "heads", "task", "T-bad")); err != nil {
		t.Fatal(err)
	}
	if h, err := repo.Fetch("origin", "refs/heads/orch"); err != nil || h.String() != testgit.RevParse(src, "HEAD") {
		t.Fatalf("Fetch after repair: %v, %v", h, err)
	}
}

// TestRemotes reads the remotes from the repository's config as git does:
// quoted subsections, any case of the section name, origin first, each once.
func TestRemotes(t *testing.T) {
	dir := testgit.MakeRepo(t)
	testgit.Git(t, dir, "remote", "add", "zeta", "../z.git")
	testgit.Git(t, dir, "remote", "add", "origin", "../o.git")
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("[Remote \"alpha\"]\n\turl = ../a.git\n[remote \"zeta\"]\n\tpushurl = ../z2.git\n[remote]\n\tx = 1\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(r.Remotes(), " "), "origin alpha zeta"; got != want {
		t.Errorf("Remotes() = %q, want %q", got, want)
	}
}
