package gitrepo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/internal/testgit"
)

// claimRemote is a clone with three commits on its state branch (orch) and
// a bare remote holding the first as its state branch.
func claimRemote(t *testing.T) (repo *Repo, remote string, c1, c2, c3 plumbing.Hash) {
	t.Helper()
	remote = testgit.MakeBareRepo(t)
	dir := testgit.MakeRepo(t)
	testgit.Git(t, dir, "remote", "add", "origin", remote)
	var hs []plumbing.Hash
	for _, m := range []string{"one", "two", "three"} {
		testgit.Git(t, dir, "commit", "-q", "--allow-empty", "-m", m)
		hs = append(hs, plumbing.NewHash(testgit.RevParse(dir, "HEAD")))
	}
	testgit.Git(t, dir, "push", "-q", "origin", hs[0].String()+":refs/heads/orch")
	repo, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.FetchState("origin", "refs/heads/orch", "task/"); err != nil {
		t.Fatal(err)
	}
	return repo, remote, hs[0], hs[1], hs[2]
}

// PushClaimAndState: one push wins the claim ref and shares the state as it
// was before the claim; a taken claim ref is ErrClaimTaken while the state
// (claims won before) still goes; a state branch that moved is
// ErrPushRejected while the claim is won; the clone's copies of the refs
// follow what the remote took.
func TestPushClaimAndState(t *testing.T) {
	repo, remote, c1, c2, c3 := claimRemote(t)
	bare, err := Discover(remote)
	if err != nil {
		t.Fatal(err)
	}
	read := func(r *Repo, ref string) plumbing.Hash {
		t.Helper()
		h, err := r.ReadRef(ref)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	// Uncontended: claim ref A at c3, the state branch to c2.
	claimErr, stateErr, err := repo.PushClaimAndState("origin", "T-a", c3, plumbing.ZeroHash, "refs/heads/orch", c2, c1)
	if err != nil || claimErr != nil || stateErr != nil {
		t.Fatalf("uncontended: %v %v %v", claimErr, stateErr, err)
	}
	if read(bare, ClaimRef("T-a")) != c3 || read(bare, "refs/heads/orch") != c2 {
		t.Fatal("the remote did not take both refs")
	}
	if read(repo, "refs/remotes/origin/orch") != c2 || read(repo, claimTrackingPrefix("origin")+"T-a") != c3 {
		t.Fatal("the clone's copies did not follow the push")
	}

	// Taken: another clone holds T-a; the state branch still moves.
	claimErr, stateErr, err = repo.PushClaimAndState("origin", "T-a", c2, plumbing.ZeroHash, "refs/heads/orch", c3, c2)
	if err != nil || !errors.Is(claimErr, ErrClaimTaken) || stateErr != nil {
		t.Fatalf("taken: %v %v %v", claimErr, stateErr, err)
	}
	if read(bare, "refs/heads/orch") != c3 || read(bare, ClaimRef("T-a")) != c3 {
		t.Fatal("the state branch did not move beside a taken claim ref, or the ref moved")
	}

	// The state branch moved (the lease names c1): the claim is won all the same.
	claimErr, stateErr, err = repo.PushClaimAndState("origin", "T-b", c2, plumbing.ZeroHash, "refs/heads/orch", c2, c1)
	if err != nil || claimErr != nil || !errors.Is(stateErr, ErrPushRejected) {
		t.Fatalf("state moved: %v %v %v", claimErr, stateErr, err)
	}
	if read(bare, ClaimRef("T-b")) != c2 || read(bare, "refs/heads/orch") != c3 {
		t.Fatal("wrong refs after a lost state lease")
	}

	// Nothing new for the state branch: only the claim ref is pushed.
	claimErr, stateErr, err = repo.PushClaimAndState("origin", "T-c", c1, plumbing.ZeroHash, "refs/heads/orch", c3, c3)
	if err != nil || claimErr != nil || stateErr != nil || read(bare, ClaimRef("T-c")) != c1 {
		t.Fatalf("claim alone: %v %v %v", claimErr, stateErr, err)
	}

	// A hook that refuses claim refs is the remote's refusal, not a lost race.
	hook := filepath.Join(remote, "hooks", "update")
	testgit.WriteFile(t, hook, "#!/bin/sh\ncase \"$1\" in refs/orch/*) echo frozen >&2; exit 1;; esac\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	claimErr, stateErr, err = repo.PushClaimAndState("origin", "T-d", c1, plumbing.ZeroHash, "refs/heads/orch", c3, c3)
	if err == nil || errors.Is(err, ErrClaimTaken) || claimErr != nil {
		t.Fatalf("refused by a hook: %v %v %v", claimErr, stateErr, err)
	}
}

// FetchedClaims reads the clone's copies of the claim refs without git:
// packed and loose, a loose one winning over its packed entry.
func TestFetchedClaimsPackedAndLoose(t *testing.T) {
	repo, _, c1, c2, c3 := claimRemote(t)
	for id, h := range map[string]plumbing.Hash{"T-1": c1, "T-2": c2} {
		testgit.Git(t, repo.MainWorkTree, "update-ref", claimTrackingPrefix("origin")+id, h.String())
	}
	testgit.Git(t, repo.MainWorkTree, "pack-refs", "--all")
	testgit.Git(t, repo.MainWorkTree, "update-ref", claimTrackingPrefix("origin")+"T-2", c3.String())
	testgit.Git(t, repo.MainWorkTree, "update-ref", claimTrackingPrefix("origin")+"T-3", c3.String())
	testgit.Git(t, repo.MainWorkTree, "update-ref", "refs/orch/remotes/other/claims/T-9", c3.String())
	got, err := repo.FetchedClaims("origin")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]plumbing.Hash{"T-1": c1, "T-2": c3, "T-3": c3}
	if len(got) != len(want) {
		t.Fatalf("FetchedClaims = %v, want %v", got, want)
	}
	for id, h := range want {
		if got[id] != h {
			t.Errorf("%s = %v, want %v", id, got[id], h)
		}
	}
}

// The fetch stamp is a private-state file: a link put in its place is
// neither followed (the file it names keeps its time) nor trusted (the
// clone's view counts as never fetched, so a claim fetches).
func TestFetchStampRefusesALink(t *testing.T) {
	repo, _, _, _, _ := claimRemote(t)
	if repo.FetchedAt("origin").IsZero() {
		t.Fatal("no fetch time after a fetch")
	}
	outside := filepath.Join(t.TempDir(), "outside")
	testgit.WriteFile(t, outside, "x")
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(outside, old, old); err != nil {
		t.Fatal(err)
	}
	stamp := filepath.Join(repo.CommonDir, "orch", fetchedStamp("origin"))
	if err := os.Remove(stamp); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, stamp); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.FetchState("origin", "refs/heads/orch", "task/"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(outside); err != nil || !fi.ModTime().Equal(old) {
		t.Fatalf("the linked file was touched: %v %v", fi.ModTime(), err)
	}
	if !repo.FetchedAt("origin").IsZero() {
		t.Fatal("a link counted as a fetch time")
	}
}
