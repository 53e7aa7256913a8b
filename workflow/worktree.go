package workflow

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// Every task is worked on in a worktree of its own, with its branch checked
// out: agents never share a checkout, and a retry finds the earlier work
// where it was left.

// WorktreeResult is a task's worktree.
type WorktreeResult struct {
	Task    string
	Branch  string
	Path    string // absolute
	Created bool
}

// worktreePath is where a task's worktree goes when none exists:
// <worktree_dir>/<repo>-<id>, worktree_dir resolved against the main
// worktree (default: beside it).
func (e *Engine) worktreePath(id string) string {
	main := e.Store.Repo.MainWorkTree
	if main == "" {
		main = e.Store.Repo.CommonDir
	}
	name := filepath.Base(main)
	if name == ".git" || filepath.Ext(name) == ".git" {
		if name = strings.TrimSuffix(name, filepath.Ext(name)); name == "" {
			name = "repo"
		}
	}
	dir := filepath.Dir(main)
	if wd := e.Config.WorktreeDir; wd != "" {
		if filepath.IsAbs(wd) {
			dir = wd
		} else {
			dir = filepath.Join(main, wd)
		}
	}
	return filepath.Join(dir, name+"-"+id)
}

// TaskWorktree returns the worktree that has the task's branch checked
// out, creating it (at path, else worktreePath) when there is none.
func (e *Engine) TaskWorktree(id, path string) (*WorktreeResult, error) {
	s := e.Store.SummaryByID(id)
	if s == nil {
		return nil, &NotFoundError{What: "task", Ref: id, Next: Next{Advice: AdviseListTasks}}
	}
	return e.worktreeOf(s, path)
}

// worktreeOf is TaskWorktree for a task looked up already.
func (e *Engine) worktreeOf(s *gitstore.Summary, path string) (*WorktreeResult, error) {
	id := s.Task.ID
	branch := s.Task.Branch
	if branch == "" {
		return nil, &RuleError{Rule: "no_branch", Msg: fmt.Sprintf("%s has no branch yet (it is %s)", id, s.Task.Queue), Next: Next{Advice: AdviseClaimWithTree, Task: id}}
	}
	h, err := e.Store.ReadRef("refs/heads/" + branch)
	if err != nil {
		return nil, err
	}
	if h.IsZero() {
		return nil, &RuleError{Rule: "no_branch", Msg: fmt.Sprintf("the branch %s of %s does not exist in this repository", branch, id), Next: Next{Advice: AdviseFetchOrReclaim, Branch: branch}}
	}
	res := &WorktreeResult{Task: id, Branch: branch}
	repo := e.Store.Repo
	live := repo.LiveCheckouts("refs/heads/" + branch)
	if len(live) > 0 {
		res.Path = live[0]
		return res, nil
	}
	if path == "" {
		path = e.worktreePath(id)
	}
	if res.Path, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	if free, err := gitrepo.PathFree(res.Path); !free {
		return nil, &RuleError{Rule: "path_exists", Msg: fmt.Sprintf("%s already exists and is not %s's worktree", res.Path, id), Next: Next{Advice: AdviseOtherPath}}
	} else if err != nil {
		return nil, &ExternalError{Msg: fmt.Sprintf("cannot make the worktree %s: %v", res.Path, err), Next: Next{Advice: AdviseOtherPath}}
	}
	if err := repo.AddWorktree(res.Path, branch); err != nil {
		return nil, &ExternalError{Msg: fmt.Sprintf("git worktree add %s %s failed: %v", res.Path, branch, err), Next: Next{Advice: AdviseExistingTrees}}
	}
	res.Created = true
	return res, nil
}

// PrunedWorktree is one worktree orch worktree prune looked at.
type PrunedWorktree struct {
	Path    string
	Branch  string
	Task    string
	Queue   string // "archived" when the task file is gone
	Removed bool
	Kept    string                 // why it was kept ("" when removed, or would be)
	Hint    string                 // what to do about what kept it
	Files   []gitrepo.WorktreeFile // what it holds beyond its commits
}

// finishedForWorktrees are the queues whose tasks need their worktree no
// more.
var finishedForWorktrees = map[taskfile.Queue]bool{taskfile.Done: true, taskfile.Failed: true, taskfile.Superseded: true}

// PruneWorktrees removes the worktrees of finished tasks (done, failed,
// superseded, archived), in the order of their paths. A worktree holding
// anything its commits do not (changes, untracked or ignored files) is kept
// and named: removing it would lose them. Its branch stays, so removing a
// worktree loses no commit. dryRun only lists.
func (e *Engine) PruneWorktrees(dryRun bool) ([]PrunedWorktree, error) {
	repo := e.Store.Repo
	_ = repo.PruneWorktrees()
	wts, err := repo.Worktrees()
	if err != nil {
		return nil, &ExternalError{Msg: err.Error(), Next: Next{Advice: AdviseListTrees}}
	}
	sort.Slice(wts, func(i, j int) bool { return wts[i].Path < wts[j].Path })
	out := []PrunedWorktree{}
	here, _ := filepath.Abs(repo.WorkTree)
	for _, w := range wts {
		if w.Main || w.Branch == "" || !strings.HasPrefix(w.Branch, e.Config.BranchPrefix) {
			continue
		}
		p := PrunedWorktree{Path: w.Path, Branch: w.Branch}
		if s := e.taskOfBranch(w.Branch, nil); s != nil {
			p.Task, p.Queue = s.Task.ID, string(s.Task.Queue)
			if !finishedForWorktrees[s.Task.Queue] {
				continue // its task is still open
			}
		} else if id := archivedTaskOf(w.Branch, e.Config.BranchPrefix); id != "" && e.Store.SummaryByID(id) == nil {
			p.Task, p.Queue = id, "archived"
		} else {
			continue // not a task's branch orch knows
		}
		files, err := repo.WorktreeFiles(w.Path)
		switch {
		case err != nil:
			p.Kept, p.Hint = err.Error(), "git -C "+shellWord(w.Path)+" status shows what it holds"
		case len(files) > 0:
			p.Files = files
			p.Kept, p.Hint = keptFor(files, w.Path)
		case here != "" && (here == w.Path || strings.HasPrefix(here, w.Path+string(filepath.Separator))):
			p.Kept, p.Hint = "orch runs in it", "run orch worktree prune from another directory"
		case dryRun:
		default:
			if err := repo.RemoveWorktree(w.Path); err != nil {
				p.Kept, p.Hint = err.Error(), "git worktree list shows the worktrees"
			} else {
				p.Removed = true
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// keptFor says what files keep a worktree (how many of each kind, and the
// first few paths) and what to do: save them, or remove the worktree anyway
// with the git command that deletes them.
func keptFor(files []gitrepo.WorktreeFile, path string) (kept, hint string) {
	count := map[string]int{}
	for _, f := range files {
		count[f.State]++
	}
	var kinds []string
	for _, k := range []struct{ state, one, many string }{
		{"uncommitted", "uncommitted change", "uncommitted changes"},
		{"untracked", "untracked file", "untracked files"},
		{"ignored", "ignored file", "ignored files"},
	} {
		switch n := count[k.state]; n {
		case 0:
		case 1:
			kinds = append(kinds, "1 "+k.one)
		default:
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k.many))
		}
	}
	const named = 5
	var names []string
	for i, f := range files {
		if i == named {
			names = append(names, fmt.Sprintf("and %d more", len(files)-named))
			break
		}
		names = append(names, f.Path)
	}
	kept = strings.Join(kinds, ", ") + " (" + strings.Join(names, ", ") + ")"
	them := "them"
	if len(files) == 1 {
		them = "it"
	}
	save := "commit or stash " + them + " there"
	switch ignored := count["ignored"]; {
	case ignored == len(files):
		save = "move " + them + " out"
	case ignored > 0:
		save += ", and move the ignored ones out"
	}
	hint = save + ", or remove the worktree anyway and lose " + them + ": git worktree remove --force " + shellWord(path)
	return kept, hint
}

// shellWord is s as one word of a shell command: as it is when it holds
// nothing the shell reads specially, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// archivedTaskOf reads the task id out of a task branch's name
// (<prefix><id>-<slug>), "" when it holds none.
func archivedTaskOf(branch, prefix string) string {
	rest := strings.TrimPrefix(branch, prefix)
	for i := len(rest); i > 0; i = strings.LastIndexByte(rest[:i], '-') {
		if taskfile.ValidID(rest[:i]) {
			return rest[:i]
		}
	}
	return ""
}

// DiffResult is the change on a task's branch.
type DiffResult struct {
	Task  string
	From  string // base branch (three-dot: since the merge base), or the commit rejected last
	To    string // the task's branch
	Since string // "base" or "rejection"
	Diff  string
}

// Diff is what the task's branch changes: against its base branch (since
// their merge base, as a pull request shows it), or, sinceRejection, since
// the branch tip the last rejection recorded (what the retry changed).
func (e *Engine) Diff(id string, sinceRejection, stat bool) (*DiffResult, error) {
	s := e.Store.SummaryByID(id)
	if s == nil {
		return nil, &NotFoundError{What: "task", Ref: id, Next: Next{Advice: AdviseListTasks}}
	}
	t := &s.Task
	if t.Branch == "" {
		return nil, &RuleError{Rule: "no_branch", Msg: fmt.Sprintf("%s has no branch yet (it is %s): nothing to diff", id, t.Queue), Next: Next{Advice: AdviseShowBrief, Task: id}}
	}
	if h, err := e.Store.ReadRef("refs/heads/" + t.Branch); err != nil || h.IsZero() {
		return nil, &RuleError{Rule: "no_branch", Msg: fmt.Sprintf("the branch %s of %s does not exist in this repository", t.Branch, id), Next: Next{Advice: AdviseFetchBranch, Branch: t.Branch}}
	}
	res := &DiffResult{Task: id, To: t.Branch, Since: "base"}
	mergeBase := true
	if sinceRejection {
		if t.RejectedAt == "" {
			return nil, &RuleError{Rule: "no_rejection", Msg: fmt.Sprintf("%s has no recorded rejection to diff from", id), Next: Next{Advice: AdviseDiffWhole, Task: id}}
		}
		res.From, res.Since, mergeBase = t.RejectedAt, "rejection", false
	} else {
		res.From = t.BaseBranch
		if res.From == "" {
			res.From = e.Config.BaseBranch
		}
		if h, _ := e.Store.ReadRef("refs/heads/" + res.From); h.IsZero() {
			if rh, rem := e.Store.Repo.RemoteCopy(res.From); !rh.IsZero() {
				res.From = rem + "/" + res.From
			}
		}
	}
	out, err := e.Store.Repo.Diff(res.From, res.To, mergeBase, stat)
	if err != nil {
		return nil, &ExternalError{Msg: err.Error(), Next: Next{Advice: AdviseLogBranch, Branch: t.Branch}}
	}
	res.Diff = out
	return res, nil
}

// FetchTaskBranch brings the remote's copy of the task's branch into this
// clone (its remote-tracking ref), and makes the local branch hold that
// work when it holds none of its own: when it is missing, or when it was
// just made from the base and the remote's copy is ahead of it. A branch
// with commits of its own here is left as it is (the claim's note says
// when the two have diverged). orch run --sync does this for each claim and
// review claim, so that work pushed from another clone is continued and
// reviewed, not started over or reported missing. It runs git fetch: the
// caller holds no lock of orch's.
func FetchTaskBranch(repo *gitrepo.Repo, remote, branch, who string) error {
	if branch == "" || !taskfile.ValidBranch(branch) {
		return nil
	}
	ref := "refs/heads/" + branch
	theirs, err := repo.Fetch(remote, ref)
	if err != nil || theirs.IsZero() {
		return err
	}
	mine, err := repo.ReadRef(ref)
	if err != nil || mine == theirs {
		return err
	}
	if !mine.IsZero() && (!repo.IsAncestor(mine, theirs) || len(repo.CheckedOutIn(ref)) > 0) {
		return nil
	}
	return repo.UpdateRef(gitrepo.RefUpdate{Name: ref, Old: mine, New: theirs, Who: who, Message: "orch: " + branch + " from " + remote})
}

// PushTaskBranch shares the task's branch through the remote (a plain
// push: never forced), so that a reviewer or the next agent on another
// clone works on what this clone's agent committed.
func PushTaskBranch(repo *gitrepo.Repo, remote, branch string) error {
	if branch == "" || !taskfile.ValidBranch(branch) {
		return nil
	}
	h, err := repo.ReadRef("refs/heads/" + branch)
	if err != nil || h.IsZero() {
		return err
	}
	return repo.PushBranch(remote, branch, h)
}

// FetchBranchOf brings the task's branch from the remote when this clone
// lacks it or holds less (orch approve --sync and orch land --sync: the
// work reviewed on another clone is what is approved and landed here).
func (e *Engine) FetchBranchOf(id, remote string) error {
	s := e.Store.SummaryByID(id)
	if s == nil {
		return &NotFoundError{What: "task", Ref: id, Next: Next{Advice: AdviseListTasks}}
	}
	if err := FetchTaskBranch(e.Store.Repo, remote, s.Task.Branch, e.Actor); err != nil {
		return &ExternalError{Msg: fmt.Sprintf("cannot fetch %s from %s: %v", s.Task.Branch, remote, err), Next: Next{Advice: AdviseCheckRemote}}
	}
	return nil
}

// PushBranchOf pushes the task's branch to the remote (orch submit --sync:
// the work before the verb that names it), once the claimant's rules hold:
// a process whose claim ended pushes nothing.
func (e *Engine) PushBranchOf(id, remote string) error {
	s := e.Store.SummaryByID(id)
	if s == nil {
		return &NotFoundError{What: "task", Ref: id, Next: Next{Advice: AdviseListTasks}}
	}
	if err := e.checkFence(&s.Task); err != nil {
		return err
	}
	if err := e.claimRefLost(&s.Task, ActionSubmit); err != nil {
		return err
	}
	if err := PushTaskBranch(e.Store.Repo, remote, s.Task.Branch); err != nil {
		return &ExternalError{Msg: fmt.Sprintf("cannot push %s to %s: %v", s.Task.Branch, remote, err), Next: Next{Advice: AdviseCheckRemote}}
	}
	return nil
}
