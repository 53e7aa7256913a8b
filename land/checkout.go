package land

import (
	"fmt"
	"strings"
	"time"

	"github.com/orch-tool/orch/internal/text"
)

// WaitError says the landing waits: the base branch is checked out in a
// worktree with changes, which a landing never touches.
type WaitError struct {
	Base     string
	Worktree string
	Changes  []string
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("%s is checked out in %s with changes (%s): landing waits until that checkout is clean, so that nothing there is lost",
		e.Base, e.Worktree, text.Clip(strings.Join(e.Changes, ", "), 200))
}

// reflogMessage marks the base's moves that are landings.
const reflogMessage = "orch land"

// resume completes the follow of a landing killed after the base moved
// and before the worktree that has it checked out followed: the base's
// last move is a landing's (its reflog says so), and the worktree holds
// exactly what the base held before that move, in its index and its
// files. What it shows as changes is then only that move not yet made,
// nothing of a person's; it follows now and reports whether it did.
func (l *lander) resume(wt string) bool {
	out, err := l.git("", "reflog", "show", "--format=%H%x00%gs", "-n", "2", "refs/heads/"+l.o.Base)
	if err != nil {
		return false
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 {
		return false
	}
	head, msg, _ := strings.Cut(lines[0], "\x00")
	prev, _, _ := strings.Cut(lines[1], "\x00")
	if msg != reflogMessage {
		return false
	}
	if now, err := l.rev("refs/heads/" + l.o.Base); err != nil || now != head {
		return false
	}
	_, _ = l.git(wt, "update-index", "-q", "--refresh")
	if _, err := l.git(wt, "diff-index", "--cached", "--quiet", prev); err != nil {
		return false // the index is not the base's previous tree
	}
	if _, err := l.git(wt, "diff-files", "--quiet"); err != nil {
		return false // the files are not the index
	}
	_, err = l.follow(wt, prev, head)
	return err == nil
}

// follow advances a clean worktree from tip to head as git merge
// --ff-only would. A git command of the person's that holds the index
// for a moment (git status refreshes it) is waited for, a little: the ref
// has moved already, and a checkout left behind would look changed.
func (l *lander) follow(wt, tip, head string) (string, error) {
	var out string
	var err error
	for try := 0; try < 20; try++ {
		out, err = l.git(wt, "read-tree", "-u", "-m", tip, head)
		if err == nil || !strings.Contains(out, "index.lock") {
			break
		}
		time.Sleep(time.Duration(try+1) * 50 * time.Millisecond)
	}
	return out, err
}

// baseWorktrees are the worktrees (a person's) that have the base checked
// out.
func (l *lander) baseWorktrees() []string {
	var wts []string
	for _, w := range l.o.CheckedOut("refs/heads/" + l.o.Base) {
		if w != "" {
			wts = append(wts, w)
		}
	}
	return wts
}

// changes lists what a worktree holds beyond its HEAD (git status).
func (l *lander) changes(wt string) []string {
	out, err := l.git(wt, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return []string{"git status failed: " + strings.TrimSpace(out)}
	}
	var list []string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.TrimSpace(line) != "" {
			list = append(list, strings.TrimSpace(line))
		}
	}
	return list
}
