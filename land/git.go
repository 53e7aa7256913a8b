package land

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/internal/trace"
)

// git runs git in dir (a worktree), or on the repository when dir is "",
// as the lead, with nothing of the caller's git environment; it returns
// stdout, or stderr with the error. Landing commits skip the commit hooks
// (--no-verify: nobody is there to answer one), never the repository's
// merge drivers and attributes, which are config, not hooks.
func (l *lander) git(dir string, args ...string) (string, error) {
	full := append([]string{"-c", "maintenance.auto=false"}, args...)
	if dir == "" {
		full = append([]string{"--git-dir", l.o.CommonDir}, full...)
	}
	cmd := exec.Command("git", full...)
	cmd.Dir = dir
	env := []string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_EDITOR=true", "GIT_AUTHOR_NAME=" + l.o.Name, "GIT_AUTHOR_EMAIL=" + l.o.Email,
		"GIT_COMMITTER_NAME=" + l.o.Name, "GIT_COMMITTER_EMAIL=" + l.o.Email}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "LC_ALL=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if trace.On() {
		trace.Phase("git " + strings.Join(args, " "))
	}
	if err != nil {
		said := errb.String() + out.String()
		return said, &GitError{Args: args, Err: err, Said: said}
	}
	return out.String(), nil
}

// GitError is a git command that failed, with what it said.
type GitError struct {
	Args []string
	Err  error
	Said string
}

func (e *GitError) Error() string {
	verb := ""
	if len(e.Args) > 0 {
		verb = " " + e.Args[0]
	}
	return fmt.Sprintf("git%s: %v: %s", verb, e.Err, text.Clip(text.OneLine(strings.TrimSpace(e.Said)), 300))
}

func (e *GitError) Unwrap() error { return e.Err }

// clipLines keeps the last max lines of s, at most n bytes, marking a cut.
func clipLines(s string, max, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	cut := false
	if len(lines) > max {
		lines, cut = lines[len(lines)-max:], true
	}
	out := strings.Join(lines, "\n")
	if len(out) > n {
		out, cut = out[len(out)-n:], true
		if i := strings.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
	}
	if cut {
		out = "(earlier lines cut)\n" + out
	}
	return out
}

// TrialConflicts merges tip into base without a worktree (git merge-tree)
// and lists the files that would conflict: what orch land --dry-run shows.
func TrialConflicts(commonDir, base, tip string) ([]string, error) {
	l := &lander{o: Options{CommonDir: commonDir}}
	out, err := l.git("", "merge-tree", "--write-tree", "--name-only", "--no-messages", "refs/heads/"+base, tip)
	if err == nil {
		return nil, nil
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || len(lines[0]) < 40 {
		return nil, fmt.Errorf("git merge-tree failed: %s", text.Clip(strings.TrimSpace(out), 200))
	}
	return lines[1:], nil
}
