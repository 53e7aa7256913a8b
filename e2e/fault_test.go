package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/internal/repostate"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted
// when the test ends. It skips the test, saying why, when it cannot (not
// root, or no CAP_SYS_ADMIN in this container).
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs (a full disk cannot be made otherwise: RLIMIT_FSIZE limits one file, not the repository)")
	}
	dir, err := os.MkdirTemp("", "orch-fault-")
	if err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("size=%d,mode=0755", size)
	if err := unix.Mount("orch-fault", dir, "tmpfs", 0, opts); err != nil {
		os.Remove(dir)
		t.Skipf("cannot mount a tmpfs on %s (%v): the container lacks CAP_SYS_ADMIN", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
		os.Remove(dir)
	})
	return dir
}

// remount makes the tmpfs at dir read-only or writable again.
func remount(t *testing.T, dir string, readOnly bool) {
	t.Helper()
	flags := uintptr(unix.MS_REMOUNT)
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("orch-fault", dir, "tmpfs", flags, ""); err != nil {
		t.Fatalf("remounting %s (read-only %v): %v", dir, readOnly, err)
	}
}

// repoSnapshot is what a failed command must leave alone: every ref, the
// state branch's reflog, and every file of the main worktree and the view
// (not the rest of .git, where a failed command may leave a dangling
// object, which git gc prunes).
func (r *Repo) repoSnapshot(t *testing.T) map[string]string {
	t.Helper()
	state := map[string]string{
		"refs":  r.Git(r.Main, "for-each-ref", "--format=%(refname) %(objectname)"),
		"HEAD":  r.Git(r.Main, "rev-parse", "HEAD"),
		"index": r.Git(r.Main, "ls-files", "-s"),
	}
	if b, err := os.ReadFile(filepath.Join(r.Main, ".git", "logs", "refs", "heads", "orch")); err == nil {
		state["reflog orch"] = string(b)
	}
	if err := repostate.AddFiles(state, r.Main); err != nil {
		t.Fatal(err)
	}
	return state
}

// faultSetup makes a repository with tasks in several queues, its view up
// to date.
func faultSetup(t *testing.T, r *Repo) (claimed string) {
	t.Helper()
	var out NewOutput
	if err := r.MustOrch(r.Main, "new", "First", "--json").JSON(&out); err != nil {
		t.Fatal(err)
	}
	r.MustOrch(r.Main, "new", "Second")
	r.MustOrch(r.Main, "new", "Third", "--priority", "P1")
	var claim struct {
		Branch string `json:"branch"`
	}
	if err := r.MustOrch(r.Main, "claim", "--agent", "a1", "--task", out.Task.ID, "--json").JSON(&claim); err != nil {
		t.Fatal(err)
	}
	// a1's work, so that its submit has something to submit
	work := r.Git(r.Main, "commit-tree", "-p", claim.Branch, "-m", "a1's work", claim.Branch+"^{tree}")
	r.Git(r.Main, "update-ref", "refs/heads/"+claim.Branch, work)
	r.MustOrch(r.Main, "list")
	return out.Task.ID
}

// faultCommands are the verbs tried against a broken repository.
func faultCommands(claimed string) [][]string {
	return [][]string{
		{"new", "Fourth"},
		{"new", "Fourth", "--json"},
		{"claim", "--agent", "a2"},
		{"claim", "--agent", "a2", "--json"},
		{"submit", claimed, "--agent", "a1"},
		{"reject", claimed, "-m", "no", "--agent", "lead"},
		{"list"},
		{"list", "--json"},
		{"show", claimed},
	}
}

// checkFaultError checks that a command failed with a message that names
// the problem and a hint, in the form its flags ask for.
func checkFaultError(t *testing.T, res Result, code, phrase string) {
	t.Helper()
	if res.OK() || res.Code != 1 {
		t.Errorf("%v: want exit 1 (%s)", res, phrase)
		return
	}
	json := false
	for _, a := range res.Args {
		json = json || a == "--json"
	}
	if json {
		var doc struct {
			SchemaVersion int `json:"schema_version"`
			Error         struct {
				Code, Message, Hint string
			} `json:"error"`
		}
		if strings.TrimSpace(res.Stdout) != "" {
			t.Errorf("%v: stdout not empty on failure: %q", res, res.Stdout)
		}
		// The envelope is the last line: notes of the reconcile (a view
		// file it could not write) come before it.
		lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
		if len(lines) > 1 {
			t.Logf("orch %s: stderr holds notes before the JSON error: %q", strings.Join(res.Args[1:], " "), lines[:len(lines)-1])
		}
		if err := (Result{Args: res.Args, Stdout: lines[len(lines)-1]}).JSON(&doc); err != nil {
			t.Errorf("%v: %v", res, err)
			return
		}
		if doc.Error.Code != code || !strings.Contains(doc.Error.Message, phrase) || doc.Error.Hint == "" {
			t.Errorf("%v: want error code %q, a message saying %q, and a hint", res, code, phrase)
		}
		return
	}
	if !strings.Contains(res.Stderr, phrase) || !strings.Contains(res.Stderr, "\nhint: ") {
		t.Errorf("%v: want a message saying %q and a hint", res, phrase)
	}
}

// TestFaultReadOnlyRepository: every verb run against a read-only
// repository fails with exit 1, a message that says so and a hint, and
// changes nothing; once writable again, orch works and fsck is clean.
//
// As root, chmod does not stop writes, so the repository lives on a tmpfs
// that is remounted read-only; otherwise chmod -R a-w does it.
func TestFaultReadOnlyRepository(t *testing.T) {
	var r *Repo
	var makeReadOnly, makeWritable func()
	code, phrase := "read_only", "read-only file system"
	if os.Geteuid() == 0 {
		root := mountTmpfs(t, 64<<20)
		r = NewRepoIn(t, root)
		makeReadOnly = func() { remount(t, root, true) }
		makeWritable = func() { remount(t, root, false) }
	} else {
		r = NewRepo(t)
		code, phrase = "permission", "permission denied"
		chmod := func(mode string) {
			if out, err := exec.Command("chmod", "-R", mode, r.Main).CombinedOutput(); err != nil {
				t.Fatalf("chmod -R %s: %v: %s", mode, err, out)
			}
		}
		makeReadOnly = func() { chmod("a-w") }
		makeWritable = func() { chmod("u+w") }
		t.Cleanup(makeWritable) // or the temp dir cannot be removed
	}
	claimed := faultSetup(t, r)
	before := r.repoSnapshot(t)
	makeReadOnly()
	for _, args := range faultCommands(claimed) {
		checkFaultError(t, r.Orch(r.Main, args...), code, phrase)
	}
	makeWritable()
	if d := repostate.Diff(before, r.repoSnapshot(t)); len(d) > 0 {
		t.Errorf("the repository changed while read-only:\n%s", strings.Join(d, "\n"))
	}
	r.Fsck()
	if res := r.Orch(r.Main, "check"); !res.OK() {
		t.Errorf("orch check: %v\n%s", res, res.Stdout)
	}
	r.MustOrch(r.Main, "new", "Fourth")
	r.checkViewIsBranch(t)
	r.Fsck()
}

// fillDisk fills the file system of dir with one file until fewer than
// free bytes are left (tmpfs counts whole pages), and returns a function
// that frees the space again.
func fillDisk(t *testing.T, dir string, free int64) func() {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := f.Write(buf)
		n += int64(k)
		if errors.Is(err, unix.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if free > 0 {
		if err := f.Truncate(max(n-free, 0)); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFaultDiskFull runs transitions with the repository's disk full, and
// then with a little room left, a page more each time, so that the space
// runs out at each step of a commit in turn (objects, ref lock, reflog,
// view, cache). A command either succeeds, and its commit is on the state
// branch, or fails with exit 1, a message naming the full disk and a
// hint, and changes nothing. Once space is freed, one orch command brings
// the view to the branch, orch check passes and fsck is clean.
func TestFaultDiskFull(t *testing.T) {
	root := mountTmpfs(t, 16<<20)
	r := NewRepoIn(t, root)
	claimed := faultSetup(t, r)
	var committed []string
	failed, succeeded := 0, 0
	for step := 0; step < 40; step++ {
		free := int64(step) * 4096
		var args []string
		switch step % 3 {
		case 0:
			args = []string{"new", fmt.Sprintf("Full disk %d", step), "--json"}
		case 1:
			args = []string{"claim", "--agent", fmt.Sprintf("a%d", step), "--json"}
		case 2:
			args = []string{"new", fmt.Sprintf("Full disk %d", step), "--json", "--body", strings.Repeat("Long body. ", 2000)}
		}
		// The view catches up first with what an earlier command committed
		// but could not write for lack of space.
		r.MustOrch(r.Main, "list")
		before := r.repoSnapshot(t)
		unfill := fillDisk(t, root, free)
		res := r.Orch(r.Main, args...)
		unfill()
		if res.OK() {
			succeeded++
			var out transitionJSON
			if err := res.JSON(&out); err != nil {
				t.Fatal(err)
			}
			committed = append(committed, out.Commit)
			continue
		}
		failed++
		if res.Code == 3 { // nothing left to claim: not a disk problem
			continue
		}
		t.Logf("%d bytes free: orch %s: %s", free, args[0], lastLine(res.Stderr))
		checkFaultError(t, res, "no_space", "no space left on device")
		if d := repostate.Diff(before, r.repoSnapshot(t)); len(d) > 0 {
			t.Errorf("%d bytes free: orch %s failed but changed the repository:\n%s\n%v", free, strings.Join(args, " "), strings.Join(d, "\n"), res)
		}
	}
	t.Logf("with the disk full or nearly: %d commands succeeded, %d failed", succeeded, failed)
	if failed == 0 {
		t.Errorf("no command failed: the disk was never full")
	}
	r.MustOrch(r.Main, "list")
	state := r.RevList("refs/heads/orch")
	for _, c := range committed {
		if !state[c] {
			t.Errorf("LOST: commit %s reported by a command that exited 0 is not on the state branch", c)
		}
	}
	r.checkViewIsBranch(t)
	if res := r.Orch(r.Main, "check"); !res.OK() {
		t.Errorf("orch check: %v\n%s", res, res.Stdout)
	}
	r.checkNoRefLocks(t)
	r.Fsck()
	r.MustOrch(r.Main, "submit", claimed, "--agent", "a1")
	r.Fsck()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
