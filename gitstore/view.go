package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
)

// BrokenFile returns why the view's copy of path cannot be committed, if it
// cannot. Commands refuse to change such a task until it is fixed.
func (st *Store) BrokenFile(path string) error { return st.broken[path] }

// Conflicted returns the conflicts of path, if its view copy and the branch
// both changed it in ways that could not be merged.
func (st *Store) Conflicted(path string) []taskfile.Conflict { return st.conflicts[path] }

// Held lists the hand edits kept out of the branch for now (Policy.Hold),
// with why.
func (st *Store) Held() map[string]error { return st.held }

// ViewProblems lists every broken or conflicted view file.
func (st *Store) ViewProblems() (map[string]error, map[string][]taskfile.Conflict) {
	return st.broken, st.conflicts
}

func (st *Store) rel(p string) string {
	return filepath.ToSlash(filepath.Join(ViewDirName, p))
}

// MakeViewDir makes the directory dir (a branch path) in the view.
func (st *Store) MakeViewDir(dir string) error {
	if st.View == "" {
		return nil
	}
	return os.MkdirAll(viewPath(st.View, dir), 0o777)
}

// ExcludeView adds the view to info/exclude, so that it never shows in
// `git status` of any worktree, and reports whether it added it.
func (st *Store) ExcludeView() (bool, error) {
	return st.Repo.EnsureExclude("/"+ViewDirName+"/", "orch's view of its state branch (see orch help)")
}

// ReadViewFile reads the view's copy of branch path p, refusing a file
// larger than taskfile.MaxFileSize (named from the view down, as every
// message names it).
func (st *Store) ReadViewFile(p string) ([]byte, error) {
	f, _, err := openRegular(viewPath(st.View, p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return st.readOpenView(p, f)
}

func (st *Store) readOpenView(p string, f *os.File) ([]byte, error) {
	data, err := readAllAt(f)
	if errors.Is(err, taskfile.ErrTooLarge) {
		return nil, &taskfile.ParseError{Path: st.rel(p), Msg: fmt.Sprintf("file is larger than %d bytes (%d MiB), the limit for a file orch reads", taskfile.MaxFileSize, taskfile.MaxFileSize>>20), Err: taskfile.ErrTooLarge}
	}
	return data, err
}

// savingWait bounds how long a command waits for a program that is writing
// a task file in place (truncate, then write) to finish, when what it has
// written so far does not parse.
const savingWait = 250 * time.Millisecond

// readSettled reads view file p for the reconcile, with its blob id and
// the stat data it had just before the read. A task file that does not
// parse while another program has it open for writing is most likely a
// save in progress (an editor that truncates and rewrites): it is read
// again once the writer is done, or savingWait has passed. A file that
// holds one of the blobs known (the branch's, the one last synced) is no
// save in progress and is not parsed: with no sync index (the first
// command after a clone) the reconcile reads every view file, and parsing
// each was a large part of that command.
func (st *Store) readSettled(p string, known ...plumbing.Hash) ([]byte, plumbing.Hash, fileStat, error) {
	f, fi, err := openRegular(viewPath(st.View, p))
	if err != nil {
		return nil, plumbing.ZeroHash, fileStat{}, err
	}
	defer f.Close()
	for waited := time.Duration(0); ; waited += 2 * time.Millisecond {
		ws := statOf(fi)
		data, err := st.readOpenView(p, f)
		if err != nil {
			return nil, plumbing.ZeroHash, ws, err
		}
		h := gitrepo.HashBlob(data)
		if !isTaskPath(p) || waited >= savingWait || slices.Contains(known, h) {
			return data, h, ws, nil
		}
		if _, perr := taskfile.Parse(st.rel(p), data); perr == nil {
			return data, h, ws, nil
		}
		if attached, _ := writerAttached(f); !attached {
			// No writer now; one may have finished since the read.
			if again, err := st.readOpenView(p, f); err != nil || bytes.Equal(again, data) {
				return data, h, ws, err
			}
		} else {
			time.Sleep(2 * time.Millisecond)
		}
		if err := unix.Fstat(int(f.Fd()), fi); err != nil {
			return nil, plumbing.ZeroHash, fileStat{}, err
		}
	}
}

// record notes that the view file at p holds blob h with stat s.
func (st *Store) record(p string, h plumbing.Hash, s fileStat) {
	ie := st.cache.Index.Get(p)
	if ie == nil {
		ie = &statecache.IndexEntry{}
		st.cache.PutIndex(p, ie)
	}
	if !ie.Blob.IsZero() && ie.Blob != h {
		ie.Prev = append([]plumbing.Hash{ie.Blob}, ie.Prev...)
		if len(ie.Prev) > 4 {
			ie.Prev = ie.Prev[:4]
		}
	}
	ie.MarkChanged()
	ie.Blob = h
	ie.Size, ie.Mtime, ie.Ctime, ie.Ino = s.size, s.mtime, s.ctime, s.ino
	ie.Racy = isRacy(s)
	ie.ConflictW, ie.ConflictR = plumbing.ZeroHash, plumbing.ZeroHash
	st.dirty = true
}

// pullToView writes the branch's blob r of p into the view, in place of
// the file holding expect (zero: none), and reports whether it did.
func (st *Store) pullToView(p string, r, expect plumbing.Hash) (bool, error) {
	data, err := st.objs.Read(plumbing.BlobObject, r)
	if err != nil {
		return false, err
	}
	return st.placeView(p, data, r, expect), nil
}

// writeView writes a committed file into the view, unless the person changed
// the view file since orch last looked (then the next reconcile merges).
func (st *Store) writeView(p string, data []byte, blob plumbing.Hash) {
	if st.View == "" || !Mirrored(p) {
		return
	}
	ie := st.cache.Index.Get(p)
	if ie != nil && !ie.ConflictW.IsZero() {
		return // in conflict: the person's file stays until they resolve it
	}
	expect := plumbing.ZeroHash
	if ie != nil {
		expect = ie.Blob
	}
	if ws, ok := lstatPath(viewPath(st.View, p)); ok && (ie == nil || !statMatches(ie, ws)) {
		cur, err := st.ReadViewFile(p)
		if err != nil || gitrepo.HashBlob(cur) != expect {
			if err == nil && gitrepo.HashBlob(cur) == blob {
				st.record(p, blob, ws)
			}
			return
		}
	}
	st.placeView(p, data, blob, expect)
}

// placeEdited puts the result of committing a person's edit (wdata, blob
// w) into the view, when orch changed it (an id added, a merge). If the
// person saved again meanwhile, their file stays, based on wdata, which is
// kept as an object so that the next reconcile can merge from it.
func (st *Store) placeEdited(p string, result []byte, wdata []byte, w plumbing.Hash) error {
	blob, _ := st.snap.Get(p)
	if st.placeView(p, result, blob, w) {
		return nil
	}
	_, err := st.objs.Write(plumbing.BlobObject, wdata)
	return err
}

// removeView removes a file the branch removed from the view, unless the
// person changed it (the reconcile then reports it).
func (st *Store) removeView(p string) {
	if st.View == "" || !Mirrored(p) || !st.viewDirOK(p) {
		return
	}
	ie := st.cache.Index.Get(p)
	if _, ok := lstatPath(viewPath(st.View, p)); ok {
		if ie == nil || !ie.ConflictW.IsZero() || !st.dropView(p, ie.Blob) {
			return
		}
	}
	st.cache.DropIndex(p)
	st.dirty = true
}

func isTaskPath(p string) bool {
	return strings.HasPrefix(p, TasksDir+"/") && strings.HasSuffix(p, ".md")
}
