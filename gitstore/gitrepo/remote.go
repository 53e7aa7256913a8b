package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/internal/trace"
)

// Talking to other clones goes through the git CLI: it knows the user's
// remotes, credentials and transports, and orch never needs the network
// otherwise.

// ErrPushRejected is a push that lost a race: the remote moved since the
// fetch.
var ErrPushRejected = errors.New("push rejected: the remote's state branch moved")

// RemoteError is git failing to reach or update a remote.
type RemoteError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *RemoteError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

// remoteTimeout bounds one git command (a fetch, a push).
const remoteTimeout = 5 * time.Minute

func (r *Repo) git(args ...string) (string, error) {
	out, errText, err := r.gitBoth(args...)
	if err != nil {
		return errText, err
	}
	return out, nil
}

// gitBoth runs git like git does and returns what it wrote to stdout and
// to stderr, whether or not it failed (git push --porcelain reports each
// ref on stdout even when one was refused).
func (r *Repo) gitBoth(args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	// maintenance.auto=false: a fetch would otherwise start git's
	// automatic maintenance (a repack, seconds on a large repository) in
	// the middle of a claim; the person's own git commands still run it.
	full := append([]string{"-c", "maintenance.auto=false", "--git-dir", r.CommonDir}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if trace.On() {
		trace.Phase("git " + strings.Join(args, " "))
	}
	if err != nil {
		return out.String(), errb.String(), &RemoteError{Args: args, Stderr: errb.String(), Err: err}
	}
	return out.String(), errb.String(), nil
}

// ValidRemote refuses remote names that could be read as options or paths
// outside what git accepts as a remote name or URL.
func ValidRemote(name string) bool {
	return name != "" && !strings.HasPrefix(name, "-") && !strings.ContainsAny(name, "\x00\n\r")
}

// TrackingRef is where orch keeps the remote's state branch.
func TrackingRef(remote, ref string) string {
	return "refs/remotes/" + remote + "/" + strings.TrimPrefix(ref, "refs/heads/")
}

// Fetch fetches the remote's copy of ref and returns its commit (ZeroHash
// when the remote has no such branch).
func (r *Repo) Fetch(remote, ref string) (plumbing.Hash, error) {
	if !ValidRemote(remote) {
		return plumbing.ZeroHash, fmt.Errorf("invalid remote %q", remote)
	}
	track := TrackingRef(remote, ref)
	if !ValidRefName(track) {
		return plumbing.ZeroHash, fmt.Errorf("invalid remote %q", remote)
	}
	stderr, err := r.fetchRetrying(remote, false, "+"+ref+":"+track)
	if err == nil {
		return r.ReadRef(track)
	}
	if strings.Contains(stderr, "couldn't find remote ref") {
		return plumbing.ZeroHash, nil
	}
	return plumbing.ZeroHash, err
}

// IsAncestor reports whether commit a is b or an ancestor of b, asking git
// (its commit-graph answers it without walking a code branch's whole
// history, which can be long).
func (r *Repo) IsAncestor(a, b plumbing.Hash) bool {
	if a == b {
		return true
	}
	_, err := r.git("merge-base", "--is-ancestor", a.String(), b.String())
	return err == nil
}

// RemoteCopy returns the first remote-tracking copy of a local branch
// (refs/remotes/<remote>/<branch>, origin first), and the remote's name.
func (r *Repo) RemoteCopy(branch string) (plumbing.Hash, string) {
	for _, rem := range r.Remotes() {
		if h, err := r.ReadRef(TrackingRef(rem, "refs/heads/"+branch)); err == nil && !h.IsZero() {
			return h, rem
		}
	}
	return plumbing.ZeroHash, ""
}

// Push pushes commit h to the remote's ref, expecting the remote to be at
// expected (ZeroHash: the branch must not exist there). A lost race is
// ErrPushRejected.
func (r *Repo) Push(remote, ref string, h, expected plumbing.Hash) error {
	if !ValidRemote(remote) {
		return fmt.Errorf("invalid remote %q", remote)
	}
	lease := "--force-with-lease=" + ref + ":"
	if !expected.IsZero() {
		lease += expected.String()
	}
	stderr, err := r.git("push", "--quiet", lease, "--", remote, h.String()+":"+ref)
	if err != nil {
		if lostPushRace(stderr) {
			return ErrPushRejected
		}
		return err
	}
	// Keep the tracking ref in step, so status shows the clone in sync.
	_ = r.UpdateRef(RefUpdate{Name: TrackingRef(remote, ref), Old: mustRead(r, TrackingRef(remote, ref)), New: h, Message: "orch: push"})
	return nil
}

// PushBranch pushes commit h to the remote's branch as a fast-forward
// (never forced: work another clone pushed there is not lost), and keeps
// the remote-tracking ref in step.
func (r *Repo) PushBranch(remote, branch string, h plumbing.Hash) error {
	if !ValidRemote(remote) {
		return fmt.Errorf("invalid remote %q", remote)
	}
	ref := "refs/heads/" + branch
	if _, err := r.git("push", "--quiet", "--", remote, h.String()+":"+ref); err != nil {
		return err
	}
	_ = r.UpdateRef(RefUpdate{Name: TrackingRef(remote, ref), Old: mustRead(r, TrackingRef(remote, ref)), New: h, Message: "orch: push"})
	return nil
}

func mustRead(r *Repo, ref string) plumbing.Hash {
	h, _ := r.ReadRef(ref)
	return h
}

// lostPushRace recognises the ways git reports that the remote ref moved
// under a push: the lease failed, the update was not a fast-forward, or the
// remote could not lock the ref because another push held it.
func lostPushRace(stderr string) bool {
	for _, s := range []string{"stale info", "non-fast-forward", "fetch first", "cannot lock ref", "failed to update ref", "but expected", "incorrect old value"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// MergeBase returns a best common ancestor of a and b (ZeroHash if none),
// as git merge-base computes it. (go-git's MergeBase lives in its object
// package, whose OpenPGP dependencies add to every orch process's
// initialisation and to the binary's size; sync, the only caller, runs git
// for fetch and push anyway. See docs/storage.md.)
func (r *Repo) MergeBase(a, b plumbing.Hash) (plumbing.Hash, error) {
	if a.IsZero() || b.IsZero() {
		return plumbing.ZeroHash, nil
	}
	out, err := r.git("merge-base", a.String(), b.String())
	if err != nil {
		var re *RemoteError
		if errors.As(err, &re) && strings.TrimSpace(re.Stderr) == "" {
			return plumbing.ZeroHash, nil // exit 1, nothing said: no common ancestor
		}
		return plumbing.ZeroHash, err
	}
	if s := strings.TrimSpace(out); plumbing.IsHash(s) {
		return plumbing.NewHash(s), nil
	}
	return plumbing.ZeroHash, fmt.Errorf("git merge-base: unexpected output %q", out)
}

// DeleteRef deletes ref if it still points at old (git update-ref -d: git's
// own lockfile protocol, packed-refs included).
func (r *Repo) DeleteRef(ref string, old plumbing.Hash) error {
	if !ValidRefName(ref) {
		return fmt.Errorf("invalid ref name %q", ref)
	}
	_, err := r.git("update-ref", "-d", ref, old.String())
	return err
}

// Remotes lists the remotes configured in the repository, origin first,
// from its config as discovery read it (go-git's parser: quoting, escapes,
// subsections).
func (r *Repo) Remotes() []string {
	var out []string
	for _, sub := range section(r.config, "remote").Subsections {
		if ValidRemote(sub.Name) && !slices.Contains(out, sub.Name) {
			out = append(out, sub.Name)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i] == "origin") != (out[j] == "origin") {
			return out[i] == "origin"
		}
		return out[i] < out[j]
	})
	return out
}

// RemoteStateRef is a remote-tracking copy of the state branch.
type RemoteStateRef struct {
	Remote string
	Ref    string // refs/remotes/<remote>/<branch>
	Commit plumbing.Hash
}

// RemoteStateRefs lists the remote-tracking copies of ref (origin first).
func (r *Repo) RemoteStateRefs(ref string) []RemoteStateRef {
	if !strings.HasPrefix(ref, "refs/heads/") {
		return nil
	}
	var out []RemoteStateRef
	for _, rem := range r.Remotes() {
		tr := TrackingRef(rem, ref)
		if !ValidRefName(tr) {
			continue
		}
		if h, err := r.ReadRef(tr); err == nil && !h.IsZero() {
			out = append(out, RemoteStateRef{Remote: rem, Ref: tr, Commit: h})
		}
	}
	return out
}
