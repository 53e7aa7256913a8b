package gitrepo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
)

// Repo is a git repository as seen from one working directory.
type Repo struct {
	// GitDir is the git dir of the worktree we were started in (for a
	// linked worktree, <common>/worktrees/<name>).
	GitDir string
	// CommonDir holds objects, refs and config shared by all worktrees.
	CommonDir string
	// WorkTree is the top of the worktree we were started in ("" when bare).
	WorkTree string
	// MainWorkTree is the repository's main worktree, where the view lives
	// ("" for a bare repository, or when it cannot be found).
	MainWorkTree string
	Bare         bool

	// LockOwnerFile is where UpdateRef notes the process that holds a ref's
	// .lock file, one note per ref (see noteLockOwner); "" for no notes.
	// Only the holder of orch's lock may set it: a note then names the
	// one orch process that can hold a ref lock.
	LockOwnerFile string

	// config is the common config file as discovery read it (once: the
	// format check, core.bare and core.worktree come from it).
	config *gitconfig.Config
}

// ErrNotRepo is returned when no git repository encloses the directory.
type ErrNotRepo struct{ Dir string }

func (e *ErrNotRepo) Error() string {
	return fmt.Sprintf("not a git repository (or any parent up to /): %s", e.Dir)
}

// Discover finds the repository that contains dir, the way git does: a .git
// directory or file in dir or a parent, or dir itself being a bare
// repository. GIT_DIR is honoured.
func Discover(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", abs)
	}
	if gd := os.Getenv("GIT_DIR"); gd != "" {
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(abs, gd)
		}
		// Bare when no worktree is given and the config says so
		// (newRepo reads it).
		return newRepo(filepath.Clean(gd), os.Getenv("GIT_WORK_TREE"), false)
	}
	for d := abs; ; {
		dotgit := filepath.Join(d, ".git")
		if fi, err := os.Stat(dotgit); err == nil {
			if fi.IsDir() && isGitDir(dotgit) {
				return newRepo(dotgit, d, false)
			}
			if fi.Mode().IsRegular() {
				gd, err := readGitFile(dotgit)
				if err != nil {
					return nil, err
				}
				return newRepo(gd, d, false)
			}
		}
		if isGitDir(d) {
			// A bare repository, or a git dir entered by hand.
			return newRepo(d, "", true)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil, &ErrNotRepo{Dir: abs}
		}
		d = parent
	}
}

func newRepo(gitDir, workTree string, bare bool) (*Repo, error) {
	r := &Repo{GitDir: gitDir, WorkTree: workTree}
	r.CommonDir = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		cd := strings.TrimSpace(string(b))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gitDir, cd)
		}
		r.CommonDir = filepath.Clean(cd)
	}
	if !isGitDir(r.CommonDir) {
		return nil, fmt.Errorf("%s is not a git directory", r.CommonDir)
	}
	path := filepath.Join(r.CommonDir, "config")
	cfg, err := readCommonConfig(path)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(path, cfg); err != nil {
		return nil, err
	}
	r.config = cfg
	r.Bare = bare || (workTree == "" && r.bareConfig())
	r.MainWorkTree = mainWorkTree(r)
	return r, nil
}

// bareConfig reports whether the config says core.bare = true.
func (r *Repo) bareConfig() bool {
	return strings.EqualFold(section(r.config, "core").Option("bare"), "true")
}

// mainWorkTree finds the main worktree through the common dir: every
// worktree of one repository shares it, so they all find the same view.
func mainWorkTree(r *Repo) string {
	if r.bareConfig() {
		return ""
	}
	if wt := section(r.config, "core").Option("worktree"); wt != "" {
		if !filepath.IsAbs(wt) {
			wt = filepath.Join(r.CommonDir, wt)
		}
		return filepath.Clean(wt)
	}
	if filepath.Base(r.CommonDir) == ".git" {
		return filepath.Dir(r.CommonDir)
	}
	if r.GitDir == r.CommonDir && r.WorkTree != "" {
		return r.WorkTree
	}
	if r.Bare {
		return ""
	}
	return ""
}

func isGitDir(d string) bool {
	head, err := os.ReadFile(filepath.Join(d, "HEAD"))
	if err != nil {
		return false
	}
	if !bytes.HasPrefix(head, []byte("ref: ")) && len(bytes.TrimSpace(head)) < 40 {
		return false
	}
	common := d
	if b, err := os.ReadFile(filepath.Join(d, "commondir")); err == nil {
		cd := strings.TrimSpace(string(b))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(d, cd)
		}
		common = cd
	}
	if fi, err := os.Stat(filepath.Join(common, "objects")); err != nil || !fi.IsDir() {
		return false
	}
	return true
}

func readGitFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line := strings.TrimSpace(string(b))
	if !strings.HasPrefix(line, "gitdir:") {
		return "", fmt.Errorf("%s: not a gitdir file", path)
	}
	gd := strings.TrimSpace(strings.TrimPrefix(line, "gitdir:"))
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(path), gd)
	}
	if !isGitDir(gd) {
		return "", fmt.Errorf("%s points to %s, which is not a git directory", path, gd)
	}
	return filepath.Clean(gd), nil
}

// GitConfig returns a value from the repository config (as discovery read
// it), falling back to the user's global config files, as git does for
// user.name and user.email.
func (r *Repo) GitConfig(name, key string) string {
	if v := section(r.config, name).Option(key); v != "" {
		return v
	}
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	for _, p := range []string{os.Getenv("GIT_CONFIG_GLOBAL"), filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config")} {
		if p == "" {
			continue
		}
		if cfg, err := readCommonConfig(p); err == nil {
			if v := section(cfg, name).Option(key); v != "" {
				return v
			}
		}
	}
	return ""
}

// section is cfg's section name, or an empty one when it has none. go-git's
// Config.Section adds a missing section, which is a write, and a Repo's
// config is read by several goroutines at once (orch run's house beside its
// slots).
func section(cfg *gitconfig.Config, name string) *gitconfig.Section {
	for _, s := range cfg.Sections {
		if s.IsName(name) {
			return s
		}
	}
	return &gitconfig.Section{Name: name}
}
