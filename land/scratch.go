package land

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/orch-tool/orch/gitstore/gitrepo"
)

// reset puts the scratch worktree at tip, clean. A scratch worktree that
// cannot be reset (a landing killed midway may leave git's locks in it;
// the landing lock says none of them is live) is made again.
func (l *lander) reset(tip string) error {
	err := l.resetOnce(tip)
	if err == nil {
		return nil
	}
	_, _ = l.git("", "worktree", "remove", "--force", l.wt)
	_ = os.RemoveAll(l.wt)
	if _, err := l.o.scratch(); err != nil {
		return err
	}
	return l.resetOnce(tip)
}

func (l *lander) resetOnce(tip string) error {
	// A merge or rebase a killed landing left half done.
	gd := l.gitDir()
	settled := gd != ""
	if gd != "" {
		if _, err := os.Stat(filepath.Join(gd, "MERGE_HEAD")); err == nil {
			_, _ = l.git(l.wt, "merge", "--abort")
			settled = false
		}
		for _, d := range []string{"rebase-merge", "rebase-apply"} {
			if _, err := os.Stat(filepath.Join(gd, d)); err == nil {
				_, _ = l.git(l.wt, "rebase", "--abort")
				settled = false
			}
		}
		if _, err := os.Stat(filepath.Join(gd, "index.lock")); err == nil {
			settled = false
		}
	}
	// With the merge strategy, a worktree at the tip already (the base
	// has not moved since this clone's last landing) needs less: clean
	// removes what the last check left untracked, and mergeTree's
	// checkout --force puts every tracked file at the merge anyway. Only
	// the .gitattributes files must be the tip's before it, since
	// merge-tree reads them from the worktree.
	if settled && (l.o.Strategy == "" || l.o.Strategy == "merge") && headIs(gd, tip) {
		if _, err := l.git(l.wt, "clean", "-q", "-ffdx"); err != nil {
			return err
		}
		if _, err := l.git(l.wt, "diff-files", "--quiet", "--", ":(glob)**/.gitattributes"); err == nil {
			l.head, l.loose = tip, true
			return nil
		}
	}
	return l.force(tip)
}

// force puts the scratch worktree at commit exactly: checkout --force
// discards whatever the last step left in the index and the files; clean,
// what it left untracked (a check's output).
func (l *lander) force(commit string) error {
	if _, err := l.git(l.wt, "checkout", "--quiet", "--detach", "--force", commit); err != nil {
		return err
	}
	if _, err := l.git(l.wt, "clean", "-q", "-ffdx"); err != nil {
		return err
	}
	l.head, l.loose = commit, false
	return nil
}

// headIs reports whether the worktree whose git dir is gd has commit
// checked out, detached (as the scratch worktree always is).
func headIs(gd, commit string) bool {
	b, err := os.ReadFile(filepath.Join(gd, "HEAD"))
	return err == nil && strings.TrimSpace(string(b)) == commit
}

// gitDir is the scratch worktree's git dir, as its .git file names it (""
// when it names none).
func (l *lander) gitDir() string {
	gd, _ := gitrepo.WorktreeGitDir(l.wt)
	return gd
}

// ErrBusy says another landing holds this clone's landing lock.
var ErrBusy = errors.New("another landing runs in this clone")

// Lock takes the clone's landing lock (<scratch>.lock): one landing at a
// time per clone, so that two coordinators on one clone never merge the
// same work twice nor move a person's checkout at once (git's index.lock
// would stop the second midway, after its ref moved). Across clones the
// leased push is what decides. wait blocks until the lock is free; else
// it returns ErrBusy when taken. Land must be called with it held.
func Lock(scratch string, wait bool) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(scratch), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(scratch+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrBusy
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}

// scratch is the clone's scratch worktree (Options.Scratch), made with git
// worktree add when it is not there yet. The landing lock guards it.
func (o Options) scratch() (string, error) {
	dir := o.Scratch
	l := &lander{o: o}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		_, _ = l.git("", "worktree", "prune")
		_ = os.RemoveAll(dir)
		if out, err := l.git("", "worktree", "add", "--quiet", "--detach", dir, "refs/heads/"+o.Base); err != nil {
			return "", fmt.Errorf("cannot make the scratch worktree %s: %v: %s", dir, err, strings.TrimSpace(out))
		}
	}
	return dir, nil
}
