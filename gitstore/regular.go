package gitstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// Every file orch reads or writes under <common dir>/orch/ must be a
// regular file (DESIGN §2): a FIFO there used to hang every command, a
// directory at lock hung doctor. Such a path is found without blocking
// (lstat, and opens with O_NONBLOCK and O_NOFOLLOW) and refused, naming it.

// ErrNotRegular is a path orch reads or writes that is not a regular file.
type ErrNotRegular struct {
	Path string
	Kind string // "a FIFO", "a directory", ...
}

func (e *ErrNotRegular) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file; orch's private state holds only regular files: remove it (orch doctor --fix does; orch makes the file again)", e.Path, e.Kind)
}

func kindOf(m fs.FileMode) string {
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

// checkRegular returns nil when path is a regular file or does not exist.
func checkRegular(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return &ErrNotRegular{Path: path, Kind: kindOf(fi.Mode())}
	}
	return nil
}

// openPrivate opens a file of the private state, refusing (without
// blocking) anything but a regular file.
func openPrivate(path string, flag int, perm os.FileMode) (*os.File, error) {
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &ErrNotRegular{Path: path, Kind: kindOf(fi.Mode())}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadPrivateFile reads a file of the private state (see openPrivate).
func ReadPrivateFile(path string) ([]byte, error) {
	f, err := openPrivate(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// NotRegularPrivateFiles lists what is in the private state directory but
// not a regular file, where orch expects one (every entry but the edits/
// directory of kept edit buffers).
func (st *Store) NotRegularPrivateFiles() []*ErrNotRegular {
	ents, err := os.ReadDir(st.priv)
	if err != nil {
		return nil
	}
	var out []*ErrNotRegular
	for _, e := range ents {
		if e.Name() == "edits" && e.IsDir() {
			continue
		}
		if e.Type().IsRegular() {
			continue
		}
		out = append(out, &ErrNotRegular{Path: filepath.Join(st.priv, e.Name()), Kind: kindOf(e.Type())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// checkPrivateFiles refuses to go on when a file orch is about to read or
// write in the private state is not a regular file.
func (st *Store) checkPrivateFiles() error {
	for _, p := range []string{st.cachePath(), st.cachePath() + journalSuffix, filepath.Join(st.priv, "view-owner"), filepath.Join(st.priv, "clone-id"), st.Repo.ownerFile} {
		if err := checkRegular(p); err != nil {
			return err
		}
	}
	return nil
}
