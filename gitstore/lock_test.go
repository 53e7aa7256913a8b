package gitstore

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orch-tool/orch/internal/testgit"
)

// A wait that times out leaves nothing behind: no goroutine still blocked in
// flock, no descriptor that takes the lock later in this process.
func TestLockTimeoutLeavesNothingBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orch", "lock")
	holder, err := acquireLock(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := acquireLock(path, 30*time.Millisecond)
		var to *ErrLockTimeout
		if !errors.As(err, &to) {
			t.Fatalf("want a timeout, got %v", err)
		}
		if to.Holder != "pid "+strconv.Itoa(os.Getpid()) {
			t.Errorf("holder %q", to.Holder)
		}
	}
	if stacks := allStacks(); strings.Contains(stacks, "Flock") {
		t.Errorf("a goroutine still waits in flock after the waits gave up:\n%s", stacks)
	}
	// Only a descriptor of the lock file can take the lock: the holder's
	// must be the only one left.
	if n := descriptorsOf(t, path); n != 1 {
		t.Errorf("%d descriptors of the lock file are open with one holder, want 1", n)
	}
	holder.release()
	if n := descriptorsOf(t, path); n != 0 {
		t.Fatalf("%d descriptors of the lock file are open after the release, want 0", n)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the lock is held after every waiter gave up: %v", err)
	}
}

// A released lock is taken by a waiter.
func TestLockWaiterTakesReleasedLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orch", "lock")
	holder, err := acquireLock(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := acquireLock(path, time.Minute)
		l.release()
		got <- err
	}()
	// Release only once the waiter has found the lock held and waits.
	deadline := time.Now().Add(time.Minute)
	for !waitsForFlock(allStacks()) {
		if time.Now().After(deadline) {
			t.Fatalf("the waiter never waited:\n%s", allStacks())
		}
		runtime.Gosched()
	}
	holder.release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// allStacks is the stack of every goroutine.
func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// waitsForFlock reports whether a goroutine sleeps between two tries of
// waitFlock: it found the lock held.
func waitsForFlock(stacks string) bool {
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "gitstore.waitFlock") && strings.Contains(g, "time.Sleep") {
			return true
		}
	}
	return false
}

// descriptorsOf counts this process's open descriptors of the file at path.
func descriptorsOf(t *testing.T, path string) int {
	t.Helper()
	var want syscall.Stat_t
	if err := syscall.Stat(path, &want); err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	n := 0
	for fd := 0; uint64(fd) < min(lim.Cur, 1<<16); fd++ {
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
			n++
		}
	}
	return n
}

// Looking takes a shared lock and creates nothing; a held exclusive lock
// makes it wait, then fail.
func TestDoctorLock(t *testing.T) {
	dir := testgit.MakeRepo(t)
	st, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	release, err := st.DoctorLock(false, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := os.Stat(st.PrivDir()); !os.IsNotExist(err) {
		t.Fatalf("looking created %s", st.PrivDir())
	}
	held, err := st.DoctorLock(true, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held()
	st2, _ := Open(Options{Dir: dir})
	if _, err := st2.DoctorLock(false, 50*time.Millisecond); err == nil {
		t.Fatal("shared lock taken while held exclusively")
	} else if _, ok := err.(*ErrLockTimeout); !ok {
		t.Fatalf("error %T %v", err, err)
	}
}
