package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/orch-tool/orch/internal/trace"
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

// LiveCheckouts is CheckedOutIn without the worktrees whose directory was
// deleted by hand (not with git worktree remove): those are pruned, so
// that they are not given out as if they were there and can be made again.
func (r *Repo) LiveCheckouts(ref string) []string {
	existing := r.CheckedOutIn(ref)
	var live []string
	for _, p := range existing {
		if _, err := os.Stat(p); err == nil {
			live = append(live, p)
		}
	}
	if len(live) < len(existing) {
		_ = r.PruneWorktrees()
	}
	return live
}

// PathFree reports whether nothing stands at path, and makes its parent
// directory so that a worktree can be added there (err: it cannot).
func PathFree(path string) (free bool, err error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	}
	return true, os.MkdirAll(filepath.Dir(path), 0o777)
}

// PruneWorktrees forgets worktrees whose directory was deleted by hand.
func (r *Repo) PruneWorktrees() error {
	_, err := r.git("worktree", "prune")
	return err
}

// RemoveWorktree removes a worktree its caller found holding nothing its
// commits do not (WorktreeFiles, which also counts ignored files, where
// git's own check does not): --force skips git's second look at every
// file. A worktree git has locked is still refused.
func (r *Repo) RemoveWorktree(path string) error {
	_, err := r.git("worktree", "remove", "--force", "--", path)
	return err
}

// DiscardWorktree removes a worktree as RemoveWorktree does, for a caller
// that found it holding nothing its commits do not, but leaves deleting its
// files for later: deleting thousands of files once they are on disk is
// slow, and a landing need not wait for it. It moves the worktree's
// directory, then git's record of it (<common>/worktrees/<id>), into a new
// directory under trash (orch's own, on the repository's file system), and
// returns that directory for the caller to delete; git knows the worktree
// no more, as after git worktree remove. Where it cannot move them
// (another file system, a worktree git locked or the main one) it leaves
// the removal to RemoveWorktree and returns "".
func (r *Repo) DiscardWorktree(path, trash string) (string, error) {
	admin := r.worktreeAdmin(path)
	if admin == "" {
		return "", r.RemoveWorktree(path)
	}
	if _, err := os.Lstat(filepath.Join(admin, "locked")); err == nil {
		return "", r.RemoveWorktree(path) // git says why it refuses
	}
	if err := os.MkdirAll(trash, 0o700); err != nil {
		return "", r.RemoveWorktree(path)
	}
	dir, err := os.MkdirTemp(trash, "worktree-")
	if err != nil {
		return "", r.RemoveWorktree(path)
	}
	if err := os.Rename(path, filepath.Join(dir, "tree")); err != nil {
		_ = os.Remove(dir)
		return "", r.RemoveWorktree(path)
	}
	if err := os.Rename(admin, filepath.Join(dir, "git")); err != nil {
		// What git worktree prune would remove: its worktree is gone.
		if err := os.RemoveAll(admin); err != nil {
			return dir, err
		}
	}
	_ = os.Remove(filepath.Join(r.CommonDir, "worktrees")) // as git does once it is empty
	return dir, nil
}

// TrashEntries lists what the trash at trash holds: worktrees discarded,
// now or by an earlier command whose deletion did not finish.
func TrashEntries(trash string) []string {
	ents, _ := os.ReadDir(trash)
	dirs := make([]string, 0, len(ents))
	for _, ent := range ents {
		dirs = append(dirs, filepath.Join(trash, ent.Name()))
	}
	return dirs
}

// RemoveAll deletes dirs and everything in them; what cannot be deleted
// stays in the trash for the next landing to try again.
func RemoveAll(dirs []string) {
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// WorktreeGitDir is the git dir of the linked worktree at path, as the
// .git file there names it.
func WorktreeGitDir(path string) (string, error) {
	return readGitFile(filepath.Join(path, ".git"))
}

// worktreeAdmin is git's record of the linked worktree at path
// (<common>/worktrees/<id>, which its .git file names and which names it
// back), or "" when path is not such a worktree of this repository.
func (r *Repo) worktreeAdmin(path string) string {
	admin, err := WorktreeGitDir(path)
	if err != nil {
		return "" // a directory (the main worktree), or no git dir
	}
	if filepath.Dir(admin) != filepath.Join(filepath.Clean(r.CommonDir), "worktrees") {
		return ""
	}
	back, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err != nil {
		return ""
	}
	named := strings.TrimSpace(string(back))
	if !filepath.IsAbs(named) {
		named = filepath.Join(admin, named)
	}
	if filepath.Clean(named) != filepath.Join(filepath.Clean(path), ".git") {
		return ""
	}
	return admin
}

// WorktreeFile is one path of a worktree that its commits do not hold.
type WorktreeFile struct {
	Path  string `json:"path"`  // relative to the worktree; a directory git reports whole ends in /
	State string `json:"state"` // "uncommitted" (a tracked file changed, staged or not), "untracked" or "ignored"
}

// WorktreeFiles lists what the worktree at path holds beyond its commits:
// tracked changes, staged or not, untracked files, and ignored files, which
// git worktree remove deletes without asking (.env, local settings, notes).
// A directory that is untracked or ignored as a whole is one entry. Nil when
// there is nothing.
func (r *Repo) WorktreeFiles(path string) ([]WorktreeFile, error) {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", path, "status", "--porcelain=v1", "-z", "--no-renames",
		"--untracked-files=normal", "--ignored=traditional", "--ignore-submodules=none")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	trace.Phase("git status (worktree files)")
	if err != nil {
		return nil, fmt.Errorf("git status in %s: %v: %s", path, err, strings.TrimSpace(errb.String()))
	}
	var files []WorktreeFile
	for _, entry := range strings.Split(out.String(), "\x00") {
		if len(entry) < 4 {
			continue
		}
		f := WorktreeFile{Path: entry[3:], State: "uncommitted"}
		switch entry[:2] {
		case "??":
			f.State = "untracked"
		case "!!":
			f.State = "ignored"
		}
		files = append(files, f)
	}
	return files, nil
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

// EnsureExclude adds entry, under a comment line, to info/exclude, so that
// what it names never shows in `git status` of any worktree, and reports
// whether it added it (false: it was there, with or without its trailing
// slash).
func (r *Repo) EnsureExclude(entry, comment string) (bool, error) {
	p := filepath.Join(r.CommonDir, "info", "exclude")
	cur, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	for _, line := range strings.Split(string(cur), "\n") {
		if l := strings.TrimSpace(line); l == entry || l == strings.TrimSuffix(entry, "/") {
			return false, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return false, err
	}
	var b bytes.Buffer
	b.Write(cur)
	if len(cur) > 0 && !bytes.HasSuffix(cur, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString("# " + comment + "\n" + entry + "\n")
	return true, os.WriteFile(p, b.Bytes(), 0o666)
}
