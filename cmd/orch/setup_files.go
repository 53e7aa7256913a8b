package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/workflow"
)

// setupFileEdit is one file orch setup writes: read, then changed in
// memory, then written only once every file of the run has been checked.
type setupFileEdit struct {
	shown    string      // the path the answer names: as given, relative to the worktree
	real     string      // where the bytes are, every symbolic link resolved
	exists   bool        // whether real exists
	cur      []byte      // its bytes
	mode     fs.FileMode // its permissions
	uid, gid int         // and owner
	next     []byte      // what it is to hold
	action   string      // created | updated | unchanged
}

// openSetupFile reads the file at path (absolute), which orch setup is to
// write. A symbolic link is followed when it leads to a file inside the
// worktree: a CLAUDE.md linked to AGENTS.md is one file under two names, and
// the person wants the link kept. A link that leads out of the worktree is
// refused: the write would change a file that other projects or the
// person's own configuration share, and that no git status of this
// repository shows. Only a regular file is read, and without blocking.
func openSetupFile(worktree, path string) (*setupFileEdit, error) {
	e := &setupFileEdit{shown: relTo(worktree, path)}
	real, err := realPath(path)
	if err != nil {
		return nil, err
	}
	e.real = real
	realTree, err := filepath.EvalSymlinks(worktree)
	if err != nil {
		return nil, err
	}
	if (inside(worktree, path) || inside(realTree, path)) && !inside(realTree, real) {
		return nil, outsideWorktree(worktree, path, real)
	}
	fi, err := os.Lstat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return e, nil
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, &workflow.RuleError{Rule: "not_regular", Msg: fmt.Sprintf("%s is %s, not a regular file; nothing was written", real, privfile.KindOf(fi.Mode())), Hint: "orch setup writes only regular files: move it away, then run orch setup again"}
	}
	f, err := os.OpenFile(real, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &workflow.RuleError{Rule: "not_regular", Msg: fmt.Sprintf("%s is %s, not a regular file; nothing was written", real, privfile.KindOf(fi.Mode())), Hint: "orch setup writes only regular files: move it away, then run orch setup again"}
	}
	if e.cur, err = io.ReadAll(f); err != nil {
		return nil, err
	}
	e.exists, e.mode = true, fi.Mode().Perm()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.uid, e.gid = int(st.Uid), int(st.Gid)
	}
	return e, nil
}

// change sets what the file is to hold. A file that would change and is
// read-only is refused: its mode says someone meant it to stay as it is,
// and a rename would replace it all the same (and root may write it).
func (e *setupFileEdit) change(next []byte) error {
	e.next = next
	switch {
	case !e.exists:
		e.action = "created"
	case bytes.Equal(next, e.cur):
		e.action = "unchanged"
	case e.mode&0o200 == 0:
		return &workflow.RuleError{Rule: "read_only", Msg: fmt.Sprintf("%s is read-only (mode %04o); nothing was written", e.real, e.mode), Hint: fmt.Sprintf("if orch may change it: chmod u+w %s, then run orch setup again", e.real)}
	default:
		e.action = "updated"
	}
	return nil
}

// write writes a changed file: a temporary file in the same directory,
// renamed over it, so that a reader never sees half a file (and a link to
// it stays a link). The mode is kept.
func (e *setupFileEdit) write() error {
	if e.action == "unchanged" {
		return nil
	}
	dir := filepath.Dir(e.real)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	mode := e.mode
	if !e.exists {
		mode = 0o644 // CreateTemp's 0600 would hide it from the team's tools
	}
	tmp, err := os.CreateTemp(dir, ".orch-setup-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(e.next)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil && e.exists {
		// Under sudo the new file would be root's: give it back to
		// whoever had it (only root may, so a failure changes nothing).
		_ = tmp.Chown(e.uid, e.gid)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), e.real)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// realPath is where the bytes of path are: every symbolic link on the way
// and at the end resolved, a link to nothing included (its target is where
// a write creates the file).
func realPath(path string) (string, error) {
	p := filepath.Clean(path)
	for range 40 { // the kernel's limit of links in one lookup
		dir, err := realDir(filepath.Dir(p))
		if err != nil {
			return "", err
		}
		p = filepath.Join(dir, filepath.Base(p))
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Mode()&fs.ModeSymlink == 0) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		p = target
	}
	return "", &fs.PathError{Op: "resolve", Path: path, Err: syscall.ELOOP}
}

// realDir is dir with its symbolic links resolved, as far as it exists.
func realDir(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		return real, err
	}
	parent := filepath.Dir(dir)
	if parent == dir {
		return dir, nil
	}
	real, err = realDir(parent)
	return filepath.Join(real, filepath.Base(dir)), err
}

// inside says whether p is root or under it (both clean and absolute).
func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// outsideWorktree refuses path, which a symbolic link leads to real,
// outside the worktree; it names the link.
func outsideWorktree(worktree, path, real string) error {
	link := path
	rel, _ := filepath.Rel(worktree, path)
	prefix := worktree
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		prefix = filepath.Join(prefix, part)
		if fi, err := os.Lstat(prefix); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			link = prefix
			break
		}
	}
	if _, err := os.Stat(real); link == path && errors.Is(err, fs.ErrNotExist) {
		return &workflow.RuleError{Rule: "outside_worktree",
			Msg:  fmt.Sprintf("%s is a symbolic link to %s, outside this worktree; nothing was written", path, real),
			Hint: fmt.Sprintf("orch setup writes only in this worktree, where git shows what it changed; remove the link (rm %s), then run orch setup again to create the file", path)}
	}
	if link == path {
		return &workflow.RuleError{Rule: "outside_worktree",
			Msg:  fmt.Sprintf("%s is a symbolic link to %s, outside this worktree; nothing was written", path, real),
			Hint: fmt.Sprintf("orch setup writes only in this worktree, where git shows what it changed; to give the repository a file of its own, replace the link by a copy (cp --remove-destination %s %s), then run orch setup again", real, path)}
	}
	return &workflow.RuleError{Rule: "outside_worktree",
		Msg:  fmt.Sprintf("%s is %s, outside this worktree (%s is a symbolic link); nothing was written", path, real, link),
		Hint: fmt.Sprintf("orch setup writes only in this worktree, where git shows what it changed; replace the link %s by a directory of the repository's own, then run orch setup again", link)}
}

func relTo(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil && inside(base, p) {
		return filepath.ToSlash(r)
	}
	return p
}
