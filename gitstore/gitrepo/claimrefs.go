package gitrepo

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/privfile"
)

// Claim refs: across machines, a claim is won on the remote on a ref of its
// own, refs/orch/claims/<task id>, pushed only if absent (or only if it
// still holds the stale claim being taken over). Claims of different tasks
// never touch the same ref, so they never wait for each other; the state
// branch records the claim afterwards (docs/design.md §2, docs/storage.md).

// claimRefPrefix is where claim refs live on a remote.
const claimRefPrefix = "refs/orch/claims/"

// ClaimRef is the remote's claim ref of a task.
func ClaimRef(id string) string { return claimRefPrefix + id }

// claimTrackingPrefix is where a fetch keeps the remote's claim refs.
func claimTrackingPrefix(remote string) string { return "refs/orch/remotes/" + remote + "/claims/" }

// FetchedState is what one fetch learnt of a remote: the state branch's
// tip (ZeroHash when the remote has none) and its claim refs by task id.
type FetchedState struct {
	Tip    plumbing.Hash
	Claims map[string]plumbing.Hash
}

// FetchState fetches, in one round trip, the remote's state branch ref
// into its tracking ref, the remote's claim refs (pruning the ones it no
// longer has) and the task branches (refs/heads/<prefix>*), so that a
// claim here can continue the work another clone pushed. Nothing else is
// fetched.
func (r *Repo) FetchState(remote, ref, prefix string) (*FetchedState, error) {
	track := TrackingRef(remote, ref)
	if !ValidRemote(remote) || !ValidRefName(track) || !ValidRefName(claimTrackingPrefix(remote)+"x") ||
		prefix == "" || !ValidRefName("refs/heads/"+prefix+"x") {
		return nil, fmt.Errorf("invalid remote %q or prefix %q", remote, prefix)
	}
	specs := []string{
		"+" + ref + ":" + track,
		"+" + claimRefPrefix + "*:" + claimTrackingPrefix(remote) + "*",
		"+refs/heads/" + prefix + "*:refs/remotes/" + remote + "/" + prefix + "*",
	}
	stderr, err := r.fetchRetrying(remote, true, specs...)
	if err != nil && strings.Contains(stderr, "couldn't find remote ref") {
		// No state branch there yet: nothing else to learn either.
		r.markFetched(remote)
		return &FetchedState{Claims: map[string]plumbing.Hash{}}, nil
	}
	if err != nil {
		return nil, err
	}
	r.markFetched(remote)
	return r.LastFetchedState(remote, ref)
}

// LastFetchedState is what the last FetchState of the remote learnt, as
// this clone keeps it (no round trip).
func (r *Repo) LastFetchedState(remote, ref string) (*FetchedState, error) {
	track := TrackingRef(remote, ref)
	var err error
	fs := &FetchedState{}
	if fs.Tip, err = r.ReadRef(track); err != nil {
		return nil, err
	}
	if fs.Claims, err = r.FetchedClaims(remote); err != nil {
		return nil, err
	}
	return fs, nil
}

// fetchedStamp is the stamp whose time says when this clone last fetched
// the remote's state (one per remote, named by a hash of the remote's name,
// which may be a URL).
func fetchedStamp(remote string) string {
	return fmt.Sprintf("fetched-%x", sha1.Sum([]byte(remote)))[:len("fetched-")+16]
}

// markFetched records that the remote's state was fetched now. A stamp that
// cannot be written only makes the next claim fetch again.
func (r *Repo) markFetched(remote string) { r.MarkStamp(fetchedStamp(remote)) }

// MarkStamp sets the private stamp name (a file in <git common dir>/orch/
// whose modification time is all it holds) to now. A stamp that cannot be
// written is as if it were never set.
func (r *Repo) MarkStamp(name string) {
	p := filepath.Join(r.CommonDir, "orch", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	// A private-state file like any other: never through a link.
	f, err := privfile.Open(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	now := time.Now()
	_ = os.Chtimes(p, now, now)
}

// FetchedAt is when this clone last fetched the remote's state (zero:
// never, or unknown).
func (r *Repo) FetchedAt(remote string) time.Time { return r.StampTime(fetchedStamp(remote)) }

// StampTime is when MarkStamp last set stamp name (zero: never, or a link
// in its place).
func (r *Repo) StampTime(name string) time.Time {
	fi, err := os.Lstat(filepath.Join(r.CommonDir, "orch", name))
	if err != nil || !fi.Mode().IsRegular() {
		return time.Time{}
	}
	return fi.ModTime()
}

// FetchedClaims are the remote's claim refs as the last fetch saw them.
func (r *Repo) FetchedClaims(remote string) (map[string]plumbing.Hash, error) {
	prefix := claimTrackingPrefix(remote)
	refs, err := r.refsUnder(prefix)
	if err != nil {
		return nil, err
	}
	claims := make(map[string]plumbing.Hash, len(refs))
	for name, h := range refs {
		claims[strings.TrimPrefix(name, prefix)] = h
	}
	return claims, nil
}

// fetchRetrying runs git fetch with the refspecs, retrying what a
// concurrent fetch of the same clone causes (see Fetch).
func (r *Repo) fetchRetrying(remote string, prune bool, specs ...string) (string, error) {
	args := []string{"fetch", "--quiet", "--no-tags"}
	if prune {
		args = append(args, "--prune")
	}
	args = append(append(args, "--", remote), specs...)
	for attempt := 0; ; attempt++ {
		stderr, err := r.git(args...)
		if err == nil {
			return "", nil
		}
		// Another orch process of this clone is fetching into the same
		// tracking ref: wait for it and fetch again.
		if strings.Contains(stderr, "cannot lock ref") && attempt < 20 {
			time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
			continue
		}
		// git checks that what it fetched connects to every local ref
		// (rev-list --not --all). Once, with three orch processes of one
		// clone claiming at once (sync_claim_race.txtar, 1 run in about
		// 80), that check died on "bad object refs/heads/task/..." for a
		// task branch another process was creating or dropping. A fetch is
		// idempotent: try again; a real damage fails every time.
		if strings.Contains(stderr, "did not send all necessary objects") && attempt < 3 {
			time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
			continue
		}
		return stderr, err
	}
}

// PushClaim makes the remote's claim ref of a task point at h, only if it
// is absent there (stale zero) or still holds stale: one round trip, and
// ErrClaimTaken when another clone's claim is there.
func (r *Repo) PushClaim(remote, id string, h, stale plumbing.Hash) error {
	_, err := r.pushLeased(remote, map[string][2]plumbing.Hash{ClaimRef(id): {h, stale}})
	if err == ErrPushRejected {
		return ErrClaimTaken
	}
	if err == nil {
		r.trackClaim(remote, id, h)
	}
	return err
}

// trackClaim keeps this clone's copy of the remote's claim ref of a task in
// step with what a push just made it (ZeroHash: deleted), as a fetch would:
// the next command judges the remote's claims by it without fetching.
func (r *Repo) trackClaim(remote, id string, h plumbing.Hash) {
	name := claimTrackingPrefix(remote) + id
	if !ValidRefName(name) {
		return
	}
	old := mustRead(r, name)
	if h.IsZero() {
		if !old.IsZero() {
			_ = r.DeleteRef(name, old)
		}
		return
	}
	_ = r.UpdateRef(RefUpdate{Name: name, Old: old, New: h, Message: "orch: push"})
}

// PushClaimAndState pushes, in one round trip, a claim's commit h to the
// task's claim ref (only if it is absent, or still holds stale) and the
// state branch ref to state (only if the remote is still at expected; not
// pushed when state is expected). Not atomically: the claim ref decides the
// claim (claimErr ErrClaimTaken when another clone's claim is there); the
// state branch is shared when no other clone moved it since this one
// fetched (else stateErr ErrPushRejected: it catches up at a later push).
// state must not hold the claim itself: a state branch that took a claim
// whose ref was lost would record it for good. Any other failure is err.
func (r *Repo) PushClaimAndState(remote, id string, h, stale plumbing.Hash, ref string, state, expected plumbing.Hash) (claimErr, stateErr, err error) {
	claim := ClaimRef(id)
	upd := map[string][2]plumbing.Hash{claim: {h, stale}}
	if !state.IsZero() && state != expected {
		upd[ref] = [2]plumbing.Hash{state, expected}
	}
	out, errText, err := r.pushPorcelain(remote, upd)
	// Each ref's line: "<flag>\t<from>:<to>\t<summary>"; flag '!' is a
	// refused ref, its summary "[rejected] (stale info)" a lost lease, and
	// "[remote rejected] (...)" the remote's refusal (a hook, a lock).
	outcome := map[string]error{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 3 || len(f[0]) != 1 {
			continue
		}
		_, to, _ := strings.Cut(f[1], ":")
		if to != claim && to != ref {
			continue
		}
		switch {
		case f[0] != "!":
			outcome[to] = nil
		case strings.HasPrefix(f[2], "[rejected]") || lostPushRace(f[2]):
			outcome[to] = ErrPushRejected
		default:
			outcome[to] = fmt.Errorf("%s refused %s: %s: %s", remote, to, f[2], strings.TrimSpace(errText))
		}
	}
	claimOut, claimSeen := outcome[claim]
	stateOut, stateSeen := outcome[ref]
	if _, pushed := upd[ref]; !pushed {
		stateSeen = true
	}
	if !claimSeen || !stateSeen {
		if err == nil {
			err = fmt.Errorf("git push did not report both refs: %s", strings.TrimSpace(out+errText))
		}
		return nil, nil, err
	}
	switch claimOut {
	case nil:
		r.trackClaim(remote, id, h)
	case ErrPushRejected:
		claimErr = ErrClaimTaken
	default:
		return nil, nil, claimOut
	}
	if _, pushed := upd[ref]; pushed {
		if stateErr = stateOut; stateErr == nil {
			_ = r.UpdateRef(RefUpdate{Name: TrackingRef(remote, ref), Old: mustRead(r, TrackingRef(remote, ref)), New: state, Message: "orch: push"})
		}
	}
	return claimErr, stateErr, nil
}

// ErrClaimTaken is a claim ref push refused because another clone's claim
// is there.
var ErrClaimTaken = errors.New("another clone holds the claim ref")

// PushClaimWithState pushes a claim's commit h to the task's claim ref (only
// if it is absent, or still holds stale) and to the state branch ref (only
// if the remote is still at expected), atomically: both move or neither.
// ErrClaimTaken when the claim ref was refused, ErrPushRejected when the
// state branch moved.
func (r *Repo) PushClaimWithState(remote, id string, h, stale plumbing.Hash, ref string, expected plumbing.Hash) error {
	stderr, err := r.pushLeased(remote, map[string][2]plumbing.Hash{ClaimRef(id): {h, stale}, ref: {h, expected}}, "--atomic")
	if err == ErrPushRejected {
		// git names each refused ref with its reason; the refs refused only
		// because another one was say "atomic".
		for _, line := range strings.Split(stderr, "\n") {
			if strings.Contains(line, "-> "+ClaimRef(id)+" ") && !strings.Contains(line, "atomic") {
				return ErrClaimTaken
			}
		}
	}
	if err == nil {
		_ = r.UpdateRef(RefUpdate{Name: TrackingRef(remote, ref), Old: mustRead(r, TrackingRef(remote, ref)), New: h, Message: "orch: push"})
		r.trackClaim(remote, id, h)
	}
	return err
}

// DropClaims deletes the remote's claim refs of the given tasks, each only
// if it still holds the commit given: one round trip for all of them. A
// ref that moved meanwhile is left alone (someone claimed the task again).
func (r *Repo) DropClaims(remote string, claims map[string]plumbing.Hash) error {
	if len(claims) == 0 {
		return nil
	}
	upd := map[string][2]plumbing.Hash{}
	for id, h := range claims {
		upd[ClaimRef(id)] = [2]plumbing.Hash{plumbing.ZeroHash, h}
	}
	_, err := r.pushLeased(remote, upd)
	if err == ErrPushRejected {
		return nil
	}
	if err == nil {
		for id := range claims {
			r.trackClaim(remote, id, plumbing.ZeroHash)
		}
	}
	return err
}

// pushLeased pushes each ref to its new value (ZeroHash: delete) only if
// the remote holds the old one (ZeroHash: absent); it returns what git
// said.
func (r *Repo) pushLeased(remote string, upd map[string][2]plumbing.Hash, opts ...string) (string, error) {
	args, err := leasedPushArgs(remote, upd, opts...)
	if err != nil {
		return "", err
	}
	out, err := r.git(args...)
	if err != nil {
		if lostPushRace(out) {
			return out, ErrPushRejected
		}
		return out, err
	}
	return "", nil
}

// pushPorcelain is pushLeased, not atomic, reporting each ref on stdout
// (git push --porcelain); err is set when git failed, even if only
// because a ref was refused.
func (r *Repo) pushPorcelain(remote string, upd map[string][2]plumbing.Hash) (stdout, stderr string, err error) {
	args, err := leasedPushArgs(remote, upd, "--porcelain")
	if err != nil {
		return "", "", err
	}
	return r.gitBoth(args...)
}

// leasedPushArgs is the git push command line that moves each ref to its
// new value only if the remote holds the old one.
func leasedPushArgs(remote string, upd map[string][2]plumbing.Hash, opts ...string) ([]string, error) {
	if !ValidRemote(remote) {
		return nil, fmt.Errorf("invalid remote %q", remote)
	}
	args := []string{"push"}
	if !slices.Contains(opts, "--porcelain") {
		// (--quiet would silence the porcelain report of each ref.)
		args = append(args, "--quiet")
	}
	args = append(args, opts...)
	var specs []string
	for ref, nv := range upd {
		if !ValidRefName(ref) {
			return nil, fmt.Errorf("invalid ref name %q", ref)
		}
		lease := "--force-with-lease=" + ref + ":"
		if !nv[1].IsZero() {
			lease += nv[1].String()
		}
		args = append(args, lease)
		if nv[0].IsZero() {
			specs = append(specs, ":"+ref)
		} else {
			specs = append(specs, nv[0].String()+":"+ref)
		}
	}
	return append(append(args, "--", remote), specs...), nil
}
