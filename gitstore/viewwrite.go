package gitstore

// Writing the view without losing a save that races orch.
//
// A command decides what a view file holds (from the sync index or by
// reading it) and later puts the branch's version in its place. A person's
// save that lands in between must not be lost: an append goes into the
// inode being replaced, an editor's rename puts a new inode at the path,
// an editor that keeps a backup renames the file away for a moment, and
// `cat >> file` keeps the file open for as long as the person types.
//
// So a view file is replaced only through placeView (and removed only
// through dropView), which
//
//  1. opens the file it is about to displace and takes a read lease on it
//     (F_SETLEASE): granted only while no process has the file open for
//     writing, and broken by any process that opens it for writing later.
//     The file holds what the command expects (its stat data matches the
//     sync index, or its content is read);
//  2. swaps the new file in with one atomic exchange (renameat2
//     RENAME_EXCHANGE on Linux, renamex_np RENAME_SWAP on macOS), so that
//     whatever was at the path a microsecond ago survives, under the temp
//     name;
//  3. checks what was displaced: the inode of step 1, its lease unbroken
//     (so nothing can have written to it since step 1);
//  4. when anything differs, swaps back: the person's file is in the view
//     again, the sync index keeps the version it was based on, and the next
//     reconcile merges it as any hand edit (W ≠ B, R ≠ B).
//
// orch's own new file is leased too, from before the exchange until its
// stat data is recorded: a write that reaches it in that moment breaks the
// lease, and the index then records nothing that would hide the write.
// What can still race is a second save landing on orch's new file in the
// microseconds between steps 2 and 4: that file is kept in
// .orchestrator/recovered/ and every command names it until the person
// deletes it (see Recovered).
//
// Where leases are not available (other systems, a file of another user),
// steps 1 and 3 compare contents instead, and the displaced file is kept
// open and read once more before the command releases its lock; a change
// found then goes to recovered/ too.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
)

// recoveredDir is the view directory (not mirrored) where orch keeps the
// text of a save it could neither leave in place nor merge.
const recoveredDir = "recovered"

// openRegular opens path for reading without following a symlink or
// blocking on a FIFO, refuses anything but a regular file, and returns its
// stat data.
func openRegular(path string) (*os.File, *unix.Stat_t, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	var st unix.Stat_t
	err = unix.Fstat(int(f.Fd()), &st)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, &st, nil
}

// readAllAt reads a whole open file from its start (a file orch reads is
// at most taskfile.MaxFileSize; a larger one is never "unchanged").
func readAllAt(f *os.File) ([]byte, error) {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, taskfile.MaxFileSize+1))
	if err == nil && len(data) > taskfile.MaxFileSize {
		err = taskfile.ErrTooLarge
	}
	return data, err
}

// heldFile is an open view file, held still where the system allows: a
// read lease is granted only while no process has the file open for
// writing, and any process that opens it for writing afterwards breaks it
// (and waits until orch lets go). While the lease holds, the file's
// content cannot have changed.
type heldFile struct {
	f      *os.File
	stat   *unix.Stat_t
	leased bool
}

// errBeingWritten: another process has the file open for writing.
var errBeingWritten = errors.New("open for writing by another program")

// holdFile opens path (see openRegular) and takes a read lease on it
// (unless leases are off: a test of the path other systems take). A writer
// seen for less than holdWait is waited out: a process that forks copies
// every open descriptor into the child until it execs, so orch's own temp
// file, just written, can look open for writing for that moment.
func (st *Store) holdFile(path string) (*heldFile, error) {
	f, fs, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	h := &heldFile{f: f, stat: fs}
	if st.noLeases {
		return h, nil
	}
	for waited := time.Duration(0); ; waited += time.Millisecond {
		switch err := setLease(f, unix.F_RDLCK); {
		case err == nil:
			// The stat data from before a wait may predate the writer's
			// last write: take it again, under the lease.
			if err := unix.Fstat(int(f.Fd()), h.stat); err != nil {
				h.close()
				return nil, err
			}
			h.leased = true
			return h, nil
		case !errors.Is(err, unix.EAGAIN):
			return h, nil // no leases here: compared by content instead
		case waited >= holdWait:
			f.Close()
			return nil, errBeingWritten
		}
		time.Sleep(time.Millisecond)
	}
}

// holdWait bounds how long holdFile waits for a writer to go.
const holdWait = 20 * time.Millisecond

// still reports whether nothing has opened the file for writing since it
// was held (false when there is no lease to tell).
func (h *heldFile) still() bool {
	if !h.leased {
		return false
	}
	l, err := getLease(h.f)
	return err == nil && l == unix.F_RDLCK
}

func (h *heldFile) close() {
	if h == nil {
		return
	}
	if h.leased {
		_ = setLease(h.f, unix.F_UNLCK)
	}
	h.f.Close()
}

// contentIs reports whether an open file holds blob want, by reading it.
func contentIs(f *os.File, want plumbing.Hash) bool {
	data, err := readAllAt(f)
	return err == nil && gitrepo.HashBlob(data) == want
}

// unchanged reports whether the file displaced to path (opened as disp) is
// h's file as it was when h was taken, holding want: by its lease where it
// has one, else by reading it (and then it must be read again before the
// command ends: see watchDisplaced).
func (h *heldFile) unchanged(disp *os.File, dispStat *unix.Stat_t, want plumbing.Hash) (ok, watch bool) {
	if h == nil || !sameFile(dispStat, h.stat) {
		return false, false
	}
	if h.leased {
		return h.still(), false
	}
	return contentIs(disp, want), true
}

func sameFile(a, b *unix.Stat_t) bool {
	return a != nil && b != nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// viewHooks let a test act at the moments a save can race placeView and
// dropView: with the file held and checked (held), right after the exchange
// (exchanged), and with orch's file in place before its stat data is
// recorded (placed). Each gets the view file's path.
type viewHooks struct{ held, exchanged, placed func(full string) }

func (h viewHooks) call(fn func(string), full string) {
	if fn != nil {
		fn(full)
	}
}

// watchedFile is a file orch displaced from the view whose writers could
// not be checked: it is read again before the lock is released.
type watchedFile struct {
	f    *os.File
	path string // the branch path it was displaced from
	want plumbing.Hash
}

// placeView puts data (blob) at view path p in place of the file holding
// expect (zero: no file). It reports whether the view now holds data. When
// it does not, the view keeps what the person left there, and the sync
// index records expect as the version that file is based on, with stat data
// that never matches, so that the next reconcile reads and merges it.
func (st *Store) placeView(p string, data []byte, blob, expect plumbing.Hash) bool {
	if st.View == "" || !Mirrored(p) {
		return false
	}
	full := viewPath(st.View, p)
	dir := filepath.Dir(full)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		st.note("cannot write the view: %v", err)
		return false
	}
	if !st.viewDirOK(p) {
		return false
	}
	tmp, err := st.writeTemp(dir, data)
	if err != nil {
		st.note("cannot write %s: %v", st.rel(p), err)
		return false
	}
	ours, err := st.holdFile(tmp)
	if errors.Is(err, errBeingWritten) {
		// Still copied into a child that has not exec'd: held without a
		// lease, compared by content.
		var f *os.File
		var fs *unix.Stat_t
		if f, fs, err = openRegular(tmp); err == nil {
			ours = &heldFile{f: f, stat: fs}
		}
	}
	if err != nil {
		os.Remove(tmp)
		st.note("cannot write %s: %v", st.rel(p), err)
		return false
	}
	defer ours.close()
	placed, gone := false, expect.IsZero()
	if !gone {
		placed, gone = st.exchangeView(p, full, tmp, blob, expect, ours)
		if gone {
			// Not there since the command looked: deleted by hand (the
			// reconcile restores it anyway), or renamed away by an editor
			// that keeps a backup and is about to write a new file (which
			// it then writes over ours).
			expect = plumbing.ZeroHash
		}
	}
	if gone {
		err := renameNoReplace(tmp, full)
		placed = err == nil
		if !placed {
			// Made meanwhile: the person's file stays; tmp still holds ours.
			st.settleDisplaced(p, tmp, blob, plumbing.ZeroHash, ours, nil)
			if !errors.Is(err, os.ErrExist) {
				st.note("cannot write %s: %v", st.rel(p), err)
			}
		}
	}
	if !placed {
		st.unsettled(p, expect)
		return false
	}
	st.hooks.call(st.hooks.placed, full)
	st.recordOurs(p, full, blob, ours)
	return true
}

// viewDirOK reports whether the directory of view path p is a real
// directory of the view, not a symlink to somewhere else: orch never writes
// or removes files outside the view (the scan does not follow such links
// either). It notes why when it is not.
func (st *Store) viewDirOK(p string) bool {
	d := filepath.Dir(filepath.FromSlash(p))
	if d == "." {
		return true
	}
	fi, err := os.Lstat(filepath.Join(st.View, d))
	if err == nil && fi.IsDir() {
		return true
	}
	st.note("cannot write %s: %s is not a directory (a symlink?); orch writes only inside the view", st.rel(p), st.rel(filepath.ToSlash(d)))
	return false
}

// viewWriteAge is how far in the past orch dates the view files it writes:
// more than the coarsest timestamp tick isRacy allows for.
const viewWriteAge = 3 * time.Second

// writeTemp writes data to a new temp file in dir, dated viewWriteAge in
// the past, and returns its path. It is written as .orch-new-* and renamed
// .orch-tmp-* once whole: a leftover .orch-new-* is a write a killed orch
// never finished (removed by the next command), a leftover .orch-tmp-*
// either orch's whole new file or a file it displaced (see
// removeLeftoverTemps).
func (st *Store) writeTemp(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, viewNewPrefix)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	_ = os.Chmod(f.Name(), 0o644)
	// Dated in the past so that its stat data can be trusted at once: a
	// person's later write, even within the same clock tick, stamps the
	// present and so differs from what the index holds. Without it every
	// file orch writes is racy (see isRacy) and costs the next command a
	// read and its index entry a rewrite.
	now := time.Now()
	_ = os.Chtimes(f.Name(), now, now.Add(-viewWriteAge))
	whole := filepath.Join(dir, viewTempPrefix+strings.TrimPrefix(filepath.Base(f.Name()), viewNewPrefix))
	if err := renameNoReplace(f.Name(), whole); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return whole, nil
}

// exchangeView is placeView's step for a path that should hold expect. It
// reports whether ours is in place; gone when there is no file at all
// (then nothing moved, and tmp still holds ours). Otherwise it has dealt
// with tmp.
func (st *Store) exchangeView(p, full, tmp string, blob, expect plumbing.Hash, ours *heldFile) (placed, gone bool) {
	cur, err := st.holdFile(full)
	if errors.Is(err, os.ErrNotExist) {
		return false, true
	}
	defer cur.close()
	if err == nil {
		if st.viewHolds(p, cur, expect) {
			st.hooks.call(st.hooks.held, full)
			err = exchangeFiles(tmp, full)
			if errors.Is(err, os.ErrNotExist) {
				return false, true
			}
		} else {
			err = errChanged // the next reconcile merges it
		}
	}
	if err != nil {
		// Not exchanged (or, emulated, a file made meanwhile stays and
		// tmp holds what it displaced).
		switch {
		case errors.Is(err, errBeingWritten):
			st.note("%s is open for writing in another program: orch updates it once it is closed", st.rel(p))
		case !errors.Is(err, errChanged) && !errors.Is(err, os.ErrExist):
			st.note("cannot write %s: %v", st.rel(p), err)
		}
		st.settleDisplaced(p, tmp, blob, expect, ours, cur)
		return false, false
	}
	// tmp now names what was at the path.
	st.hooks.call(st.hooks.exchanged, full)
	if disp, dispStat, err := openRegular(tmp); err == nil {
		if ok, watch := cur.unchanged(disp, dispStat, expect); ok {
			os.Remove(tmp)
			if watch {
				st.watchDisplaced(disp, p, expect)
			} else {
				disp.Close()
			}
			return true, false
		}
		disp.Close()
	}
	// Something else was displaced: a save that landed since orch looked,
	// or a writer at work on the old file. Put it back.
	if err := exchangeFiles(tmp, full); err != nil && !errors.Is(err, os.ErrExist) {
		st.keepRecovered(p, tmp)
		return false, false
	}
	cur.close() // a writer waiting on the lease goes on, at the view path
	st.settleDisplaced(p, tmp, blob, expect, ours, nil)
	return false, false
}

// viewHolds reports whether the held view file at p holds expect: by the
// sync index's stat data when the file is leased (as the reconcile trusts
// it), else by reading it.
func (st *Store) viewHolds(p string, cur *heldFile, expect plumbing.Hash) bool {
	if ie := st.cache.Index.Get(p); cur.leased && ie != nil && ie.Blob == expect && ie.ConflictW.IsZero() && statMatches(ie, statOf(cur.stat)) {
		return true
	}
	return contentIs(cur.f, expect)
}

// errChanged: the view file no longer holds what the command expected.
var errChanged = errors.New("changed in the view")

// settleDisplaced deals with the file at tmp once the person's file is at
// the view path: normally orch's own new file (ours, holding blob), or the
// one the person's replaced (old, holding expect), unchanged, which is
// removed; anything else is a save that landed in between, kept in
// recovered/.
func (st *Store) settleDisplaced(p, tmp string, blob, expect plumbing.Hash, ours, old *heldFile) {
	f, fs, err := openRegular(tmp)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil {
		for _, c := range []struct {
			h    *heldFile
			want plumbing.Hash
		}{{ours, blob}, {old, expect}} {
			if ok, watch := c.h.unchanged(f, fs, c.want); ok {
				os.Remove(tmp)
				if watch {
					st.watchDisplaced(f, p, c.want)
				} else {
					f.Close()
				}
				return
			}
		}
		f.Close()
	}
	st.keepRecovered(p, tmp)
}

// recordOurs records in the sync index that the view holds blob at p, with
// the stat data of orch's own file: its size, mtime and inode as written,
// and the ctime the rename gave it. The stat data of whatever is at the
// path would record a person's save that landed since as orch's version,
// never to be committed; and a write into orch's file since the rename
// (its lease broken) must not be hidden either.
func (st *Store) recordOurs(p, full string, blob plumbing.Hash, ours *heldFile) {
	s := statOf(ours.stat)
	var now unix.Stat_t
	cur, ok := lstatPath(full)
	switch {
	case unix.Fstat(int(ours.f.Fd()), &now) != nil, !ok, cur.ino != s.ino,
		ours.leased && !ours.still(),
		!ours.leased && (now.Size != s.size || now.Mtim.Sec*1e9+now.Mtim.Nsec != s.mtime):
		st.unsettled(p, blob) // the person's file is read next time
		return
	}
	s.ctime = now.Ctim.Sec*1e9 + now.Ctim.Nsec
	st.record(p, blob, s)
}

// unsettled records that the view file at p is based on blob base (zero:
// none) but holds something orch has not read: its stat data never
// matches, so the next reconcile reads it.
func (st *Store) unsettled(p string, base plumbing.Hash) {
	ie := st.cache.Index.Get(p)
	if ie == nil {
		if base.IsZero() {
			return // a file orch never wrote: the next reconcile finds it
		}
		ie = &statecache.IndexEntry{}
		st.cache.PutIndex(p, ie)
	}
	ie.MarkChanged()
	if !base.IsZero() {
		if !ie.Blob.IsZero() && ie.Blob != base {
			ie.Prev = append([]plumbing.Hash{ie.Blob}, ie.Prev...)
			if len(ie.Prev) > 4 {
				ie.Prev = ie.Prev[:4]
			}
		}
		ie.Blob = base
	}
	ie.Size, ie.Mtime, ie.Ctime, ie.Ino = -1, 0, 0, 0
	st.dirty = true
}

// dropView removes view path p if it still holds expect, without losing a
// save that lands meanwhile. It reports whether the file is gone.
func (st *Store) dropView(p string, expect plumbing.Hash) bool {
	if st.View == "" || !Mirrored(p) || !st.viewDirOK(p) {
		return false
	}
	full := viewPath(st.View, p)
	cur, err := st.holdFile(full)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer cur.close()
	if !st.viewHolds(p, cur, expect) {
		return false // changed by hand: keep it; the reconcile reports it
	}
	st.hooks.call(st.hooks.held, full)
	aside := filepath.Join(filepath.Dir(full), fmt.Sprintf("%s%d-%d", viewTempPrefix, os.Getpid(), time.Now().UnixNano()))
	if err := renameNoReplace(full, aside); err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	if disp, dispStat, err := openRegular(aside); err == nil {
		if ok, watch := cur.unchanged(disp, dispStat, expect); ok {
			os.Remove(aside)
			if watch {
				st.watchDisplaced(disp, p, expect)
			} else {
				disp.Close()
			}
			return true
		}
		disp.Close()
	}
	// A save landed: put it back, unless a new file is there already.
	if err := renameNoReplace(aside, full); err != nil {
		st.keepRecovered(p, aside)
	}
	st.unsettled(p, expect)
	return false
}

// watchDisplaced keeps a displaced file open until the command ends (see
// checkWatched); it takes over f.
func (st *Store) watchDisplaced(f *os.File, p string, want plumbing.Hash) {
	st.watched = append(st.watched, watchedFile{f: f, path: p, want: want})
}

// checkWatched reads each displaced file whose writers could not be
// checked once more: a write that reached it after orch looked is kept in
// recovered/.
func (st *Store) checkWatched() {
	for _, w := range st.watched {
		data, err := readAllAt(w.f)
		w.f.Close()
		if err != nil || gitrepo.HashBlob(data) == w.want {
			continue
		}
		if name, err := st.recoveredName(w.path); err == nil {
			if os.WriteFile(name, data, 0o644) == nil {
				st.noteRecovered(w.path, name)
			}
		}
	}
	st.watched = nil
}

// recoveredName is a new path in recovered/ for a save of branch path p.
func (st *Store) recoveredName(p string) (string, error) {
	dir := filepath.Join(st.View, recoveredDir)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
	return filepath.Join(dir, stamp+"-"+strings.ReplaceAll(p, "/", "-")), nil
}

// keepRecovered moves the file at tmp (a save orch displaced and could not
// put back) into recovered/, or leaves it where it is if it cannot, and
// says where it is.
func (st *Store) keepRecovered(p, tmp string) {
	name, err := st.recoveredName(p)
	if err == nil {
		err = renameNoReplace(tmp, name)
	}
	if err != nil {
		name = tmp
	}
	st.noteRecovered(p, name)
}

func (st *Store) noteRecovered(p, name string) {
	rel, err := filepath.Rel(filepath.Dir(st.View), name)
	if err != nil {
		rel = name
	}
	st.note("%s: a save raced orch; its text is kept in %s: copy what you need into the task file, then delete it", st.rel(p), filepath.ToSlash(rel))
}

// Recovered lists the files in the view's recovered/ directory (paths from
// the repository's top): saves that raced orch, kept until the person has
// taken what they need and deleted them.
func (st *Store) Recovered() []string {
	if st.View == "" {
		return nil
	}
	ents, err := os.ReadDir(filepath.Join(st.View, recoveredDir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, filepath.ToSlash(filepath.Join(ViewDirName, recoveredDir, e.Name())))
	}
	sort.Strings(out)
	return out
}

// printableName is a file name as orch prints it: quoted, with escapes,
// when it holds control characters or is not UTF-8, so that a hostile name
// cannot break a line or reach a terminal raw.
func printableName(name string) string {
	if !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) >= 0 {
		return strconv.Quote(name)
	}
	return name
}

// IgnoredFile is a file in the view's task directory that orch does not
// take as a task.
type IgnoredFile struct {
	Path string // from the repository's top
	Why  string
}

// IgnoredViewFiles lists what is in the view's tasks/ directory but is not
// a task file orch reads: symbolic links, FIFOs and other special files,
// directories, and names that are not task file names. Editors' backups
// and swap files (dot files, names ending in ~ or .swp) are left out.
func (st *Store) IgnoredViewFiles() []IgnoredFile {
	if st.View == "" {
		return nil
	}
	ents, err := os.ReadDir(filepath.Join(st.View, TasksDir))
	if err != nil {
		return nil
	}
	var out []IgnoredFile
	for _, e := range ents {
		name := e.Name()
		if ignoredName(name) {
			continue
		}
		why := ""
		switch t := e.Type(); {
		case t&os.ModeSymlink != 0:
			why = "a symbolic link: orch takes only regular files as tasks (it follows no link out of the view); it is not on the state branch"
		case t.IsDir():
			why = "a directory: tasks are the .md files directly in tasks/; it is not on the state branch"
		case !t.IsRegular():
			why = "not a regular file (a FIFO or device): orch does not read it; it is not on the state branch"
		case !mirroredName(TasksDir, name):
			why = "not a task file name (tasks/<id>-<slug>.md, lower-case .md, no control characters): orch does not read it; it is not on the state branch"
		}
		if why != "" {
			out = append(out, IgnoredFile{Path: ViewDirName + "/" + TasksDir + "/" + printableName(name), Why: why})
		}
	}
	return out
}
