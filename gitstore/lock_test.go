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
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "Flock") {
		t.Errorf("a goroutine still waits in flock after the waits gave up:\n%s", stacks)
	}
	holder.release()
	time.Sleep(20 * time.Millisecond) // a leaked waiter would take it now
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
	go func() {
		time.Sleep(30 * time.Millisecond)
		holder.release()
	}()
	l, err := acquireLock(path, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.release()
}
