package workflow

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// ClaimOptions select what to claim.
type ClaimOptions struct {
	Task string // a specific task (ID or prefix); "" takes the next ready one
	Role string // the agent's role; "" uses the roster, else default_role
}

// ClaimResult is a successful claim.
type ClaimResult struct {
	Result
	Branch       string
	BranchReused bool
	BranchNote   string
	Attempt      int
	TookOverFrom string // the claimant whose lease ran out, when the claim took its task over
}

// agentRoles returns the roles the actor claims as: its roles in the
// roster, which role may narrow but never widen; without a roster entry,
// role, else the default role.
func (e *Engine) agentRoles(role string) ([]string, error) {
	r := e.Config.RolesOf(e.Actor)
	switch {
	case role != "" && len(r) > 0 && !slices.Contains(r, role):
		return nil, &RuleError{Rule: "role", Msg: fmt.Sprintf("%s claims as %s (agents: in config.yaml); --role may narrow that, never widen it", e.Actor, strings.Join(r, ", ")),
			Next: Next{Advice: AdviseListReady}}
	case role != "":
		return []string{role}, nil
	case len(r) > 0:
		return r, nil
	}
	return []string{e.Config.DefaultRole}, nil
}

// whyNot returns why the agent may not claim s now ("" when it may).
func (e *Engine) whyNot(s *gitstore.Summary, roles []string) (rule, msg string) {
	t := &s.Task
	if s.Problem != "" {
		return "invalid", "its file does not parse"
	}
	if e.tasks().BrokenFile(s.Path) != nil || e.tasks().Conflicted(s.Path) != nil {
		return "hand_edit", "its view file has an uncommitted hand edit"
	}
	if _, ok := claimQueueRank[t.Queue]; !ok {
		return "queue", "it is " + string(t.Queue)
	}
	if t.Queue == taskfile.Claimed && !e.leaseExpired(s) {
		if t.ClaimedBy == e.Actor {
			return "claimed", "you have claimed it already"
		}
		return "claimed", fmt.Sprintf("it is claimed by %s, whose lease runs until %s", t.ClaimedBy, taskfile.FormatTime(e.leaseEnd(s)))
	}
	if rc := e.pendingClaim(t.ID); rc != nil {
		return "claimed", remoteClaimMsg(rc)
	}
	if ok, pending := e.DepsDone(t); !ok {
		return "dependencies", "it waits for " + strings.Join(pending, ", ")
	}
	return e.notForActor(t, roles)
}

// notForActor returns the rule of whyNot that refuses t to this actor in
// particular (role, assignment, lockout), "" when none does. It needs no
// lookup among other tasks, so a claim checks it first.
func (e *Engine) notForActor(t *taskfile.Task, roles []string) (rule, msg string) {
	switch {
	case t.Role != "" && !slices.Contains(roles, t.Role):
		return "role", fmt.Sprintf("it is for role %s, and you claim as %s", t.Role, strings.Join(roles, ", "))
	case t.AssignedTo != "" && t.AssignedTo != e.Actor:
		return "assigned", "it is assigned to " + t.AssignedTo
	case slices.Contains(t.LockedOut, e.Actor):
		return "lockout", e.Actor + " is locked out of it after a rejection"
	}
	return "", ""
}

// Claim takes the next ready task (or the named one) for the actor.
// Exactly one claimer wins a task: orch processes are serialised by the
// store lock and every rule is checked again at the tip the claim commits
// on.
func (e *Engine) Claim(opts ClaimOptions) (*ClaimResult, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	target, roles, err := e.claimTarget(opts)
	if err != nil {
		return nil, err
	}
	out := &ClaimResult{}
	res, err := e.transition(target, "claim", e.claimStep(roles, e.ensureBranch, out))
	if err != nil {
		return nil, err
	}
	out.Result = *res
	return out, nil
}

// claimTarget picks what a claim takes: the named task, if the actor may
// take it, else the first in claim order it may; and the roles it claims
// as. It reads tasks only through the TaskIndex (opts.Task is then an ID).
func (e *Engine) claimTarget(opts ClaimOptions) (string, []string, error) {
	roles, err := e.agentRoles(opts.Role)
	if err != nil {
		return "", nil, err
	}
	if opts.Task == "" {
		next, reasons := e.nextClaimable(roles)
		if next == nil {
			return "", nil, &NothingToClaimError{Reasons: reasons}
		}
		return next.Task.ID, roles, nil
	}
	s, err := e.Find(opts.Task)
	if err != nil {
		return "", nil, err
	}
	if err := CheckTransition("claim", s.Task.ID, s.Task.Queue); err != nil {
		return "", nil, err
	}
	if err := e.editable(s); err != nil {
		return "", nil, err // a broken or conflicted file: the same answer as every verb
	}
	if rule, msg := e.whyNot(s, roles); rule != "" {
		return "", nil, &RuleError{Rule: rule, Msg: fmt.Sprintf("cannot claim %s: %s", s.Task.ID, msg), Next: claimNext(rule, s.Task.ID)}
	}
	return s.Task.ID, roles, nil
}

// claimStep is the claim's transition: the rules again, at the tip the
// claim commits on, then the claim itself, on the branch branchOf decides
// (ensureBranch; the rule suite's tasks in memory have no repository to
// make one in). It fills out.
func (e *Engine) claimStep(roles []string, branchOf func(*Task) (string, bool, string, func() error, error), out *ClaimResult) func(t *Task) (*change, error) {
	return func(t *Task) (*change, error) {
		if rule, msg := e.whyNot(t.Summary, roles); rule != "" {
			return nil, &RuleError{Rule: rule, Msg: fmt.Sprintf("cannot claim %s: %s", t.Task.ID, msg), Next: claimNext(rule, t.Task.ID)}
		}
		branch, reused, note, create, err := branchOf(t)
		if err != nil {
			return nil, err
		}
		out.Branch, out.BranchReused, out.BranchNote = branch, reused, note
		out.Attempt = t.Task.Attempts + 1
		// One time for the file and the trailers: with the actor and the
		// attempt it names the claim (remoteClaim.isClaim).
		now := e.Now()
		edits := []taskfile.Edit{
			taskfile.Set(taskfile.KeyClaimedBy, taskfile.String(e.Actor)),
			taskfile.Set(taskfile.KeyClaimedAt, taskfile.Time(now)),
			taskfile.Unset(taskfile.KeyHeartbeatAt),
			taskfile.Set(taskfile.KeyAttempts, taskfile.Int(out.Attempt)),
			taskfile.Set(taskfile.KeyBranch, taskfile.String(branch)),
		}
		if !slices.Contains(t.Task.WorkedBy, e.Actor) {
			edits = append(edits, taskfile.Set(taskfile.KeyWorkedBy, taskfile.ListOf(append(append([]string(nil), t.Task.WorkedBy...), e.Actor))))
		}
		f := t.File
		data := &ClaimData{Branch: branch, BranchReused: reused, Attempt: out.Attempt, PRNumber: t.Task.PRNumber}
		body := fmt.Sprintf("Claimed by %s (attempt %d)", e.Actor, out.Attempt)
		if t.Task.Queue == taskfile.Claimed {
			// A lease that ran out: taken over, and said so where the next
			// prompt reads it.
			if f, err = f.AddSection(e.takeoverNote(t)); err != nil {
				return nil, err
			}
			data.TookOverFrom = t.Task.ClaimedBy
			data.LeaseEnded = taskfile.FormatTime(e.leaseEnd(t.Summary))
			body += fmt.Sprintf(", taking over from %s, whose lease ran out", t.Task.ClaimedBy)
			out.TookOverFrom = t.Task.ClaimedBy
		}
		if f, err = f.Apply(edits...); err != nil {
			return nil, err
		}
		how := "new branch " + branch
		if reused {
			how = "continues on branch " + branch
		}
		return &change{
			file: f, to: taskfile.Claimed,
			body:      body + "; " + how + ".",
			data:      data,
			beforeRef: create,
			trailers:  leaseTrailers(out.Attempt, now, now.Add(time.Duration(e.Config.ClaimTimeout))),
		}, nil
	}
}

// claimNext says what to do when a task cannot be claimed: never how to
// become someone who may (docs/design.md §5.5).
func claimNext(rule, id string) Next {
	switch rule {
	case "lockout":
		return Next{Advice: AdviseLockedOut, Task: id}
	case "dependencies":
		return Next{Advice: AdviseShowWaitsFor, Task: id}
	case "hand_edit":
		return Next{Advice: AdviseCheckProblem}
	}
	return Next{Advice: AdviseListReady}
}

// nextClaimable picks the first task in claim order the actor may take, and
// otherwise says why nothing is claimable.
func (e *Engine) nextClaimable(roles []string) (*gitstore.Summary, []string) {
	// Claim order needs only the summaries' headers; a task is decoded
	// whole when its turn comes (usually the first one is taken).
	var candidates []*gitstore.SummaryHeader
	e.tasks().EachSummaryHeaderIn(claimQueues, func(h *gitstore.SummaryHeader) {
		candidates = append(candidates, h)
	})
	return e.pickClaimable(candidates, (*gitstore.SummaryHeader).Summary, roles)
}

// sameClaimClass reports whether a and b are in one queue of the claim
// order, at one priority: the tasks a claimShare chooses among.
func sameClaimClass(a, b *taskfile.Task) bool {
	return claimQueueRank[a.Queue] == claimQueueRank[b.Queue] && a.Priority == b.Priority
}

// pickClaimable is nextClaimable over the given candidates, load giving a
// candidate's whole summary.
func (e *Engine) pickClaimable(candidates []*gitstore.SummaryHeader, load func(*gitstore.SummaryHeader) *gitstore.Summary, roles []string) (*gitstore.Summary, []string) {
	order := newClaimQueue(candidates)
	counts := map[string]int{}
	// Tasks for another role, assigned to someone else or locked against
	// the actor are passed over before their dependencies are looked up
	// (each a search among all tasks); why each was passed over is worked
	// out only if nothing is claimable.
	var passed, eligible, own []*gitstore.Summary
	window, ownN := max(e.claimShare.window, 1), max(e.claimShare.own, 1)
	for h := order.next(); h != nil; h = order.next() {
		s := load(h)
		if rule, _ := e.notForActor(&s.Task, roles); rule != "" {
			passed = append(passed, s)
			continue
		}
		rule, _ := e.whyNot(s, roles)
		if rule == "" {
			if len(eligible) > 0 && !sameClaimClass(&eligible[0].Task, &s.Task) {
				break // a share never passes over rejected work, or a higher priority
			}
			eligible = append(eligible, s)
			if e.claimShare.takes(s.Task.ID) {
				if own = append(own, s); len(own) == ownN {
					break
				}
			}
			if len(eligible) == window {
				break
			}
			continue
		}
		counts[rule]++
	}
	if len(own) > 0 {
		return own[rand.IntN(len(own))], nil
	}
	if len(eligible) > 0 {
		// None of the first few is this agent's share: one of them.
		return eligible[rand.IntN(len(eligible))], nil
	}
	for _, s := range passed {
		rule, _ := e.whyNot(s, roles)
		counts[rule]++
	}
	// Claims whose lease runs are not passed over, they are in use: named
	// only when nothing else is there.
	inUse := counts["claimed"]
	delete(counts, "claimed")
	if len(counts) == 0 {
		msg := "no task is in incoming, rejected or needs_continuation"
		if inUse > 0 {
			msg += fmt.Sprintf("; %d claimed, with their leases running", inUse)
		}
		return nil, []string{msg}
	}
	var reasons []string
	names := map[string]string{
		"dependencies": "waiting for dependencies", "role": "for another role", "assigned": "assigned to someone else",
		"lockout": "you are locked out", "invalid": "with a file that does not parse", "hand_edit": "with an uncommitted hand edit",
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		reasons = append(reasons, fmt.Sprintf("%d %s", counts[k], names[k]))
	}
	return nil, reasons
}
