package gitrepo

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/internal/testgit"
)

// TestResolveRevision: the forms a fix's commit is given in resolve as git
// rev-parse resolves them (and what is not one revision of a commit, or
// looks like an option, names none), from the main worktree and from a linked one
// (whose HEAD is its own), with loose and with packed objects and refs.
func TestResolveRevision(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "repo")
	testgit.Git(t, dir, "init", "-q", main)
	for i := 1; i <= 3; i++ {
		testgit.Git(t, main, "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("c%d", i))
	}
	testgit.Git(t, main, "tag", "-a", "-m", "release", "v1", "HEAD~1")
	testgit.Git(t, main, "tag", "light", "HEAD~2")
	testgit.Git(t, main, "checkout", "-q", "-b", "side", "HEAD~1")
	testgit.Git(t, main, "commit", "-q", "--allow-empty", "-m", "side")
	testgit.Git(t, main, "checkout", "-q", "main")
	testgit.Git(t, main, "merge", "-q", "--no-ff", "-m", "merge side", "side")
	wt := filepath.Join(dir, "wt")
	testgit.Git(t, main, "worktree", "add", "-q", "-b", "task/T-abc123-x", wt, "main~1")
	testgit.Git(t, wt, "commit", "-q", "--allow-empty", "-m", "in the worktree")

	revs := []string{"HEAD", "@", "HEAD~1", "HEAD^", "HEAD^2", "HEAD^1^1", "HEAD~2^0", "main", "main~1", "side", "refs/heads/side",
		"heads/side", "v1", "v1~1", "light", "task/T-abc123-x", "task/T-abc123-x~1", "HEAD^{/c2}", "HEAD@{1}"}
	check := func(name string) {
		for _, d := range []string{main, wt} {
			repo, err := Discover(d)
			if err != nil {
				t.Fatal(err)
			}
			for _, rev := range revs {
				want, gerr := testgit.Run(d, nil, "", "rev-parse", "--verify", "--quiet", rev+"^{commit}")
				got, err := repo.ResolveRevision(rev)
				if gerr != nil {
					if !errors.As(err, new(*ErrRevisionNotFound)) {
						t.Errorf("%s, in %s: %s = %s, %v; git finds nothing", name, filepath.Base(d), rev, got, err)
					}
					continue
				}
				if err != nil || got.String() != want {
					t.Errorf("%s, in %s: %s = %s, %v; git says %s", name, filepath.Base(d), rev, got, err, want)
				}
				// The same commit by its full and its short hash.
				for _, n := range []int{40, 12, 7, 4} {
					if got, err := repo.ResolveRevision(want[:n]); err != nil || got.String() != want {
						if !errors.As(err, new(*ErrAmbiguousRevision)) || n > 4 {
							t.Errorf("%s: %s = %s, %v; want %s", name, want[:n], got, err, want)
						}
					}
				}
			}
			for _, rev := range []string{"nope", "HEAD~99", "HEAD^3", "deadbeef", "0000000000000000000000000000000000000000"} {
				if h, err := repo.ResolveRevision(rev); !errors.As(err, new(*ErrRevisionNotFound)) {
					t.Errorf("%s: %s = %s, %v; want not found", name, rev, h, err)
				}
			}
			for _, rev := range []string{"", "--output=x", "HEAD\nmain", "a b", "HEAD~x", "main..side", "HEAD:README"} {
				if h, err := repo.ResolveRevision(rev); !errors.As(err, new(*ErrRevisionNotFound)) {
					t.Errorf("%s: %q = %s, %v; want not found", name, rev, h, err)
				}
			}
		}
	}
	check("loose")
	testgit.Git(t, main, "gc", "-q")
	testgit.Git(t, main, "pack-refs", "--all")
	check("packed")

	// The worktree's HEAD is its own.
	repo, _ := Discover(wt)
	if h, _ := repo.ResolveRevision("HEAD"); h.String() != testgit.Git(t, wt, "rev-parse", "task/T-abc123-x") {
		t.Errorf("HEAD in the worktree = %s", h)
	}
}

// A short hash two commits start with is refused, as git refuses it.
func TestResolveRevisionAmbiguous(t *testing.T) {
	dir := t.TempDir()
	testgit.Git(t, dir, "init", "-q", ".")
	testgit.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
	repo, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	tree := plumbing.NewHash(testgit.Git(t, dir, "rev-parse", "HEAD^{tree}"))
	who := Signature{Name: "t", Email: "t@x", When: time.Unix(1700000000, 0).UTC()}
	seen := map[string]int{} // a 4-digit prefix -> the candidate that has it
	objs := NewObjectStore(repo.CommonDir)
	candidate := func(i int) []byte { return EncodeCommit(tree, nil, who, who, fmt.Sprintf("candidate %d", i)) }
	for i := 0; i < 1_000_000; i++ {
		h := hashObject(plumbing.CommitObject, candidate(i))
		prefix := h.String()[:4]
		j, dup := seen[prefix]
		if !dup {
			seen[prefix] = i
			continue
		}
		other, err := objs.Write(plumbing.CommitObject, candidate(j))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := objs.Write(plumbing.CommitObject, candidate(i)); err != nil {
			t.Fatal(err)
		}
		_, err = repo.ResolveRevision(prefix)
		var amb *ErrAmbiguousRevision
		if !errors.As(err, &amb) || len(amb.Commits) != 2 {
			t.Fatalf("%s (%s and %s) = %v, want ambiguous", prefix, h, other, err)
		}
		if got, err := repo.ResolveRevision(h.String()[:12]); err != nil || got != h {
			t.Fatalf("a longer prefix = %s, %v", got, err)
		}
		return
	}
	t.Fatal("no two candidates share a prefix")
}
