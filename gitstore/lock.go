package gitstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LockTimeout bounds how long a command waits for another orch process.
var LockTimeout = 60 * time.Second

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

func acquireLock(path string, shared bool) (*fileLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return nil, err
	}
	f, err := openPrivate(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	// Fast path: uncontended.
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err == nil {
		return finishLock(f, path, shared), nil
	}
	done := make(chan error, 1)
	go func() { done <- flockRetry(int(f.Fd()), how) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, err
		}
		return finishLock(f, path, shared), nil
	case <-time.After(LockTimeout):
		holder, _ := ReadPrivateFile(path)
		return nil, &ErrLockTimeout{Path: path, Holder: strings.TrimSpace(string(holder))}
	}
}

func flockRetry(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if err == syscall.EINTR {
			continue
		}
		return err
	}
}

func finishLock(f *os.File, path string, shared bool) *fileLock {
	if !shared {
		// Who holds it, for the timeout message of the next waiter.
		_ = f.Truncate(0)
		_, _ = f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
	}
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
