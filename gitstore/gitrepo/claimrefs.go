package gitrepo

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Claim refs: across machines, a claim is won on the remote on a ref of its
// own, refs/orch/claims/<task id>, pushed only if absent (or only if it
// still holds the stale claim being taken over). Claims of different tasks
// never touch the same ref, so they never wait for each other; the state
// branch records the claim afterwards (DESIGN §8, docs/storage.md).

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
		return &FetchedState{Claims: map[string]plumbing.Hash{}}, nil
	}
	if err != nil {
		return nil, err
	}
	fs := &FetchedState{}
	if fs.Tip, err = r.ReadRef(track); err != nil {
		return nil, err
	}
	if fs.Claims, err = r.FetchedClaims(remote); err != nil {
		return nil, err
	}
	return fs, nil
}

// FetchedClaims are the remote's claim refs as the last fetch saw them.
func (r *Repo) FetchedClaims(remote string) (map[string]plumbing.Hash, error) {
	claims := map[string]plumbing.Hash{}
	out, err := r.git("for-each-ref", "--format=%(objectname) %(refname)", claimTrackingPrefix(remote))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		sha, name, ok := strings.Cut(line, " ")
		if ok && plumbing.IsHash(sha) {
			claims[strings.TrimPrefix(name, claimTrackingPrefix(remote))] = plumbing.NewHash(sha)
		}
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
	return err
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
	return err
}

// pushLeased pushes each ref to its new value (ZeroHash: delete) only if
// the remote holds the old one (ZeroHash: absent); it returns what git
// said.
func (r *Repo) pushLeased(remote string, upd map[string][2]plumbing.Hash, opts ...string) (string, error) {
	if !ValidRemote(remote) {
		return "", fmt.Errorf("invalid remote %q", remote)
	}
	args := append([]string{"push", "--quiet"}, opts...)
	var specs []string
	for ref, nv := range upd {
		if !ValidRefName(ref) {
			return "", fmt.Errorf("invalid ref name %q", ref)
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
	args = append(append(args, "--", remote), specs...)
	out, err := r.git(args...)
	if err != nil {
		if lostPushRace(out) {
			return out, ErrPushRejected
		}
		return out, err
	}
	return "", nil
}
