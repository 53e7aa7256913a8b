package gitstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/internal/trace"
	"github.com/orch-tool/orch/taskfile"
)

// DefaultStateBranch is the branch that holds orch's state.
const DefaultStateBranch = "orch"

// ViewDirName is the view directory in the main worktree.
const ViewDirName = ".orchestrator"

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
	byIDScans   int   // lookups answered by a walk (see recByID)
	named       *bool // whether every task file is named after its id (see recByID)
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
// case) this hides the scan of 10,000 files behind the command's own work.
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

// ErrCheckedOut is returned when the state branch is checked out somewhere.
type ErrCheckedOut struct {
	Ref       string
	Worktrees []string
}

func (e *ErrCheckedOut) Error() string {
	return fmt.Sprintf("%s is checked out in %s; orch will not move a checked-out branch", e.Ref, strings.Join(e.Worktrees, ", "))
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
	repo.LockOwnerFile = filepath.Join(st.priv, "ref-lock-owner")
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

func (st *Store) cachePath() string {
	name := "state"
	if st.Ref != "refs/heads/"+DefaultStateBranch {
		name = "state-" + gitrepo.HashBlob([]byte(st.Ref)).String()[:12]
	}
	return filepath.Join(st.priv, name)
}

// PrivDir is <common dir>/orch.
func (st *Store) PrivDir() string { return st.priv }

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
		if st.early = statecache.Start(st.cachePath(), st.Ref, st.mapCache); st.early != nil {
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
		if serr := st.cache.Save(st.cachePath()); serr != nil {
			st.note("could not save the state cache (%v); the next command rebuilds it", serr)
		}
		st.dirty = false
		trace.Phase("save cache")
	}
	st.lock.release()
	st.lock = nil
	return err
}

func (st *Store) load() error {
	if st.cache == nil {
		if l := st.early; l != nil && l.Current() {
			st.cache = l.Finish()
		} else {
			// Changed while we waited (the scan then stats the files it
			// was handed, and they are matched by name), or not read early.
			st.cache = statecache.Load(st.cachePath(), st.Ref, st.mapCache)
		}
		st.early = nil
	}
	tip, err := st.Repo.ReadRef(st.Ref)
	if err != nil {
		return err
	}
	// History only moves forward: a branch that no longer contains the tip
	// orch saw last was rewound (or rewritten) outside orch. Following it
	// silently would let a claim be taken twice and finished work reopen.
	if seen := st.cache.Tip; !seen.IsZero() && !tip.IsZero() && tip != seen && tip != st.movedTo && !st.AcceptRewind && !st.Contains(tip, seen) {
		return st.MovedBackwards(st.Ref, seen, tip)
	}
	if tip == st.cache.Tip && len(st.cache.Dirs) > 0 || tip.IsZero() && st.cache.Tip.IsZero() {
		st.snap = &Snapshot{Tip: tip, Root: st.cache.Root, dirs: st.cache.Dirs, objs: st.objs, view: st.readView}
		if tip.IsZero() {
			st.snap = emptySnapshot(st.objs)
		}
		st.expectScan()
	} else {
		snap, err := loadSnapshot(st.objs, tip, st.cache.Dirs)
		if err != nil {
			return err
		}
		snap.view = st.readView
		st.snap = snap
		st.expectScan()
		st.cache.Tip, st.cache.Root, st.cache.Dirs = snap.Tip, snap.Root, snap.dirs
		st.dirty = true
		st.refreshSummaries(nil)
		return nil
	}
	// The cache was saved with the summaries of exactly this tip; a count
	// that disagrees means it is not to be trusted.
	if st.cache.Summaries.Len() != st.countTaskFiles() {
		st.refreshSummaries(nil)
	}
	st.byID, st.named = nil, nil
	return nil
}

// expectScan tells the view scan which files the branch has: it stats them
// by name, in the order the reconcile compares them.
func (st *Store) expectScan() {
	if st.scan != nil {
		st.scan.expect(st.snap.dirs)
	}
}

func (st *Store) countTaskFiles() int {
	d := st.snap.dirs[TasksDir]
	if d == nil {
		return 0
	}
	n := 0
	for _, e := range d.Entries {
		if (e.Mode == gitrepo.ModeFile || e.Mode == gitrepo.ModeExec) && strings.HasSuffix(e.Name, ".md") {
			n++
		}
	}
	return n
}

// updateSummaries brings the summaries of the task files a commit changed
// up to date (the others cannot have changed).
func (st *Store) updateSummaries(changes []Change) {
	for _, c := range changes {
		if !strings.HasPrefix(c.Path, TasksDir+"/") || !strings.HasSuffix(c.Path, ".md") || strings.Count(c.Path, "/") != 1 {
			continue
		}
		if c.Delete {
			st.cache.DropSummary(c.Path)
			st.byID = nil
			continue
		}
		blob, _ := st.snap.Get(c.Path)
		prev := st.cache.Summaries.Get(c.Path)
		r := st.cache.PutSummary(summarize(c.Path, blob, c.Data))
		if st.named != nil && *st.named && r.ID != "" && !statecache.NamedFor(TasksDir, r.Path, r.ID) {
			st.named = nil
		}
		if st.byID != nil {
			// Keep the map (rebuilding it costs more than the commit's
			// other bookkeeping at 10,000 tasks) when the file kept its
			// id and holds it; otherwise build it again when next needed.
			if holder := st.byID[r.ID]; r.ID == "" || prev == nil || prev.ID != r.ID || holder != prev {
				st.byID = nil
			} else {
				st.byID[r.ID] = r
			}
		}
	}
}

// readView returns the view's copy of path when the sync index says it holds
// blob h and its content hashes to h.
func (st *Store) readView(p string, h plumbing.Hash) ([]byte, bool) {
	if st.View == "" || !Mirrored(p) {
		return nil, false
	}
	if ie := st.cache.Index.Get(p); ie == nil || ie.Blob != h || !ie.ConflictW.IsZero() {
		return nil, false
	}
	data, err := st.readViewFile(p)
	if err != nil || gitrepo.HashBlob(data) != h {
		return nil, false
	}
	return data, true
}

// reload re-reads the branch tip after another writer moved it.
func (st *Store) reload() error {
	return st.load()
}

// Exists reports whether the state branch exists.
func (st *Store) Exists() bool { return !st.snap.Tip.IsZero() }

// Snapshot is the state branch at its current tip.
func (st *Store) Snapshot() *Snapshot { return st.snap }

// refreshSummaries brings the task summaries in line with the snapshot,
// parsing only task files whose blob changed. changed, when given, holds the
// content of files just committed, so they need not be read back.
func (st *Store) refreshSummaries(changed map[string][]byte) {
	files := st.snap.Files(TasksDir)
	seen := make(map[string]bool, len(files))
	for _, fe := range files {
		if !strings.HasSuffix(fe.Path, ".md") {
			continue
		}
		seen[fe.Path] = true
		if r := st.cache.Summaries.Get(fe.Path); r != nil && r.Blob() == fe.Blob {
			continue
		}
		data, ok := changed[fe.Path]
		if !ok {
			var err error
			data, err = st.objs.Read(plumbing.BlobObject, fe.Blob)
			if err != nil {
				st.cache.PutSummary(&Summary{Path: fe.Path, Blob: fe.Blob, Problem: err.Error()})
				st.dirty = true
				continue
			}
		}
		st.cache.PutSummary(summarize(fe.Path, fe.Blob, data))
		st.dirty = true
	}
	var gone []string
	st.cache.Summaries.Each(func(r *statecache.Record) {
		if !seen[r.Path] {
			gone = append(gone, r.Path)
		}
	})
	for _, p := range gone {
		st.cache.DropSummary(p)
		st.dirty = true
	}
	st.byID, st.named = nil, nil
}

// Summary is what orch knows about a task without reading its file again,
// and SummaryHeader the part of it that claim order sorts by: the state
// cache keeps them (see statecache), the store hands them out.
type (
	Summary       = statecache.Summary
	SummaryHeader = statecache.SummaryHeader
)

func summarize(path string, blob plumbing.Hash, data []byte) *Summary {
	s := &Summary{Path: path, Blob: blob}
	f, err := taskfile.Parse(path, data)
	if err != nil {
		var pe *taskfile.ParseError
		if errors.As(err, &pe) {
			s.Problem, s.ProblemLine = pe.Msg, pe.Line
		} else {
			s.Problem = err.Error()
		}
		return s
	}
	s.Task = f.Task
	if s.Task.Priority == "" {
		s.Task.Priority = taskfile.DefaultPriority
	} else if p, ok := taskfile.NormalizePriority(s.Task.Priority); ok {
		s.Task.Priority = p
	}
	if errs := f.Validate(); len(errs) > 0 {
		s.Problem, s.ProblemLine = errs[0].Msg, errs[0].Line
	}
	return s
}

// Summaries returns every task on the state branch, ordered by path.
func (st *Store) Summaries() []*Summary {
	out := make([]*Summary, 0, st.cache.Summaries.Len())
	for _, r := range st.cache.Summaries.Sorted() {
		out = append(out, r.Summary())
	}
	return out
}

// EachSummaryWhile calls fn for tasks, in no particular order, until it
// returns false; the tasks after that are not decoded.
func (st *Store) EachSummaryWhile(fn func(*Summary) bool) {
	going := true
	st.cache.Summaries.Each(func(r *statecache.Record) {
		if going {
			going = fn(r.Summary())
		}
	})
}

// EachSummaryIn calls fn for every task in one of the queues (all when
// queues is empty), in no particular order. Tasks in other queues are not
// decoded: a claim looks at the open queues, not at thousands of done tasks.
func (st *Store) EachSummaryIn(queues map[taskfile.Queue]bool, fn func(*Summary)) {
	in := queueFilter(queues)
	st.cache.Summaries.Each(func(r *statecache.Record) {
		if in(r.Queue) {
			fn(r.Summary())
		}
	})
}

// EachSummaryHeaderIn is EachSummaryIn without decoding the tasks: fn gets
// each task's header (what claim order sorts by); the header's Summary is
// the whole task.
func (st *Store) EachSummaryHeaderIn(queues map[taskfile.Queue]bool, fn func(*SummaryHeader)) {
	in := queueFilter(queues)
	st.cache.Summaries.Each(func(r *statecache.Record) {
		if in(r.Queue) {
			fn(&r.SummaryHeader)
		}
	})
}

// queueFilter reports whether a queue is one of queues (all when empty),
// comparing with a short list: hashing 10,000 queue names into the map
// cost more than the walk they filter.
func queueFilter(queues map[taskfile.Queue]bool) func(taskfile.Queue) bool {
	if len(queues) == 0 {
		return func(taskfile.Queue) bool { return true }
	}
	list := make([]taskfile.Queue, 0, len(queues))
	for q, ok := range queues {
		if ok {
			list = append(list, q)
		}
	}
	return func(q taskfile.Queue) bool { return slices.Contains(list, q) }
}

// EachTaskID calls fn with every task's ID and queue, without decoding the
// rest of the task (for resolving ID prefixes).
func (st *Store) EachTaskID(fn func(id string, q taskfile.Queue)) {
	st.cache.Summaries.Each(func(r *statecache.Record) { fn(r.ID, r.Queue) })
}

// SummaryByID returns the task with exactly this id.
func (st *Store) SummaryByID(id string) *Summary {
	if r := st.recByID(id); r != nil {
		return r.Summary()
	}
	return nil
}

func (st *Store) recByID(id string) *statecache.Record {
	if id == "" {
		return nil
	}
	if st.byID != nil {
		return st.byID[id]
	}
	// When every task file is named after its id, as orch names them, an
	// id is found by binary search on the paths. Checking that walks the
	// records once.
	if st.named == nil {
		named := st.cache.Summaries.NamedByID(TasksDir)
		st.named = &named
	}
	if *st.named {
		return st.cache.Summaries.ByNamedID(TasksDir, id)
	}
	// Otherwise the first lookups walk the records; then a map, costly to
	// build, pays off: orch new looks up one id, a claim the dependencies
	// of every task it considers.
	if st.byIDScans < 2 {
		st.byIDScans++
		return st.cache.Summaries.ByID(id)
	}
	if st.byID == nil {
		st.byID = st.cache.Summaries.ByIDMap()
	}
	return st.byID[id]
}

// QueueByID returns the queue of the task with exactly this id, without
// decoding the rest of its summary (a claim checks the dependencies of
// every task it considers, hundreds at 10,000 tasks).
func (st *Store) QueueByID(id string) (taskfile.Queue, bool) {
	if r := st.recByID(id); r != nil {
		return r.Queue, true
	}
	return "", false
}

// Summary returns the task at path.
func (st *Store) Summary(path string) *Summary {
	if r := st.cache.Summaries.Get(path); r != nil {
		return r.Summary()
	}
	return nil
}

// Well-known paths on the state branch.
const (
	TasksDir    = "tasks"
	PromptsDir  = "prompts"
	MessagesDir = "messages"
	EventsDir   = "events"
	ConfigFile  = "config.yaml"
)

// CommitRequest is one commit on the state branch.
type CommitRequest struct {
	Changes []Change
	Message string
	Author  gitrepo.Signature
	// MergeParents are further parents after the tip (a sync merge).
	MergeParents []plumbing.Hash
	// BeforeRef runs after the objects are written and a deferred
	// reconcile has settled, just before the ref moves: side effects
	// outside the state branch (a claim creating the task's branch) go
	// here, so that a command run again after ErrViewChanged has not done
	// them already.
	BeforeRef func() error
}

// Commit writes the changes as one commit on top of the current tip and
// moves the branch with compare-and-swap. It returns ErrRefMoved (after
// reloading) when another writer moved the branch first; Update retries.
func (st *Store) Commit(req *CommitRequest) (plumbing.Hash, error) {
	if st.lock == nil {
		return plumbing.ZeroHash, errors.New("gitstore: commit without the lock")
	}
	if wts := st.Repo.CheckedOutIn(st.Ref); len(wts) > 0 {
		return plumbing.ZeroHash, &ErrCheckedOut{Ref: st.Ref, Worktrees: wts}
	}
	base := st.snap
	trace.Phase("commit: prepare")
	objs := st.objs.NewBatch()
	next, err := base.apply(req.Changes, objs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	trace.Phase("commit: trees and blobs")
	if next.Root == base.Root && !base.Tip.IsZero() && len(req.MergeParents) == 0 {
		return base.Tip, nil // nothing changed: no empty commits
	}
	var parents []plumbing.Hash
	if !base.Tip.IsZero() {
		parents = []plumbing.Hash{base.Tip}
	}
	parents = append(parents, req.MergeParents...)
	when := req.Author.When
	if when.IsZero() {
		when = time.Now()
	}
	author := req.Author
	author.When = when
	raw := gitrepo.EncodeCommit(next.Root, parents, author, author, req.Message)
	h := objs.Add(plumbing.CommitObject, raw)
	if err := objs.Flush(); err != nil {
		return plumbing.ZeroHash, err
	}
	trace.Phase("commit: objects written")
	st.objs.SyncDirs()
	trace.Phase("commit: commit object, dirs synced")
	if st.deferred {
		// An optimistic command: the objects are written (and the disk
		// flush overlapped the scan); the ref moves only if the view held
		// nothing this commit had to see first.
		if _, err := st.Settle(); err != nil {
			return plumbing.ZeroHash, err
		}
		trace.Phase("commit: settled")
	}
	if req.BeforeRef != nil {
		if err := req.BeforeRef(); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	err = st.Repo.UpdateRef(gitrepo.RefUpdate{Name: st.Ref, Old: base.Tip, New: h, Who: author.String(), Message: "orch: " + firstLine(req.Message)})
	if errors.Is(err, gitrepo.ErrRefMoved) {
		if rerr := st.reload(); rerr != nil {
			return plumbing.ZeroHash, rerr
		}
		return plumbing.ZeroHash, gitrepo.ErrRefMoved
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	trace.Phase("commit: ref")
	next.Tip = h
	next.view = st.readView
	st.snap = next
	st.cache.Tip, st.cache.Root, st.cache.Dirs = h, next.Root, next.dirs
	st.updateSummaries(req.Changes)
	st.dirty = true
	trace.Phase("commit: summaries")
	for _, c := range req.Changes {
		if c.Delete {
			st.removeView(c.Path)
		} else {
			blob, _ := next.Get(c.Path)
			st.writeView(c.Path, c.Data, blob)
		}
	}
	trace.Phase("commit: view")
	return h, nil
}

// maxRetries bounds how often Update rebuilds a commit after losing a race
// against a non-orch writer (orch writers are serialised by the lock).
const maxRetries = 50

// ErrTooManyRetries is a commit that kept losing races.
var ErrTooManyRetries = errors.New("the state branch kept moving under orch; try again")

// Update builds a commit from the current snapshot with fn and commits it,
// calling fn again on the new tip when another writer won the race. fn
// returning a nil request means there is nothing to commit.
func (st *Store) Update(fn func(*Snapshot) (*CommitRequest, error)) (plumbing.Hash, error) {
	for i := 0; i < maxRetries; i++ {
		req, err := fn(st.snap)
		if err != nil || req == nil {
			return plumbing.ZeroHash, err
		}
		h, err := st.Commit(req)
		if errors.Is(err, gitrepo.ErrRefMoved) {
			time.Sleep(time.Duration(i) * time.Millisecond)
			continue
		}
		return h, err
	}
	return plumbing.ZeroHash, ErrTooManyRetries
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Notes returns what the store did on the user's behalf (files restored,
// hand edits committed), for the command to print on stderr.
func (st *Store) Notes() []string { return st.notes }

func (st *Store) note(format string, a ...any) {
	st.notes = append(st.notes, fmt.Sprintf(format, a...))
}

// SnapshotOf loads the tree of any commit.
func (st *Store) SnapshotOf(h plumbing.Hash) (*Snapshot, error) {
	return loadSnapshot(st.objs, h, st.cache.Dirs)
}

// MergeBase returns a best common ancestor of a and b (ZeroHash if none).
func (st *Store) MergeBase(a, b plumbing.Hash) (plumbing.Hash, error) { return st.Repo.MergeBase(a, b) }

// MoveTo moves the state branch from the current tip to h (fast-forward or
// undo) with compare-and-swap, then reloads. The view follows at the next
// reconcile.
func (st *Store) MoveTo(h plumbing.Hash, who gitrepo.Signature, msg string) error {
	if st.lock == nil {
		return errors.New("gitstore: move without the lock")
	}
	if wts := st.Repo.CheckedOutIn(st.Ref); len(wts) > 0 {
		return &ErrCheckedOut{Ref: st.Ref, Worktrees: wts}
	}
	err := st.Repo.UpdateRef(gitrepo.RefUpdate{Name: st.Ref, Old: st.snap.Tip, New: h, Who: who.String(), Message: msg})
	if err == nil {
		st.movedTo = h // orch's own move (an undone claim goes back): no rewind
	}
	if rerr := st.reload(); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// ReadRef exposes code-branch refs to the workflow (task branches).
func (st *Store) ReadRef(name string) (plumbing.Hash, error) { return st.Repo.ReadRef(name) }

// CreateRef creates a ref that must not exist yet, from a commit's
// BeforeRef: it is made durable by that commit's update of the state
// branch (see RefUpdate.SyncedLater).
func (st *Store) CreateRef(name string, at plumbing.Hash, who gitrepo.Signature, msg string) error {
	return st.Repo.UpdateRef(gitrepo.RefUpdate{Name: name, Old: plumbing.ZeroHash, New: at, Who: who.String(), Message: msg, SyncedLater: true})
}
