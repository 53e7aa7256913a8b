package gitrepo

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// ErrRevisionNotFound is a revision that names no commit here.
type ErrRevisionNotFound struct{ Rev string }

func (e *ErrRevisionNotFound) Error() string {
	return fmt.Sprintf("%s names no commit in this repository", e.Rev)
}

// ErrAmbiguousRevision is a short hash that more than one commit starts
// with.
type ErrAmbiguousRevision struct {
	Rev     string
	Commits []plumbing.Hash
}

func (e *ErrAmbiguousRevision) Error() string {
	return fmt.Sprintf("the short hash %s is ambiguous: %d commits start with it", e.Rev, len(e.Commits))
}

// ResolveRevision returns the commit a revision names (orch respond
// --commit HEAD, abc1234, task/T-x~1), as git rev-parse resolves it from
// this worktree, whose HEAD is its own in a linked worktree too. It is
// git's own parser: every form git takes works as in git, and a person's
// typing never needs a parser of orch's (one git process, on a verb that
// is rare).
func (r *Repo) ResolveRevision(rev string) (plumbing.Hash, error) {
	if rev == "" || strings.ContainsAny(rev, "\x00\n") {
		return plumbing.ZeroHash, &ErrRevisionNotFound{Rev: rev}
	}
	cmd := exec.Command("git", "--git-dir", r.GitDir, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}")
	cmd.Env = []string{"LC_ALL=C"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "LC_ALL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	h := strings.TrimSpace(out.String())
	if err == nil && plumbing.IsHash(h) {
		return plumbing.NewHash(h), nil
	}
	if said := errb.String(); strings.Contains(said, "is ambiguous") {
		amb := &ErrAmbiguousRevision{Rev: rev}
		// hint:   <hash> commit <date> - <subject>, one a candidate.
		for _, line := range strings.Split(said, "\n") {
			if f := strings.Fields(strings.TrimPrefix(line, "hint:")); len(f) >= 2 && f[1] == "commit" {
				amb.Commits = append(amb.Commits, plumbing.NewHash(f[0]))
			}
		}
		return plumbing.ZeroHash, amb
	}
	return plumbing.ZeroHash, &ErrRevisionNotFound{Rev: rev}
}
