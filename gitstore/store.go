package gitstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/internal/trace"
	"github.com/orch-tool/orch/taskfile"
)

// DefaultStateBranch is the branch that holds orch's state.
const DefaultStateBranch = "orch"

// ViewDirName is the view directory in the main worktree.
const ViewDirName = ".orchestrator"

// Store is orch's state in one repository: the state branch, its view and
// the private state in <common dir>/orch/.
type Store struct {
	Repo *gitrepo.Repo
	Ref  string
	// View is the absolute path of the view directory ("" for a bare
	// repository).
	View string
	// ViewOwner is set when the view belongs to another state branch (this
	// one then has no view).
	ViewOwner string
	// AcceptRewind, set by orch doctor --accept-rewind, loads a branch that
	// no longer contains the tip orch saw last (see ErrMovedBackwards).
	AcceptRewind bool
	// ViewErr is set when the view's path is not a directory of the
	// repository (a symlink, a file): the store then works without a view
	// until it is moved away, and says so on every command.
	ViewErr error

	objs        *gitrepo.ObjectStore
	priv        string
	lockTimeout time.Duration
	mapCache    bool // see Options.InMemoryCache
	lock        *fileLock
	cache       *statecache.Cache
	snap        *Snapshot
	dirty       bool
	scan        *viewScan
	byID        map[string]*statecache.Record
	doneIDs     *statecache.ArchivedIDs // archived done tasks (ArchivedDone)
	byIDScans   int                     // lookups answered by a walk (see recByID)
	named       *bool                   // whether every task file is named after its id (see recByID)
	early       *statecache.Loading
	conflicts   map[string][]taskfile.Conflict
	broken      map[string]error
	held        map[string]error
	notes       []string
	watched     []watchedFile // displaced view files to read again (see placeView)
	hooks       viewHooks     // tests only
	movedTo     plumbing.Hash // where MoveTo put the branch (orch's own move, not a rewind)
	noLeases    bool          // tests only: view writes as on systems without leases

	// Progress, when set, hears how far a long reconcile (a cold view of
	// thousands of files) has got; it must not print when not a terminal.
	Progress func(what string, done, total int)

	// An optimistic command (see Defer) runs before the reconcile has
	// finished; Settle finishes it.
	deferred   bool
	deferPol   Policy
	settledRep *Reconciled
	pre        *prePending
}

// prePending is the first step of a deferred reconcile, done in the
// background: which paths the view scan shows to differ from the sync
// index or the branch at snap.
type prePending struct {
	done  chan struct{}
	snap  *Snapshot
	paths []string
}

// ErrViewChanged is an optimistic command finding, when the reconcile it
// deferred finished, that the view held something the command had to see
// first: a hand edit (now committed), a file that does not parse or is in
// conflict. Nothing was committed; the caller runs the command again.
var ErrViewChanged = errors.New("gitstore: the view changed under an optimistic command")

// Defer makes the reconcile optimistic: the command works on the branch as
// it is while the view is still being scanned, and the reconcile finishes
// at the first Settle, which Commit calls after writing its objects and
// before moving the ref. When the view holds no hand edit (the common
// case) this hides the scan of every view file behind the command's own work.
// When it does, Settle commits the hand edits as usual and reports
// ErrViewChanged, and the command is run again on the new state.
func (st *Store) Defer(pol Policy) {
	st.deferred, st.deferPol = true, pol
	if st.View == "" || st.scan == nil || st.snap.Tip.IsZero() {
		return
	}
	// Compare the scan with the sync index as soon as the scan is done,
	// beside the command's own work. Until Settle nothing writes the index
	// or the snapshot's directories (a commit builds new ones), so this
	// only reads what it shares.
	pre := &prePending{done: make(chan struct{}), snap: st.snap}
	st.pre = pre
	go func() {
		defer close(pre.done)
		pre.paths = st.pendingPathsAt(pre.snap, st.scan.wait())
		trace.Phase("  scan: compared")
	}()
}

// Settle finishes a deferred reconcile (a no-op otherwise) and returns its
// report. It reports ErrViewChanged when the reconcile moved the branch or
// found a broken or conflicted file.
func (st *Store) Settle() (*Reconciled, error) {
	if !st.deferred {
		return st.settledRep, nil
	}
	st.deferred = false
	before := st.snap.Tip
	rep, err := st.Reconcile(st.deferPol)
	st.settledRep = rep
	if err != nil {
		return rep, err
	}
	if st.snap.Tip != before || len(rep.Conflicts) > 0 || st.brokenOnBranch(rep.Broken) {
		return rep, ErrViewChanged
	}
	return rep, nil
}

// brokenOnBranch reports whether a broken view file is a copy of a branch
// file: a command that ran before the reconcile may have used that file,
// which it must now refuse to change. A broken file made by hand is no task
// yet, and no command's answer depends on it (Commit never writes over a
// view file the sync index does not know); redoing the command for it, on
// every command until it is fixed, cost a whole second run.
func (st *Store) brokenOnBranch(broken map[string]error) bool {
	for p := range broken {
		if _, ok := st.snap.Get(p); ok {
			return true
		}
	}
	return false
}

// Exists reports whether the state branch exists.
func (st *Store) Exists() bool { return !st.snap.Tip.IsZero() }

// Snapshot is the state branch at its current tip.
func (st *Store) Snapshot() *Snapshot { return st.snap }

// Notes returns what the store did on the user's behalf (files restored,
// hand edits committed), for the command to print on stderr.
func (st *Store) Notes() []string { return st.notes }

func (st *Store) note(format string, a ...any) {
	st.notes = append(st.notes, fmt.Sprintf(format, a...))
}

// SnapshotOf loads the tree of any commit. Before Lock (no state cache
// loaded, as orch doctor looks) it reads every tree from the objects.
func (st *Store) SnapshotOf(h plumbing.Hash) (*Snapshot, error) {
	var reuse map[string]*gitrepo.Tree
	if st.cache != nil {
		reuse = st.cache.Dirs
	}
	return loadSnapshot(st.objs, h, reuse)
}

// MergeBase returns a best common ancestor of a and b (ZeroHash if none).
func (st *Store) MergeBase(a, b plumbing.Hash) (plumbing.Hash, error) { return st.Repo.MergeBase(a, b) }
