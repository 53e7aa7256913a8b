package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/internal/trace"
	"github.com/orch-tool/orch/taskfile"
)

// Options configure Open.
type Options struct {
	Repo        *gitrepo.Repo // the repository, when the caller found it already
	Dir         string        // where to start looking for the repository
	StateBranch string        // branch name or full ref; default "orch"
	// LockTimeout bounds the wait for another orch process's lock
	// (default defaultLockTimeout).
	LockTimeout time.Duration
	// InMemoryCache reads the state cache into the heap instead of
	// mapping it, for a process that opens the store again and again
	// (board --watch): the store keeps its mapping for the life of the
	// process (see Close), and each open would add one.
	InMemoryCache bool
	// NoScan: the caller reads the branch and never reconciles the view
	// (completion, orch serve's pages), so the view is not scanned: Close
	// would otherwise wait, holding the lock, for a scan of every file.
	NoScan bool
}

// Open finds the repository and prepares the store. It takes no lock; the
// view scan starts at once in the background so that its stat calls overlap
// with waiting for the lock.
func Open(opts Options) (*Store, error) {
	repo := opts.Repo
	if repo == nil {
		var err error
		if repo, err = gitrepo.Discover(opts.Dir); err != nil {
			return nil, err
		}
	}
	ref := opts.StateBranch
	if ref == "" {
		ref = DefaultStateBranch
	}
	if !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	if !gitrepo.ValidRefName(ref) {
		return nil, fmt.Errorf("invalid state branch %q", opts.StateBranch)
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = defaultLockTimeout
	}
	st := &Store{
		Repo:        repo,
		Ref:         ref,
		objs:        gitrepo.NewObjectStore(repo.CommonDir),
		priv:        filepath.Join(repo.CommonDir, "orch"),
		lockTimeout: opts.LockTimeout,
		mapCache:    !opts.InMemoryCache,
		conflicts:   map[string][]taskfile.Conflict{},
		broken:      map[string]error{},
	}
	if owner := filepath.Join(st.priv, "ref-lock-owner"); repo.LockOwnerFile != owner {
		// Set once: orch run's goroutines open stores on one Repo, and
		// after the first open only read it.
		repo.LockOwnerFile = owner
	}
	if repo.MainWorkTree != "" {
		st.View = filepath.Join(repo.MainWorkTree, ViewDirName)
		if st.ViewErr = viewRootProblem(st.View); st.ViewErr != nil {
			st.View = ""
			st.note("%v", st.ViewErr)
		} else if !st.ownsView() {
			// One view, one state branch: another branch's files would be
			// committed here as hand edits. This branch works like a bare
			// repository (orch edit for hand edits).
			st.View, st.ViewOwner = "", st.viewOwner()
		} else if !opts.NoScan {
			st.scan = startScan(st.View)
		}
	}
	return st, nil
}

// ErrCheckedOut is returned when the state branch is checked out somewhere.
type ErrCheckedOut struct {
	Ref       string
	Worktrees []string
}

func (e *ErrCheckedOut) Error() string {
	return fmt.Sprintf("%s is checked out in %s; orch will not move a checked-out branch", e.Ref, strings.Join(e.Worktrees, ", "))
}

// viewRootProblem says why the view's path cannot hold the view: orch
// writes only inside the repository, so it follows no symlink there, and a
// file in the way is the person's.
func viewRootProblem(view string) error {
	fi, err := os.Lstat(view)
	switch {
	case err != nil:
		return nil // made when first needed
	case fi.Mode()&os.ModeSymlink != 0:
		target, _ := os.Readlink(view)
		return fmt.Errorf("%s is a symbolic link (to %s), not a directory: orch writes its view only inside the repository, so it works without one until the link is replaced by a directory (rm %s; the next orch command writes the view again)", ViewDirName, target, ViewDirName)
	case !fi.IsDir():
		return fmt.Errorf("%s is a file, not a directory: orch works without its view until the file is moved away (mv %s %s.saved; the next orch command writes the view again)", ViewDirName, ViewDirName, ViewDirName)
	}
	return nil
}

// viewOwner is the state branch the view belongs to: the one recorded in
// <common dir>/orch/view-owner, else the default branch if it exists.
func (st *Store) viewOwner() string {
	if b, err := privfile.Read(filepath.Join(st.priv, "view-owner")); err == nil {
		if o := strings.TrimSpace(string(b)); gitrepo.ValidRefName(o) {
			return o
		}
	}
	def := "refs/heads/" + DefaultStateBranch
	if h, err := st.Repo.ReadRef(def); err == nil && !h.IsZero() {
		return def
	}
	return ""
}

func (st *Store) ownsView() bool {
	o := st.viewOwner()
	return o == "" || o == st.Ref
}

// claimView records this state branch as the view's owner, the first time a
// branch uses the view.
func (st *Store) claimView() {
	if st.View == "" {
		return
	}
	p := filepath.Join(st.priv, "view-owner")
	if _, err := os.Stat(p); err == nil {
		return
	}
	_ = os.MkdirAll(st.priv, 0o777)
	_ = os.WriteFile(p, []byte(st.Ref+"\n"), 0o666)
}

// CachePath is the state cache file of the state branch, in PrivDir.
func (st *Store) CachePath() string {
	name := "state"
	if st.Ref != "refs/heads/"+DefaultStateBranch {
		name = "state-" + gitrepo.HashBlob([]byte(st.Ref)).String()[:12]
	}
	return filepath.Join(st.priv, name)
}

// PrivDir is <common dir>/orch.
func (st *Store) PrivDir() string { return st.priv }

// ReadPrivate reads the file name of the private state directory (a
// regular file only: see privfile).
func (st *Store) ReadPrivate(name string) ([]byte, error) {
	return privfile.Read(filepath.Join(st.priv, name))
}

// WritePrivate writes the file name of the private state directory.
func (st *Store) WritePrivate(name string, data []byte) error {
	if err := os.MkdirAll(st.priv, 0o777); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(st.priv, name), data, 0o666)
}

// startCache reads the state cache file as far as its directories (see
// statecache.Start), as Options asked; nil when there is no usable file.
func (st *Store) startCache() *statecache.Loading {
	return statecache.Start(st.CachePath(), st.Ref, st.mapCache)
}

// testHookBeforeLock, when set by a test, runs in Lock between reading the
// cache early and taking the lock (where another process may commit).
var testHookBeforeLock func()

// Lock takes the store lock and loads the state branch. Every command that
// may write runs between Lock and Close.
func (st *Store) Lock() error {
	trace.Phase("open")
	if st.cache == nil && st.scan != nil {
		// Read the cache's directories before waiting for the lock, so
		// that the view scan stats the branch's files meanwhile: with
		// many agents at once, not while this command holds the lock.
		// (If others commit in between, the files may have changed; the
		// reconcile then matches them by name.)
		if st.early = st.startCache(); st.early != nil {
			st.scan.expect(st.early.Dirs())
		}
	}
	if testHookBeforeLock != nil {
		testHookBeforeLock()
	}
	l, err := acquireLock(filepath.Join(st.priv, "lock"), st.lockTimeout)
	if err != nil {
		return err
	}
	if err := st.checkPrivateFiles(); err != nil {
		l.release()
		return err
	}
	st.lock = l
	st.Repo.RemoveLocksOfDeadOrch()
	trace.Phase("lock")
	if err := st.load(); err != nil {
		return err
	}
	trace.Phase("load cache")
	if st.snap != nil && !st.snap.Tip.IsZero() {
		st.claimView()
	}
	return nil
}

// Close saves the caches and releases the lock. It does not close the
// state cache: what the store handed out (summaries, snapshots, the paths
// of the reconcile's report) points into a mapped cache, and callers use it
// after Close (see statecache).
func (st *Store) Close() error {
	var err error
	if st.scan != nil {
		// The scan reads the names of the loaded cache, which is not to
		// outlive the store (a test may rewrite the file it maps).
		st.scan.wait()
	}
	if st.deferred && st.lock != nil {
		// Every command reconciles, also one that ended early.
		if _, serr := st.Settle(); serr != nil && !errors.Is(serr, ErrViewChanged) {
			err = serr
		}
	}
	st.checkWatched()
	if st.dirty && st.lock != nil {
		// The cache is rebuilt from the branch and the view when it is
		// missing or stale, so failing to save it is no failure of the
		// command: one that committed must not report an error (a retried
		// orch new would make the task twice).
		if serr := st.cache.Save(st.CachePath()); serr != nil {
			st.note("could not save the state cache (%v); the next command rebuilds it", serr)
		}
		st.dirty = false
		trace.Phase("save cache")
	}
	st.lock.release()
	st.lock = nil
	return err
}
