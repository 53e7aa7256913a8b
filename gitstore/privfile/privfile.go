package privfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is a path orch reads or writes that is not a regular file.
type ErrNotRegular struct {
	Path string
	Kind string // "a FIFO", "a directory", ...
}

func (e *ErrNotRegular) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file; orch's private state holds only regular files: remove it (orch doctor --fix does; orch makes the file again)", e.Path, e.Kind)
}

// KindOf names what a file of mode m is, for ErrNotRegular.
func KindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// Check returns nil when path is a regular file or does not exist.
func Check(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return &ErrNotRegular{Path: path, Kind: KindOf(fi.Mode())}
	}
	return nil
}

// Open opens a file of the private state, refusing (without blocking)
// anything but a regular file.
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &ErrNotRegular{Path: path, Kind: KindOf(fi.Mode())}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Read reads a file of the private state (see Open).
func Read(path string) ([]byte, error) {
	f, err := Open(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Sized from the file's length, as os.ReadFile does: io.ReadAll's
	// doubling makes twice the garbage.
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil && fi.Size() < math.MaxInt32-bytes.MinRead {
		buf.Grow(int(fi.Size()) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
