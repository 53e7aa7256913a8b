package workflow

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// branchName is the branch a task's work goes on.
func (e *Engine) branchName(t *taskfile.Task, path string) string {
	slug := strings.TrimSuffix(filepath.Base(path), ".md")
	slug = strings.TrimPrefix(slug, t.ID)
	slug = strings.TrimPrefix(slug, "-")
	if slug == "" {
		slug = taskfile.Slug(t.Title)
	}
	return e.Config.BranchPrefix + t.ID + "-" + slug
}

// ensureBranch decides the task's branch: created from its base on a first
// claim (create does it; the claim's commit runs it just before moving the
// state branch) and reused afterwards. Creating is idempotent, so a retried
// claim is harmless.
func (e *Engine) ensureBranch(t *Task) (branch string, reused bool, note string, create func() error, err error) {
	branch = t.Task.Branch
	if branch == "" {
		branch = e.branchName(&t.Task, t.Path)
	}
	if !taskfile.ValidBranch(branch) {
		return "", false, "", nil, &RuleError{Rule: "branch", Msg: fmt.Sprintf("%q is not a valid branch name", branch), Next: Next{Advice: AdviseFixBranchField}}
	}
	ref := "refs/heads/" + branch
	base := t.Task.BaseBranch
	if base == "" {
		base = e.Config.BaseBranch
	}
	// A task's branch is its own: work committed on the state branch or
	// straight on the base branch would bypass review (or break orch).
	if ref == e.Store.Ref || branch == base {
		what := "the state branch"
		if branch == base {
			what = "the base branch"
		}
		return "", false, "", nil, &RuleError{Rule: "branch", Msg: fmt.Sprintf("%s's branch %q is %s; a task needs a branch of its own", t.Task.ID, branch, what), Next: Next{Advice: AdviseDropBranchField, Task: t.Task.ID}}
	}
	cur, err := e.Store.ReadRef(ref)
	if err != nil {
		return "", false, "", nil, err
	}
	// Work another clone pushed (a rejected task retried on another
	// machine) is continued, never started over: the remote-tracking copy
	// of the task's branch is where the work is.
	remote, remoteName := e.Store.Repo.RemoteCopy(branch)
	if !cur.IsZero() {
		repo := e.Store.Repo
		if remote.IsZero() || remote == cur || !repo.IsAncestor(cur, remote) {
			if !remote.IsZero() && remote != cur && !repo.IsAncestor(remote, cur) {
				note = fmt.Sprintf("the branch %s and %s/%s have diverged: merge them before you go on", branch, remoteName, branch)
			}
			return branch, true, note, nil, nil
		}
		// The remote is ahead: fast-forward, unless a worktree has the
		// branch checked out (moving it would leave that worktree stale).
		if wts := e.Store.Repo.CheckedOutIn(ref); len(wts) > 0 {
			note = fmt.Sprintf("%s/%s is ahead of %s, which is checked out in %s: pull it there before you go on", remoteName, branch, branch, strings.Join(wts, ", "))
			return branch, true, note, nil, nil
		}
		create = func() error {
			return e.Store.Repo.UpdateRef(gitrepo.RefUpdate{Name: ref, Old: cur, New: remote, Who: e.Signature().String(), Message: "orch: fast-forward " + branch + " to " + remoteName + "/" + branch})
		}
		return branch, true, fmt.Sprintf("fast-forwarded %s to %s/%s (work pushed from another clone)", branch, remoteName, branch), create, nil
	}
	if !remote.IsZero() {
		create = func() error {
			if err := e.Store.CreateRef(ref, remote, e.Signature(), "orch: branch for "+t.Task.ID+" from "+remoteName+"/"+branch); err != nil && !errors.Is(err, gitrepo.ErrRefMoved) {
				return err
			}
			return nil
		}
		return branch, true, fmt.Sprintf("continued from %s/%s: the work of earlier attempts, pushed from another clone", remoteName, branch), create, nil
	}
	baseHash, err := e.Store.ReadRef("refs/heads/" + base)
	if err != nil {
		return "", false, "", nil, err
	}
	baseFrom := base
	if baseHash.IsZero() {
		// A fresh clone has the base branch only as its remote-tracking
		// copy.
		var rem string
		if baseHash, rem = e.Store.Repo.RemoteCopy(base); !baseHash.IsZero() {
			baseFrom = rem + "/" + base
		}
	}
	if baseHash.IsZero() {
		next := Next{Advice: AdviseCreateBase, Base: base}
		if here := e.Store.Repo.HeadBranch(); here != "" && here != base {
			next = Next{Advice: AdviseBaseFromHere, Base: base, Branch: here}
		}
		if !e.IsHuman() {
			// config.yaml is a person's to change.
			next = Next{Advice: AdviseAskForBase, Task: t.Task.ID, Base: base}
		}
		return "", false, "", nil, &SetupError{Msg: fmt.Sprintf("the base branch %s does not exist, so the task's branch cannot be created", base), Next: next}
	}
	create = func() error {
		if err := e.Store.CreateRef(ref, baseHash, e.Signature(), "orch: branch for "+t.Task.ID+" from "+baseFrom); err != nil && !errors.Is(err, gitrepo.ErrRefMoved) {
			return err
		}
		return nil
	}
	if t.Task.Branch != "" {
		note = "the branch " + branch + " was missing and was created again from " + baseFrom
	}
	return branch, false, note, create, nil
}
