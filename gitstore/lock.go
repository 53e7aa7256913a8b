package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orch-tool/orch/gitstore/privfile"
)

// defaultLockTimeout bounds how long a command waits for another orch
// process (Options.LockTimeout overrides it).
const defaultLockTimeout = 60 * time.Second

// ErrLockTimeout is returned when the store lock stays held too long.
type ErrLockTimeout struct {
	Path   string
	Holder string
}

func (e *ErrLockTimeout) Error() string {
	h := ""
	if e.Holder != "" {
		h = " (held by " + e.Holder + ")"
	}
	return fmt.Sprintf("timed out waiting for the orch lock %s%s", e.Path, h)
}

// fileLock is an flock(2) on a file in the common dir. The kernel drops it
// when the process dies, so a killed orch never leaves it held.
type fileLock struct {
	f    *os.File
	path string
}

// acquireLock takes an exclusive flock on path, waiting at most timeout.
//
// It polls with LOCK_NB instead of blocking in flock(2): a blocking flock
// cannot be interrupted, so a waiter that gives up would leave a goroutine
// (and a descriptor) behind that could still take the lock later, in a
// process that no longer wants it. The sleeps start short and stay short,
// so a released lock is taken almost as soon as a blocking flock would take
// it.
func acquireLock(path string, timeout time.Duration) (*fileLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return nil, err
	}
	f, err := privfile.Open(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	if err := waitFlock(f, path, syscall.LOCK_EX, timeout); err != nil {
		f.Close()
		return nil, err
	}
	return finishLock(f, path), nil
}

// DoctorLock takes the orch lock for orch doctor, waiting at most wait
// (then *ErrLockTimeout): shared to look, exclusive to repair. It stays
// with the store, whose lock file, flock protocol and holder record it is,
// and it loads nothing (Lock loads, and trusts, the cache). Looking creates
// nothing: without a lock file no orch process holds the lock.
func (st *Store) DoctorLock(exclusive bool, wait time.Duration) (release func(), err error) {
	path := filepath.Join(st.priv, "lock")
	if exclusive {
		l, err := acquireLock(path, wait)
		if err != nil {
			return nil, err
		}
		return l.release, nil
	}
	f, err := privfile.Open(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := waitFlock(f, path, syscall.LOCK_SH, wait); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// waitFlock polls flock(how|LOCK_NB) on f until it succeeds or timeout
// passes (*ErrLockTimeout naming the holder).
func waitFlock(f *os.File, path string, how int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	wait := 100 * time.Microsecond
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			return err
		}
		if !time.Now().Before(deadline) {
			holder, _ := privfile.Read(path)
			return &ErrLockTimeout{Path: path, Holder: strings.TrimSpace(string(holder))}
		}
		time.Sleep(wait)
		wait = min(wait*2, 2*time.Millisecond)
	}
}

func finishLock(f *os.File, path string) *fileLock {
	// Who holds it, for the timeout message of the next waiter.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
	return &fileLock{f: f, path: path}
}

func (l *fileLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
