package workflow

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/lazyregexp"

	"github.com/orch-tool/orch/taskfile"
)

// Claims across machines are won on the remote, one ref per task
// (refs/orch/claims/<id>, gitrepo/claimrefs.go): a claim ref points at the
// state-branch commit that records the claim, whose trailers say who
// claimed, which attempt it is and when its lease ends. Until the state
// branch holds the claim too, the ref is what tells other clones the task
// is taken.

// remoteClaim is a claim ref as this clone fetched it.
type remoteClaim struct {
	ID      string
	Commit  plumbing.Hash
	By      string
	Attempt int
	Until   time.Time // when its lease ends (zero: unknown, taken as now)
	// ClaimedAt is when the claim was made (zero: a claim ref of an orch
	// that did not say). Attempt numbers are counted on each clone's state
	// branch, so two clones that never saw each other's claim can both
	// make attempt 1 of a task: the actor, the attempt and this time
	// together name one claim.
	ClaimedAt time.Time
}

// isClaim reports whether the claim ref names the claim t records.
func (rc *remoteClaim) isClaim(t *taskfile.Task) bool {
	return t.Queue == taskfile.Claimed && t.ClaimedBy == rc.By && t.Attempts == rc.Attempt &&
		(rc.ClaimedAt.IsZero() || t.ClaimedAt.Equal(rc.ClaimedAt))
}

// readRemoteClaims reads the claim commits the fetch brought. A ref that
// does not point at a claim commit orch wrote is ignored (and never
// dropped): it holds nothing.
func readRemoteClaims(st *gitstore.Store, refs map[string]plumbing.Hash) map[string]*remoteClaim {
	out := map[string]*remoteClaim{}
	for id, h := range refs {
		c, err := st.ReadCommit(h)
		if err != nil {
			continue
		}
		tr := gitstore.ParseTrailers(c.Message)
		// A claim, or a renewal of it that orch heartbeat --sync moved
		// the ref to (the same attempt, a later lease).
		if action := Action(tr.Get(gitstore.TrailerAction)); tr.Get(gitstore.TrailerTask) != id || (action != ActionClaim && action != ActionHeartbeat) {
			continue
		}
		rc := &remoteClaim{ID: id, Commit: h, By: tr.Get(gitstore.TrailerActor)}
		rc.Attempt, _ = strconv.Atoi(tr.Get(gitstore.TrailerAttempt))
		rc.Until, _ = taskfile.ParseTime(tr.Get(gitstore.TrailerLeaseUntil))
		rc.ClaimedAt, _ = taskfile.ParseTime(tr.Get(gitstore.TrailerClaimedAt))
		out[id] = rc
	}
	return out
}

// unknownClaimer holds a claim ref this clone lost but has not fetched.
const unknownClaimer = "another clone"

// claimState says what the state branch (as this engine has it) knows of
// a remote claim: "pending" (it does not hold the claim yet: the ref is
// what says the task is taken), "held" (it holds the claim, still
// claimed), "ended" (it holds the claim and the task has moved on, or a
// later claim: the ref is stale).
//
// A claim the state names (actor, attempt and time) is held; one with a
// later attempt than the state knows is pending. Otherwise the state may
// hold the claim and have moved on (ended), or never have seen it (another
// clone's claim of the same attempt number): the claim commit's ancestry
// tells, since a state branch that holds a claim holds its commit. A claim
// the state has not seen is pending while its lease runs, and ended once
// it has run out (the task is anyone's again, as a lease promises).
func (e *Engine) claimState(rc *remoteClaim) string {
	s := e.tasks().SummaryByID(rc.ID)
	if s == nil || s.Task.Attempts < rc.Attempt {
		return "pending"
	}
	if rc.isClaim(&s.Task) {
		return "held"
	}
	if e.Store != nil && e.Now().Before(rc.Until) && !e.Store.Repo.IsAncestor(rc.Commit, e.Store.Snapshot().Tip) {
		return "pending"
	}
	return "ended"
}

// holderVerbs are the verbs of a task's claimant.
var holderVerbs = map[Action]bool{ActionSubmit: true, ActionPause: true, ActionRespond: true, ActionRefuse: true, ActionHeartbeat: true, ActionFail: true}

// claimRefLost refuses a claimant's verb (holderVerbs) when the remote's
// claim ref names another claim of the task that this clone's state has not
// seen: a takeover of an expired lease on another clone. The claim ref
// decides, so the old holder's heartbeat, submit, pause or respond through
// the remote is refused (exit 4, naming the new holder), never pushed over
// the new claim. nil when no claim ref was fetched for the task (a verb
// without --sync decides nothing across clones).
func (e *Engine) claimRefLost(t *taskfile.Task, verb Action) error {
	rc := e.remoteClaims[t.ID]
	if rc == nil || !holderVerbs[verb] || rc.By == unknownClaimer || rc.isClaim(t) || e.claimState(rc) != "pending" {
		return nil
	}
	return &RuleError{Rule: "claim_lost",
		Msg:  fmt.Sprintf("%s is claimed by %s now (attempt %d, claim ref %s on the remote): your claim of it has ended, and nothing of yours was shared", t.ID, rc.By, rc.Attempt, rc.Commit.String()[:12]),
		Next: Next{Advice: AdviseClaimLost, Task: t.ID}}
}

// pendingClaim returns the live claim another clone holds on the remote
// for a task whose claim the state branch does not record yet (nil when
// there is none, or its lease ran out).
func (e *Engine) pendingClaim(id string) *remoteClaim {
	rc := e.remoteClaims[id]
	if rc == nil || e.claimState(rc) != "pending" || !e.Now().Before(rc.Until) {
		return nil
	}
	return rc
}

// staleClaims are the claim refs the state branch shows have ended: a
// sync that pushed that state removes them from the remote.
func (e *Engine) staleClaims() map[string]plumbing.Hash {
	out := map[string]plumbing.Hash{}
	for id, rc := range e.remoteClaims {
		if e.claimState(rc) == "ended" {
			out[id] = rc.Commit
		}
	}
	return out
}

// leaseTrailers are what a claim commit, and a heartbeat's that renews it,
// say for the claim refs: the attempt, when the claim was made and when
// its lease ends.
func leaseTrailers(attempt int, claimedAt, until time.Time) gitstore.Trailers {
	return gitstore.Trailers{{Key: gitstore.TrailerAttempt, Value: strconv.Itoa(attempt)},
		{Key: gitstore.TrailerClaimedAt, Value: taskfile.FormatTime(claimedAt)},
		{Key: gitstore.TrailerLeaseUntil, Value: taskfile.FormatTime(until)}}
}

// claimArbiter is the configured arbiter of claims across machines.
func (e *Engine) claimArbiter() string {
	if e.Config.ClaimArbiter == config.ArbiterClaimRef {
		return config.ArbiterClaimRef
	}
	return config.ArbiterStateBranch
}

// remoteClaimMsg is why a task with a pending remote claim is not ready.
func remoteClaimMsg(rc *remoteClaim) string {
	return fmt.Sprintf("it is claimed by %s on the remote (claim ref %s), whose lease runs until %s", rc.By, rc.Commit.String()[:12], taskfile.FormatTime(rc.Until))
}

// claimArbiterLine is config.yaml's claim_arbiter line (its value, before
// any comment); formatLine its format line.
var (
	claimArbiterLine = lazyregexp.New(`(?m)^claim_arbiter:[ \t]*[A-Za-z_"']*`)
	formatLine       = lazyregexp.New(`(?m)^format:[ \t]*[0-9"']*`)
)

// MigrateClaims moves a repository to claim refs (orch doctor
// --migrate-claims): config.yaml's format becomes 2, so that an orch that
// does not know claim refs refuses to write here, and claim_arbiter
// claim_ref (a claim_arbiter line is rewritten; without one, format 2's
// default is claim_ref). The rest of the file is kept byte for byte. It is
// a human's decision (every clone must run an orch that knows the format),
// committed here and shared by the next sync. The commit is zero when the
// repository was moved already.
func (e *Engine) MigrateClaims() (*Result, error) {
	if err := e.requireHuman("doctor --migrate-claims", "", "choosing how claims are decided across machines"); err != nil {
		return nil, err
	}
	t, err := e.EditStart("config")
	if err != nil {
		return nil, err
	}
	if e.Config.Format >= config.FormatClaimRefs && e.claimArbiter() == config.ArbiterClaimRef {
		return &Result{}, nil
	}
	data := string(t.Data)
	format := fmt.Sprintf("format: %d", config.FormatClaimRefs)
	if formatLine().MatchString(data) {
		data = formatLine().ReplaceAllLiteralString(data, format)
	} else {
		// Before the first setting, after the file's opening comments.
		at := 0
		for at < len(data) && (data[at] == '#' || data[at] == '\n') {
			nl := strings.IndexByte(data[at:], '\n')
			if nl < 0 {
				at = len(data)
				break
			}
			at += nl + 1
		}
		if at == len(data) && data != "" && !strings.HasSuffix(data, "\n") {
			data += "\n"
		}
		data = data[:at] + format + "                  # the repository format: an orch that does not know it never writes here\n" + data[at:]
	}
	data = claimArbiterLine().ReplaceAllLiteralString(data, "claim_arbiter: "+config.ArbiterClaimRef)
	return e.EditFinish(t, []byte(data))
}

// renewClaimRef moves the remote's claim ref of task id to commit, the
// heartbeat that renewed this actor's lease, so that other clones judge
// the claim by the renewed lease even while the remote's state branch does
// not hold it (claim_arbiter claim_ref, or a state push that keeps losing).
// Only a ref that holds this actor's claim of the same attempt is moved,
// and only if it still holds what the fetch saw (a push with a lease);
// without one there is nothing to renew (moved is false).
func (e *Engine) renewClaimRef(remote, id string, t *taskfile.Task, commit plumbing.Hash) (moved bool, err error) {
	rc := e.remoteClaims[id]
	if rc == nil || !rc.isClaim(t) || rc.Commit == commit {
		return false, nil // no claim ref, another claim of the task, or this very renewal
	}
	if err := e.Store.Repo.PushClaim(remote, id, commit, rc.Commit); err != nil {
		return false, err
	}
	return true, nil
}
