package gitrepo

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/privfile"
)

// refLockTimeout is how long a ref update waits for a .lock file held by
// another writer, unless core.filesRefLockTimeout says otherwise
// (refLockWait). orch waits longer than git's own default because an
// agent's command should ride out a person's git gc. A variable
// only for the tests.
var refLockTimeout = 5 * time.Second

// refLockWait is how long this repository's ref updates wait for another
// writer's .lock file: core.filesRefLockTimeout in milliseconds when set,
// as git reads it (a negative value waits as long as it takes), else
// refLockTimeout.
func (r *Repo) refLockWait() time.Duration {
	v := strings.TrimSpace(r.GitConfig("core", "filesRefLockTimeout"))
	ms, err := strconv.Atoi(v)
	switch {
	case v == "" || err != nil:
		return refLockTimeout
	case ms < 0:
		return 100 * 365 * 24 * time.Hour
	}
	return time.Duration(ms) * time.Millisecond
}

// staleRefLockAge is the age after which a ref .lock file is taken to be
// left by a killed process. git holds ref locks for milliseconds; orch holds
// them only while holding its own flock, so a lock this old has no live
// owner. A variable only for the tests.
var staleRefLockAge = 30 * time.Second

// StaleRefLockAge is staleRefLockAge, for messages.
func StaleRefLockAge() time.Duration { return staleRefLockAge }

// ErrRefMoved means the ref no longer points where the caller built on.
var ErrRefMoved = errors.New("ref moved")

// ErrRefLocked means another process held the ref's .lock file too long.
type ErrRefLocked struct{ Path string }

func (e *ErrRefLocked) Error() string {
	return fmt.Sprintf("%s exists: another git process is updating the ref; if none is running, remove the file", e.Path)
}

// ValidRefName refuses names git would refuse (go-git's check of
// git check-ref-format's rules), and names outside refs/, which could
// escape the refs directory.
func ValidRefName(name string) bool {
	return strings.HasPrefix(name, "refs/") && plumbing.ReferenceName(name).Validate() == nil
}

// ReadRef returns the commit a ref points at: the loose file if there is
// one, else the packed-refs entry, else ZeroHash.
func (r *Repo) ReadRef(name string) (plumbing.Hash, error) {
	if !ValidRefName(name) {
		return plumbing.ZeroHash, fmt.Errorf("invalid ref name %q", name)
	}
	for i := 0; i < 8; i++ {
		b, err := os.ReadFile(filepath.Join(r.CommonDir, filepath.FromSlash(name)))
		if err == nil {
			s := strings.TrimSpace(string(b))
			if strings.HasPrefix(s, "ref: ") {
				name = strings.TrimSpace(strings.TrimPrefix(s, "ref: "))
				if !ValidRefName(name) {
					return plumbing.ZeroHash, fmt.Errorf("invalid symbolic ref target %q", name)
				}
				continue
			}
			if !plumbing.IsHash(s) {
				return plumbing.ZeroHash, fmt.Errorf("ref %s holds %q, not a commit id", name, s)
			}
			return plumbing.NewHash(s), nil
		}
		if !errors.Is(err, os.ErrNotExist) && !isNotDir(err) {
			return plumbing.ZeroHash, err
		}
		return r.packedRef(name)
	}
	return plumbing.ZeroHash, fmt.Errorf("ref %s: too many levels of symbolic refs", name)
}

func isNotDir(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not a directory")
}

func (r *Repo) packedRef(name string) (plumbing.Hash, error) {
	found := plumbing.ZeroHash
	err := r.eachPackedRef(func(ref string, h plumbing.Hash) bool {
		if ref == name {
			found = h
			return false
		}
		return true
	})
	return found, err
}

// eachPackedRef calls fn with each entry of packed-refs (none when the file
// is absent) until fn returns false.
func (r *Repo) eachPackedRef(fn func(name string, h plumbing.Hash) bool) error {
	f, err := os.Open(filepath.Join(r.CommonDir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 42 || line[0] == '#' || line[0] == '^' || !plumbing.IsHash(line[:40]) {
			continue
		}
		if !fn(line[41:], plumbing.NewHash(line[:40])) {
			return nil
		}
	}
	return sc.Err()
}

// refsUnder lists the refs whose names start with prefix (which ends in
// "/"): the packed-refs entries, then the loose refs, which win (a loose
// ref is newer than its packed entry). Symbolic refs are left out. It reads
// the files git does, as ReadRef does, without starting git (a claim reads
// the claim refs on its critical path; git for-each-ref is a process) and
// without listing every ref (go-git's storage lists them all, thousands of
// task branches, to give the few under one prefix).
func (r *Repo) refsUnder(prefix string) (map[string]plumbing.Hash, error) {
	refs := map[string]plumbing.Hash{}
	err := r.eachPackedRef(func(name string, h plumbing.Hash) bool {
		if strings.HasPrefix(name, prefix) {
			refs[name] = h
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	root := filepath.Join(r.CommonDir, filepath.FromSlash(prefix))
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := prefix + filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(string(b)); plumbing.IsHash(s) && ValidRefName(name) {
			refs[name] = plumbing.NewHash(s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// RefUpdate describes one compare-and-swap of a ref.
type RefUpdate struct {
	Name    string
	Old     plumbing.Hash // ZeroHash: the ref must not exist
	New     plumbing.Hash
	Who     string // "name <email>" for the reflog
	Message string // reflog message
	// SyncedLater: the update is made durable by the next ref update this
	// process makes without it (a claim creates the task's branch just
	// before it moves the state branch): that update's fsync commits the
	// filesystem's journal with this one in it, as the objects' one flush
	// does for them. Saves two fsyncs on the claim's critical path.
	SyncedLater bool
}

// UpdateRef moves a ref with git's lockfile protocol: create <ref>.lock with
// O_EXCL, check the current value equals Old (loose ref, else packed-refs),
// write and fsync the new value, rename over the ref. git and orch exclude
// each other through the .lock file, so neither can lose the other's update.
func (r *Repo) UpdateRef(u RefUpdate) error {
	if !ValidRefName(u.Name) {
		return fmt.Errorf("invalid ref name %q", u.Name)
	}
	refPath := filepath.Join(r.CommonDir, filepath.FromSlash(u.Name))
	lockPath := refPath + ".lock"
	if err := os.MkdirAll(filepath.Dir(refPath), 0o777); err != nil {
		return err
	}
	lock, err := r.createLockFile(lockPath)
	if err != nil {
		return err
	}
	// createLockFile noted us as the lock's owner. The note is cleared once
	// the lock is gone (deferred first, so it runs last), so a note names a
	// process that holds the lock, never one that held it.
	defer r.clearLockOwner(lockPath)
	committed := false
	defer func() {
		if !committed {
			lock.Close()
			os.Remove(lockPath)
		}
	}()
	cur, err := r.ReadRef(u.Name)
	if err != nil {
		return err
	}
	if cur != u.Old {
		return ErrRefMoved
	}
	if _, err := lock.WriteString(u.New.String() + "\n"); err != nil {
		return err
	}
	lazy := u.SyncedLater && !fullFsync
	if lazy {
		startWriteback(lock)
	} else if err := lock.Sync(); err != nil {
		return err
	}
	if err := lock.Close(); err != nil {
		return err
	}
	r.appendReflog(u)
	if err := os.Rename(lockPath, refPath); err != nil {
		return err
	}
	committed = true
	if !lazy {
		syncDir(filepath.Dir(refPath))
	}
	return nil
}

// ownerNote is the file naming the orch process that holds lockPath: one
// note per ref, so that updating one ref (a claim creates the task's branch)
// never overwrites the note that lets the next orch recognise a lock on
// another ref (the state branch) left by a killed orch.
func (r *Repo) ownerNote(lockPath string) string {
	if r.LockOwnerFile == "" {
		return ""
	}
	rel, err := filepath.Rel(r.CommonDir, strings.TrimSuffix(lockPath, ".lock"))
	if err != nil {
		rel = lockPath
	}
	return r.LockOwnerFile + "." + url.PathEscape(filepath.ToSlash(rel))
}

// noteLockOwner records which orch process holds (or is about to create)
// a ref .lock file. Only the holder of the orch flock writes notes, so when
// a .lock file outlives the process named in its note it was left by a
// killed orch and can be taken over at once, instead of after
// staleRefLockAge.
func (r *Repo) noteLockOwner(lockPath string) {
	if note := r.ownerNote(lockPath); note != "" && privfile.Check(note) == nil {
		_ = os.WriteFile(note, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o666)
	}
}

// clearLockOwner removes the note once orch's ref lock is released: a note
// left naming a finished orch would let the next one take over a lock that a
// live git process holds.
func (r *Repo) clearLockOwner(lockPath string) {
	if note := r.ownerNote(lockPath); note != "" {
		_ = os.Remove(note)
		// The one note of older orch versions (read by LockOwner too): no
		// orch holds a ref lock now but us, so it names none.
		_ = os.Remove(r.LockOwnerFile)
	}
}

// LockOwner returns the pid noted as the owner of the ref .lock file
// lockPath (see noteLockOwner), and when it was noted.
func (r *Repo) LockOwner(lockPath string) (pid int, noted time.Time, ok bool) {
	for _, note := range []string{r.ownerNote(lockPath), r.LockOwnerFile} {
		if note == "" {
			continue
		}
		b, err := privfile.Read(note)
		if err != nil {
			continue // the per-ref note, else the one an older orch wrote
		}
		fi, err := os.Stat(note)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			pid = -1
		}
		return pid, fi.ModTime(), true
	}
	return 0, time.Time{}, false
}

// LeftByDeadOrch reports whether the lock was left by a killed orch, so that
// it can be taken over now rather than after staleRefLockAge.
func (r *Repo) LeftByDeadOrch(lockPath string, lockInfo os.FileInfo) bool {
	// Also give a live git process holding a fresh lock time to finish.
	return r.deadOrchNote(lockPath, lockInfo) && time.Since(lockInfo.ModTime()) > time.Second
}

// deadOrchNote reports whether the note for lockPath names a dead orch and
// dates from the lock: the lock must date from the dead process's note
// (written just before it created the lock), or it may be a git process's
// lock that merely coincides.
func (r *Repo) deadOrchNote(lockPath string, lockInfo os.FileInfo) bool {
	pid, ok := r.noteOfLock(lockPath, lockInfo)
	if !ok {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err != nil && errors.Is(err, syscall.ESRCH) // not alive (and ours to judge)
}

// noteOfLock returns the pid of another process whose note dates from the
// lock that exists (within a second of it). Only the holder of the orch
// flock writes notes, so such a note names the orch that created that lock:
// one killed since (a zombie not yet reaped looks alive for a moment), or,
// rarely, one whose attempt coincided with a git process's lock.
func (r *Repo) noteOfLock(lockPath string, lockInfo os.FileInfo) (int, bool) {
	pid, noted, ok := r.LockOwner(lockPath)
	if !ok || pid <= 0 || pid == os.Getpid() {
		return 0, false
	}
	return pid, !lockInfo.ModTime().Before(noted.Add(-time.Second)) &&
		!lockInfo.ModTime().After(noted.Add(time.Second))
}

// createLockFile creates lockPath with O_EXCL, waiting for another process
// to release it, and notes this process as its owner.
//
// The note is written before every attempt to create the lock: a kill -9
// at any moment after the lock appears then leaves a note naming a dead
// process, so the next orch takes the lock over at once. (Noting after the
// lock appeared left a moment in which a killed orch left a lock with no
// note, which blocked every orch command for staleRefLockAge: found when
// another process's lock went away between looking and creating.) The one
// note left alone is one that dates from the lock that exists: it is what
// lets that lock be taken over once its process is gone.
func (r *Repo) createLockFile(lockPath string) (_ *os.File, err error) {
	deadline := time.Now().Add(r.refLockWait())
	delay := time.Millisecond
	noted := false
	defer func() {
		if err != nil && noted {
			r.clearLockOwner(lockPath) // ours, and we hold no lock
		}
	}()
	for {
		// A note that dates from the lock that exists is kept: it may name
		// the killed orch that left the lock.
		fi, serr := os.Lstat(lockPath)
		evidence := false
		if serr == nil {
			_, evidence = r.noteOfLock(lockPath, fi)
		}
		if !evidence {
			r.noteLockOwner(lockPath)
			noted = true
		}
		f, err := os.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrNotExist) && time.Now().Before(deadline) {
			// git pack-refs --prune removes ref directories it emptied
			// (refs/heads/task/): make it again, as git itself does.
			if merr := os.MkdirAll(filepath.Dir(lockPath), 0o777); merr == nil {
				continue
			}
		}
		if err == nil {
			if evidence {
				r.noteLockOwner(lockPath) // the dead orch's lock went meanwhile
				noted = true
			}
			return f, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if fi, serr := os.Stat(lockPath); serr == nil && (time.Since(fi.ModTime()) > staleRefLockAge || r.LeftByDeadOrch(lockPath, fi)) {
			// Left by a killed process: take it over. Only the holder of
			// the orch flock gets here, so two orch processes never race on it.
			os.Remove(lockPath)
			continue
		}
		if time.Now().After(deadline) {
			return nil, &ErrRefLocked{Path: lockPath}
		}
		time.Sleep(delay)
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

// appendReflog records the update the way git does, so `git reflog orch`
// shows orch's history and a lost update could always be found again.
func (r *Repo) appendReflog(u RefUpdate) {
	p := filepath.Join(r.CommonDir, "logs", filepath.FromSlash(u.Name))
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return
	}
	defer f.Close()
	who := u.Who
	if who == "" {
		who = "orch <orch@orch>"
	}
	_, off := time.Now().Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	msg := strings.ReplaceAll(u.Message, "\n", " ")
	fmt.Fprintf(f, "%s %s %s %d %c%02d%02d\t%s\n", u.Old, u.New, who, time.Now().Unix(), sign, off/3600, (off%3600)/60, msg)
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// CheckedOutIn returns the worktree paths whose HEAD is the ref: orch must
// not move a branch that someone has checked out, or their index and files
// would silently disagree with it.
func (r *Repo) CheckedOutIn(ref string) []string {
	var out []string
	check := func(gitDir, wt string) {
		b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
		if err == nil && strings.TrimSpace(string(b)) == "ref: "+ref {
			out = append(out, wt)
		}
	}
	if !r.bareConfig() {
		check(r.CommonDir, r.MainWorkTree)
	}
	ents, _ := os.ReadDir(filepath.Join(r.CommonDir, "worktrees"))
	for _, e := range ents {
		gd := filepath.Join(r.CommonDir, "worktrees", e.Name())
		wt := gd
		if b, err := os.ReadFile(filepath.Join(gd, "gitdir")); err == nil {
			wt = filepath.Dir(strings.TrimSpace(string(b)))
		}
		check(gd, wt)
	}
	return out
}

// HeadBranch returns the branch checked out in the current worktree, or "".
func (r *Repo) HeadBranch() string {
	b, err := os.ReadFile(filepath.Join(r.GitDir, "HEAD"))
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if !strings.HasPrefix(s, "ref: refs/heads/") {
		return ""
	}
	return strings.TrimPrefix(s, "ref: refs/heads/")
}

// lockOwnerNotes lists the ref-lock-owner notes: one per ref
// (<common>/orch/ref-lock-owner.<ref>), and the single one older orch
// versions wrote.
func (r *Repo) lockOwnerNotes() []string {
	if r.LockOwnerFile == "" {
		return nil
	}
	notes, _ := filepath.Glob(r.LockOwnerFile + ".*")
	if _, err := os.Stat(r.LockOwnerFile); err == nil {
		notes = append([]string{r.LockOwnerFile}, notes...)
	}
	return notes
}

// noteStale reads a note: the pid it names, and whether that process is
// gone (or the note holds no pid at all).
func noteStale(note string) (int, bool) {
	b, err := privfile.Read(note)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return -1, true
	}
	if pid == os.Getpid() {
		return pid, false
	}
	if err := syscall.Kill(pid, 0); err == nil || !errors.Is(err, syscall.ESRCH) {
		return pid, false
	}
	return pid, true
}

// RemoveLocksOfDeadOrch removes the ref .lock files that killed orch
// processes left, with their notes. The caller holds the exclusive orch
// lock, and only its holder writes notes, so every note there is left
// over; its lock is taken to be the dead process's by the rule UpdateRef
// uses to take one over (LeftByDeadOrch: the note dates from the lock and
// the lock is a second old). The state branch's lock is taken over by the
// next commit anyway, but a task branch's may not be wanted again by orch,
// and it blocks git on that branch. Listing the notes is one small readdir.
func (r *Repo) RemoveLocksOfDeadOrch() {
	prefix := r.LockOwnerFile + "."
	for _, note := range r.lockOwnerNotes() {
		ref, err := url.PathUnescape(strings.TrimPrefix(note, prefix))
		if !strings.HasPrefix(note, prefix) || err != nil || !ValidRefName(ref) {
			continue
		}
		lockPath := filepath.Join(r.CommonDir, filepath.FromSlash(ref)) + ".lock"
		fi, err := os.Lstat(lockPath)
		if err != nil {
			if _, stale := noteStale(note); stale && errors.Is(err, os.ErrNotExist) {
				_ = os.Remove(note) // killed after its lock was gone
			}
			continue
		}
		if r.LeftByDeadOrch(lockPath, fi) {
			if os.Remove(lockPath) == nil {
				_ = os.Remove(note)
			}
		}
	}
}

// StaleLockOwnerNote reports a ref-lock-owner note naming a process that is
// gone (or holding no pid at all): UpdateRef removes its note when it
// releases the ref lock, so such a note was left by a killed orch.
func (r *Repo) StaleLockOwnerNote() (path string, pid int, stale bool) {
	for _, note := range r.lockOwnerNotes() {
		if pid, stale := noteStale(note); stale {
			return note, pid, true
		}
	}
	return "", 0, false
}

// RemoveStaleLockOwnerNote removes every note that is still stale.
func (r *Repo) RemoveStaleLockOwnerNote() error {
	for _, note := range r.lockOwnerNotes() {
		if _, stale := noteStale(note); stale {
			if err := os.Remove(note); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// LastReflogCommit is the commit the reflog of ref last recorded (ZeroHash
// if none): where a ref whose file was damaged pointed.
func (r *Repo) LastReflogCommit(ref string) plumbing.Hash {
	if !ValidRefName(ref) {
		return plumbing.ZeroHash
	}
	b, err := os.ReadFile(filepath.Join(r.CommonDir, "logs", filepath.FromSlash(ref)))
	if err != nil {
		return plumbing.ZeroHash
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) >= 2 && plumbing.IsHash(f[1]) {
			if h := plumbing.NewHash(f[1]); !h.IsZero() {
				return h
			}
		}
	}
	return plumbing.ZeroHash
}
