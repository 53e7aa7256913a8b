package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/internal/testgit"
)

// someCommits makes n commits on main with the git CLI and returns them.
func someCommits(t *testing.T, dir string, n int) []plumbing.Hash {
	t.Helper()
	var out []plumbing.Hash
	for i := 0; i < n; i++ {
		testgit.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "c"+strconv.Itoa(i))
		out = append(out, plumbing.NewHash(testgit.Git(t, dir, "rev-parse", "HEAD")))
	}
	return out
}

func mustRef(t *testing.T, r *Repo, name string) plumbing.Hash {
	t.Helper()
	h, err := r.ReadRef(name)
	if err != nil {
		t.Fatalf("ReadRef(%s): %v", name, err)
	}
	return h
}

func TestUpdateRefCompareAndSwap(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	c := someCommits(t, dir, 3)
	r, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	const ref = "refs/heads/orch"
	if h := mustRef(t, r, ref); !h.IsZero() {
		t.Fatalf("missing ref reads as %s", h)
	}

	// Create.
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: plumbing.ZeroHash, New: c[0], Message: "create"}); err != nil {
		t.Fatal(err)
	}
	if got := testgit.RevParse(dir, ref); got != c[0].String() {
		t.Fatalf("git rev-parse after create = %s, want %s", got, c[0])
	}
	// Creating again must fail: the ref exists.
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: plumbing.ZeroHash, New: c[1]}); !errors.Is(err, ErrRefMoved) {
		t.Fatalf("create over an existing ref: %v, want ErrRefMoved", err)
	}
	// Update with the right old value.
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: c[0], New: c[1], Message: "update"}); err != nil {
		t.Fatal(err)
	}
	// A wrong old value leaves the ref alone and no lock behind.
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: c[0], New: c[2]}); !errors.Is(err, ErrRefMoved) {
		t.Fatalf("update with a stale old value: %v, want ErrRefMoved", err)
	}
	if got := testgit.RevParse(dir, ref); got != c[1].String() {
		t.Fatalf("ref moved by a refused update: %s, want %s", got, c[1])
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "refs", "heads", "orch.lock")); !os.IsNotExist(err) {
		t.Fatalf("lock file left behind: %v", err)
	}
	// The git CLI honours our lock protocol and we honour its.
	testgit.Git(t, dir, "update-ref", ref, c[2].String(), c[1].String())
	if h := mustRef(t, r, ref); h != c[2] {
		t.Fatalf("ReadRef after git update-ref = %s, want %s", h, c[2])
	}
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: c[1], New: c[0]}); !errors.Is(err, ErrRefMoved) {
		t.Fatalf("update after git moved the ref: %v, want ErrRefMoved", err)
	}
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: c[2], New: c[0], Message: "back"}); err != nil {
		t.Fatal(err)
	}
	if got := testgit.RevParse(dir, ref); got != c[0].String() {
		t.Fatalf("git rev-parse = %s, want %s", got, c[0])
	}

	// Bad names are refused before touching anything.
	for _, bad := range []string{"orch", "refs/heads/../x", "refs/heads/a.lock", "refs/heads/a b", "refs/heads/.x", "refs/heads/x/"} {
		if err := r.UpdateRef(RefUpdate{Name: bad, New: c[0]}); err == nil {
			t.Errorf("UpdateRef(%q) accepted", bad)
		}
	}
	testgit.Fsck(t, dir)
}

func TestUpdateRefPackedRefs(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	c := someCommits(t, dir, 4)
	r, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	const ref = "refs/heads/orch"
	testgit.Git(t, dir, "update-ref", ref, c[0].String())
	testgit.Git(t, dir, "pack-refs", "--all")
	loose := filepath.Join(dir, ".git", "refs", "heads", "orch")
	if _, err := os.Stat(loose); !os.IsNotExist(err) {
		t.Fatalf("pack-refs left the loose ref: %v", err)
	}
	if h := mustRef(t, r, ref); h != c[0] {
		t.Fatalf("ReadRef from packed-refs = %s, want %s", h, c[0])
	}
	// CAS against the packed value.
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: c[1], New: c[2]}); !errors.Is(err, ErrRefMoved) {
		t.Fatalf("wrong old against packed-refs: %v", err)
	}
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: plumbing.ZeroHash, New: c[2]}); !errors.Is(err, ErrRefMoved) {
		t.Fatalf("create over a packed ref: %v", err)
	}
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: c[0], New: c[1], Message: "over packed"}); err != nil {
		t.Fatal(err)
	}
	if got := testgit.RevParse(dir, ref); got != c[1].String() {
		t.Fatalf("git rev-parse = %s, want %s", got, c[1])
	}
	// Packed again, with a stale packed entry under a newer loose one.
	testgit.Git(t, dir, "pack-refs", "--all")
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: c[1], New: c[3]}); err != nil {
		t.Fatal(err)
	}
	if got := testgit.RevParse(dir, ref); got != c[3].String() {
		t.Fatalf("git rev-parse = %s, want %s", got, c[3])
	}
	if h := mustRef(t, r, ref); h != c[3] {
		t.Fatalf("ReadRef = %s, want %s", h, c[3])
	}
	// A packed ref among many others, with peeled tags.
	testgit.Git(t, dir, "tag", "-a", "-m", "v1", "v1", c[0].String())
	testgit.Git(t, dir, "branch", "orch-other", c[2].String())
	testgit.Git(t, dir, "pack-refs", "--all")
	if h := mustRef(t, r, ref); h != c[3] {
		t.Fatalf("ReadRef among other packed refs = %s, want %s", h, c[3])
	}
	if h := mustRef(t, r, "refs/heads/orch-other"); h != c[2] {
		t.Fatalf("ReadRef(orch-other) = %s, want %s", h, c[2])
	}
	testgit.Fsck(t, dir)
}

func TestUpdateRefReflog(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	c := someCommits(t, dir, 3)
	r, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	const ref = "refs/heads/orch"
	prev := plumbing.ZeroHash
	for i, h := range c {
		msg := "step " + strconv.Itoa(i) + "\nwith a second line"
		if err := r.UpdateRef(RefUpdate{Name: ref, Old: prev, New: h, Who: "Ada Tester <ada@example.com>", Message: msg}); err != nil {
			t.Fatal(err)
		}
		prev = h
	}
	out := testgit.Git(t, dir, "reflog", "show", "--format=%H %gs", "orch")
	lines := strings.Split(out, "\n")
	if len(lines) != 3 {
		t.Fatalf("git reflog show orch: %q", out)
	}
	for i, line := range lines {
		want := c[2-i].String() + " step " + strconv.Itoa(2-i) + " with a second line"
		if line != want {
			t.Errorf("reflog line %d = %q, want %q", i, line, want)
		}
	}
	raw := testgit.ReadFile(t, filepath.Join(dir, ".git", "logs", "refs", "heads", "orch"))
	re := regexp.MustCompile(`^[0-9a-f]{40} [0-9a-f]{40} Ada Tester <ada@example\.com> \d+ [+-]\d{4}\t[^\n]*$`)
	for _, line := range strings.Split(strings.TrimSuffix(raw, "\n"), "\n") {
		if !re.MatchString(line) {
			t.Errorf("reflog line not in git's format: %q", line)
		}
	}
	if !strings.HasPrefix(raw, strings.Repeat("0", 40)+" ") {
		t.Errorf("first reflog entry does not start from the null id: %q", raw)
	}
	// git can walk and expire it.
	testgit.Git(t, dir, "log", "-g", "--oneline", "orch")
	testgit.Git(t, dir, "reflog", "expire", "--expire=now", "--all")
	testgit.Fsck(t, dir)
}

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.Pid()
}

func setRefLockVars(t *testing.T, timeout, stale time.Duration) {
	oldT, oldS := refLockTimeout, staleRefLockAge
	refLockTimeout, staleRefLockAge = timeout, stale
	t.Cleanup(func() { refLockTimeout, staleRefLockAge = oldT, oldS })
}

func TestStaleRefLockTakenOver(t *testing.T) {
	dir := testgit.MakeRepo(t)
	c := someCommits(t, dir, 2)
	r, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	const ref = "refs/heads/orch"
	lock := filepath.Join(dir, ".git", "refs", "heads", "orch.lock")
	setRefLockVars(t, 300*time.Millisecond, 30*time.Second)

	// A fresh lock: someone is updating the ref; we give up after the
	// timeout and leave their lock and the ref alone.
	testgit.WriteFile(t, lock, "")
	err = r.UpdateRef(RefUpdate{Name: ref, New: c[0]})
	var rl *ErrRefLocked
	if !errors.As(err, &rl) || rl.Path != lock {
		t.Fatalf("UpdateRef with a fresh foreign lock: %v", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("someone else's lock was removed: %v", err)
	}
	if testgit.RevParse(dir, ref) != "" {
		t.Fatal("ref created despite the lock")
	}

	// An old lock: its owner is long gone.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateRef(RefUpdate{Name: ref, New: c[0], Message: "after stale lock"}); err != nil {
		t.Fatalf("UpdateRef over a stale lock: %v", err)
	}
	if got := testgit.RevParse(dir, ref); got != c[0].String() {
		t.Fatalf("ref = %s, want %s", got, c[0])
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("lock left behind: %v", err)
	}
	testgit.Fsck(t, dir)
}

// TestRefLockLeftByKilledOrch: an orch process killed while holding the ref
// lock (noted in the owner file) must not block the next orch command until
// staleRefLockAge.
func TestRefLockLeftByKilledOrch(t *testing.T) {
	dir := testgit.MakeRepo(t)
	c := someCommits(t, dir, 2)
	const ref = "refs/heads/orch"
	testgit.Git(t, dir, "update-ref", ref, c[0].String())
	setRefLockVars(t, 3*time.Second, time.Hour)

	r, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.LockOwnerFile = filepath.Join(r.CommonDir, "orch", "ref-lock-owner")
	lock := filepath.Join(r.CommonDir, "refs", "heads", "orch.lock")
	owner := r.LockOwnerFile

	// A live process named as owner: its lock is respected.
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	// The lock was made 2 s ago; orch notes its owner right after making
	// it (noteDelay later).
	setupAt := func(pid int, noteDelay time.Duration) {
		testgit.WriteFile(t, owner, strconv.Itoa(pid)+"\n")
		testgit.WriteFile(t, lock, "")
		locked := time.Now().Add(-2 * time.Second)
		noted := locked.Add(noteDelay)
		if err := os.Chtimes(owner, noted, noted); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(lock, locked, locked); err != nil {
			t.Fatal(err)
		}
	}
	setup := func(pid int) { setupAt(pid, 5*time.Millisecond) }
	setup(live.Process.Pid)
	refLockTimeout = 200 * time.Millisecond
	err = r.UpdateRef(RefUpdate{Name: ref, Old: c[0], New: c[1]})
	var rl *ErrRefLocked
	if !errors.As(err, &rl) {
		t.Fatalf("update with a lock held by a live orch: %v", err)
	}
	if testgit.RevParse(dir, ref) != c[0].String() {
		t.Fatal("branch moved under a live lock")
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatal("live owner's lock removed")
	}

	// A dead orch's note from long before the lock: the lock is a live git
	// process's, not the dead orch's, and is respected.
	setupAt(deadPID(t), -time.Minute)
	err = r.UpdateRef(RefUpdate{Name: ref, Old: c[0], New: c[1]})
	if !errors.As(err, &rl) {
		t.Fatalf("update with a lock newer than a dead orch's note: %v", err)
	}
	if testgit.RevParse(dir, ref) != c[0].String() {
		t.Fatal("branch moved under a foreign lock")
	}

	// The owner is dead and the lock is its: taken over at once.
	setup(deadPID(t))
	refLockTimeout = 3 * time.Second
	if err := r.UpdateRef(RefUpdate{Name: ref, Old: c[0], New: c[1]}); err != nil {
		t.Fatalf("update after a killed orch left the ref lock: %v", err)
	}
	if got := testgit.RevParse(dir, ref); got != c[1].String() {
		t.Fatalf("tip %s, want %s", got, c[1])
	}
	// Once released, the note is gone: it never names a finished process.
	if _, err := os.Stat(owner); !os.IsNotExist(err) {
		t.Fatalf("owner note left after the ref lock was released: %v", err)
	}
	testgit.Fsck(t, dir)
}

// RemoveLocksOfDeadOrch removes the ref .lock files that killed orch
// processes left (a task branch's lock may not be wanted again by orch, and
// it blocks git on that branch), and only those.
func TestRemoveLocksOfDeadOrch(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	repo, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	repo.LockOwnerFile = filepath.Join(repo.CommonDir, "orch", "ref-lock-owner")

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := gone.Process.Pid
	past := time.Now().Add(-5 * time.Second)
	lockOf := func(ref string) string {
		return filepath.Join(repo.CommonDir, filepath.FromSlash(ref)) + ".lock"
	}
	place := func(ref string, pid int, withLock bool) (lock, note string) {
		lock = lockOf(ref)
		note = repo.ownerNote(lock)
		testgit.WriteFile(t, note, fmt.Sprintf("%d\n", pid))
		if err := os.Chtimes(note, past, past); err != nil {
			t.Fatal(err)
		}
		if withLock {
			testgit.WriteFile(t, lock, "")
			if err := os.Chtimes(lock, past, past); err != nil {
				t.Fatal(err)
			}
		}
		return lock, note
	}
	deadLock, deadNote := place("refs/heads/task/T-dead01-x", deadPID, true)
	liveLock, liveNote := place("refs/heads/task/T-live01-x", os.Getppid(), true)
	_, loneNote := place("refs/heads/task/T-lone01-x", deadPID, false)

	repo.RemoveLocksOfDeadOrch()
	for _, p := range []string{deadLock, deadNote, loneNote} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left (%v)", p, err)
		}
	}
	for _, p := range []string{liveLock, liveNote} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

// core.filesRefLockTimeout, git's own setting, sets how long a ref update
// waits for another writer's lock, as git reads it.
func TestRefLockWait(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{"", refLockTimeout},
		{"250", 250 * time.Millisecond},
		{"0", 0},
		{"-1", 100 * 365 * 24 * time.Hour},
		{"soon", refLockTimeout},
	} {
		dir := testgit.MakeRepo(t)
		if tc.value != "" {
			testgit.Git(t, dir, "config", "core.filesRefLockTimeout", tc.value)
		}
		r, err := Discover(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.refLockWait(); got != tc.want {
			t.Errorf("core.filesRefLockTimeout=%q: waits %v, want %v", tc.value, got, tc.want)
		}
	}
}
