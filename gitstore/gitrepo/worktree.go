package gitrepo

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Worktree is one worktree of the repository, as git worktree list sees it.
type Worktree struct {
	Path     string
	Branch   string // "" when detached
	Main     bool
	Prunable bool // its directory is gone
}

// Worktrees lists the repository's worktrees (git worktree list).
func (r *Repo) Worktrees() ([]Worktree, error) {
	out, err := r.git("worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var list []Worktree
	for i, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		var w Worktree
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, " ")
			switch k {
			case "worktree":
				w.Path = v
			case "branch":
				w.Branch = strings.TrimPrefix(v, "refs/heads/")
			case "prunable":
				w.Prunable = true
			case "bare":
				w.Main = true
			}
		}
		if w.Path == "" {
			continue
		}
		w.Main = w.Main || i == 0 // git lists the main worktree first
		list = append(list, w)
	}
	return list, nil
}

// AddWorktree checks branch out in a new worktree at path.
func (r *Repo) AddWorktree(path, branch string) error {
	_, err := r.git("worktree", "add", "--quiet", "--", path, branch)
	return err
}

// PruneWorktrees forgets worktrees whose directory was deleted by hand.
func (r *Repo) PruneWorktrees() error {
	_, err := r.git("worktree", "prune")
	return err
}

// RemoveWorktree removes a clean worktree (git refuses one with changes).
func (r *Repo) RemoveWorktree(path string) error {
	_, err := r.git("worktree", "remove", "--", path)
	return err
}

// WorktreeChanges returns git status --porcelain of the worktree at path:
// "" when it holds nothing uncommitted (untracked files included).
func (r *Repo) WorktreeChanges(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", path, "status", "--porcelain", "--untracked-files=all")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git status in %s: %v: %s", path, err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Diff is git diff between two commits (a..b), or against their merge base
// (a...b) when mergeBase is set; stat gives git diff --stat instead.
func (r *Repo) Diff(a, b string, mergeBase, stat bool) (string, error) {
	rng := a + ".." + b
	if mergeBase {
		rng = a + "..." + b
	}
	args := []string{"diff", "--no-color", "--no-ext-diff"}
	if stat {
		args = append(args, "--stat")
	}
	return r.git(append(args, rng, "--")...)
}
