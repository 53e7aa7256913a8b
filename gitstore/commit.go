package gitstore

import (
	"errors"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/trace"
)

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
