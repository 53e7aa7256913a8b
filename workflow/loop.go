package workflow

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// change is what a verb does to one task: the new file, the queue it goes
// to, and what to record in the commit and the event log.
type change struct {
	file     *taskfile.File
	to       taskfile.Queue
	body     string         // commit message body
	data     map[string]any // event data
	extra    []gitstore.Change
	created  []createdTask // tasks this change creates: each gets its own "new" event
	trailers []string
	// beforeRef is a side effect outside the state branch, run just before
	// the ref moves (see gitstore.CommitRequest.BeforeRef).
	beforeRef func() error
}

// transition applies fn to one task as one commit. fn runs inside the
// commit loop, on the task as it is at the tip being built on, so a retry
// after a lost race re-checks every rule against the new state.
func (e *Engine) transition(id, verb string, fn func(t *Task) (*change, error)) (*Result, error) {
	return e.apply(id, verb, true, fn)
}

// transitionAny is transition for verbs that change a task without moving
// it between queues (unlock): any queue will do.
func (e *Engine) transitionAny(id, verb string, fn func(t *Task) (*change, error)) (*Result, error) {
	return e.apply(id, verb, false, fn)
}

func (e *Engine) apply(id, verb string, checkQueue bool, fn func(t *Task) (*change, error)) (*Result, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	var res Result
	h, err := e.Store.Update(func(snap *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		e.reviewGround = "" // each try judges the task afresh
		s := e.Store.SummaryByID(id)
		if s == nil {
			return nil, &NotFoundError{What: "task", Ref: id, Hint: "orch list shows the tasks"}
		}
		if err := e.editable(s); err != nil {
			return nil, err
		}
		if checkQueue {
			if err := CheckTransition(verb, id, s.Task.Queue); err != nil {
				return nil, err
			}
		}
		t, err := e.Load(s)
		if err != nil {
			return nil, err
		}
		c, err := fn(t)
		if err != nil || c == nil {
			return nil, err
		}
		if e.reviewGround != "" {
			// A scoped reviewer's review says what it was in scope by.
			if c.data == nil {
				c.data = map[string]any{}
			}
			c.data["ground"] = e.reviewGround
			c.trailers = append(c.trailers, "Orch-Ground", e.reviewGround)
		}
		from := s.Task.Queue
		to := c.to
		if to == "" {
			to = from
		}
		if checkQueue {
			// The table's To column binds the code as its From column
			// binds the task: a verb cannot move a task anywhere else.
			if tr := TransitionFor(verb); tr != nil && len(tr.To) > 0 && !slices.Contains(tr.To, to) {
				return nil, fmt.Errorf("internal error: %s would move %s from %s to %s, which the transition table does not allow (it allows %s)", verb, id, from, to, tr.ToText())
			}
		}
		if c.file != nil && to != from {
			if c.file, err = c.file.Apply(taskfile.Set(taskfile.KeyQueue, taskfile.String(string(to)))); err != nil {
				return nil, err
			}
		}
		changes := []gitstore.Change{}
		if c.file != nil {
			changes = append(changes, gitstore.Change{Path: s.Path, Data: c.file.Src})
		}
		changes = append(changes, c.extra...)
		ev := Event{Time: taskfile.FormatTime(e.Now()), Task: id, Action: verb, Actor: e.Actor, Data: c.data}
		if to != from {
			ev.From, ev.To = string(from), string(to)
		}
		evc, err := e.eventChange(snap, ev)
		if err != nil {
			return nil, err
		}
		changes = append(changes, evc)
		var createdIDs []string
		for _, ct := range c.created {
			nev := Event{Time: ev.Time, Task: ct.ID, Action: "new", To: string(taskfile.Incoming), Actor: e.Actor,
				Data: map[string]any{"title": ct.Title, "from": id, "by": verb}}
			rd := &mergedSnapshot{Snapshot: snap, changes: changes}
			evn, err := e.eventChange(rd, nev)
			if err != nil {
				return nil, err
			}
			changes = mergeChange(changes, evn)
			createdIDs = append(createdIDs, ct.ID)
		}
		if len(createdIDs) > 0 {
			c.trailers = append(c.trailers, "Orch-Created", strings.Join(createdIDs, " "))
		}
		res.From, res.To = from, to
		msgFrom, msgTo := from, to
		if from == to {
			msgFrom, msgTo = "", ""
		}
		return &gitstore.CommitRequest{
			Changes:   changes,
			Message:   commitMessage(id, verb, msgFrom, msgTo, e.Actor, c.body, c.trailers...),
			Author:    e.Signature(),
			BeforeRef: c.beforeRef,
		}, nil
	})
	if err != nil {
		return nil, err
	}
	res.Commit = h
	res.Task = e.Store.SummaryByID(id)
	return &res, nil
}

// createdTask is a task a change creates.
type createdTask struct {
	ID    string
	Title string
}

// editable refuses to change a task whose view file holds a hand edit orch
// could not commit: the person's work would otherwise be overwritten or
// silently forked.
func (e *Engine) editable(s *gitstore.Summary) error {
	view := filepath.Join(gitstore.ViewDirName, s.Path)
	if err := e.tasks().BrokenFile(s.Path); err != nil {
		return &ConflictError{Msg: fmt.Sprintf("%s has a hand edit that does not parse (%v); orch will not change the task until it is fixed", view, err), Hint: "fix the file (orch check shows the line), or delete it to restore the committed version"}
	}
	if cs := e.tasks().Conflicted(s.Path); cs != nil {
		return &ConflictError{Msg: conflictText(s.Task.ID, cs), Hint: "edit " + view + " to the version you want (orch commits it), or delete it to take the branch's version"}
	}
	if s.Problem != "" {
		return &InvalidFileError{Problems: []*taskfile.ParseError{{Path: view, Line: s.ProblemLine, Msg: s.Problem}}}
	}
	return nil
}

// ---- claim ----------------------------------------------------------------

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
	case role != "" && len(r) > 0 && !contains(r, role):
		return nil, &RuleError{Rule: "role", Msg: fmt.Sprintf("%s claims as %s (agents: in config.yaml); --role may narrow that, never widen it", e.Actor, strings.Join(r, ", ")),
			Hint: "orch list --ready shows what you can claim"}
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
	case t.Role != "" && !contains(roles, t.Role):
		return "role", fmt.Sprintf("it is for role %s, and you claim as %s", t.Role, strings.Join(roles, ", "))
	case t.AssignedTo != "" && t.AssignedTo != e.Actor:
		return "assigned", "it is assigned to " + t.AssignedTo
	case contains(t.LockedOut, e.Actor):
		return "lockout", e.Actor + " is locked out of it after a rejection"
	}
	return "", ""
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Claim takes the next ready task (or the named one) for the actor.
// Exactly one claimer wins a task: orch processes are serialised by the
// store lock and every rule is checked again at the tip the claim commits
// on.
func (e *Engine) Claim(opts ClaimOptions) (*ClaimResult, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	roles, err := e.agentRoles(opts.Role)
	if err != nil {
		return nil, err
	}
	var target string
	if opts.Task != "" {
		s, err := e.Find(opts.Task)
		if err != nil {
			return nil, err
		}
		if err := CheckTransition("claim", s.Task.ID, s.Task.Queue); err != nil {
			return nil, err
		}
		if err := e.editable(s); err != nil {
			return nil, err // a broken or conflicted file: the same answer as every verb
		}
		if rule, msg := e.whyNot(s, roles); rule != "" {
			return nil, &RuleError{Rule: rule, Msg: fmt.Sprintf("cannot claim %s: %s", s.Task.ID, msg), Hint: claimHint(rule, s.Task.ID)}
		}
		target = s.Task.ID
	} else {
		next, reasons := e.nextClaimable(roles)
		if next == nil {
			return nil, &NothingToClaimError{Reasons: reasons}
		}
		target = next.Task.ID
	}
	out := &ClaimResult{}
	res, err := e.transition(target, "claim", func(t *Task) (*change, error) {
		if rule, msg := e.whyNot(t.Summary, roles); rule != "" {
			return nil, &RuleError{Rule: rule, Msg: fmt.Sprintf("cannot claim %s: %s", t.Task.ID, msg), Hint: claimHint(rule, t.Task.ID)}
		}
		branch, reused, note, create, err := e.ensureBranch(t)
		if err != nil {
			return nil, err
		}
		out.Branch, out.BranchReused, out.BranchNote = branch, reused, note
		out.Attempt = t.Task.Attempts + 1
		edits := []taskfile.Edit{
			taskfile.Set(taskfile.KeyClaimedBy, taskfile.String(e.Actor)),
			taskfile.Set(taskfile.KeyClaimedAt, taskfile.Time(e.Now())),
			taskfile.Unset(taskfile.KeyHeartbeatAt),
			taskfile.Set(taskfile.KeyAttempts, taskfile.Int(out.Attempt)),
			taskfile.Set(taskfile.KeyBranch, taskfile.String(branch)),
		}
		if !contains(t.Task.WorkedBy, e.Actor) {
			edits = append(edits, taskfile.Set(taskfile.KeyWorkedBy, taskfile.ListOf(append(append([]string(nil), t.Task.WorkedBy...), e.Actor))))
		}
		f := t.File
		data := map[string]any{"branch": branch, "branch_reused": reused, "attempt": out.Attempt, "pr_number": t.Task.PRNumber}
		body := fmt.Sprintf("Claimed by %s (attempt %d)", e.Actor, out.Attempt)
		if t.Task.Queue == taskfile.Claimed {
			// A lease that ran out: taken over, and said so where the next
			// prompt reads it.
			if f, err = f.AddSection(e.takeoverNote(t)); err != nil {
				return nil, err
			}
			data["took_over_from"] = t.Task.ClaimedBy
			data["lease_ended"] = taskfile.FormatTime(e.leaseEnd(t.Summary))
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
			trailers:  leaseTrailers(out.Attempt, e.Now().Add(time.Duration(e.Config.ClaimTimeout))),
		}, nil
	})
	if err != nil {
		return nil, err
	}
	out.Result = *res
	return out, nil
}

// claimHint says what to do when a task cannot be claimed: never how to
// become someone who may (DESIGN §4a).
func claimHint(rule, id string) string {
	switch rule {
	case "lockout":
		return "your work on it was rejected, so another agent takes it; orch list --ready shows what you can claim (orch escalate " + id + " -m \"...\" asks a human)"
	case "dependencies":
		return "orch show " + id + " lists what it waits for"
	case "hand_edit":
		return "orch check shows the problem"
	}
	return "orch list --ready shows what you can claim"
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

// pickClaimable is nextClaimable over the given candidates, load giving a
// candidate's whole summary.
func (e *Engine) pickClaimable(candidates []*gitstore.SummaryHeader, load func(*gitstore.SummaryHeader) *gitstore.Summary, roles []string) (*gitstore.Summary, []string) {
	order := newClaimQueue(candidates)
	counts := map[string]int{}
	// Tasks for another role, assigned to someone else or locked against
	// the actor are passed over before their dependencies are looked up
	// (each a search among all tasks); why each was passed over is worked
	// out only if nothing is claimable.
	var passed []*gitstore.Summary
	var eligible *gitstore.Summary
	skip := e.claimSpread
	for h := order.next(); h != nil; h = order.next() {
		s := load(h)
		if rule, _ := e.notForActor(&s.Task, roles); rule != "" {
			passed = append(passed, s)
			continue
		}
		rule, _ := e.whyNot(s, roles)
		if rule == "" {
			if eligible = s; skip == 0 {
				return s, nil
			}
			skip--
			continue
		}
		counts[rule]++
	}
	if eligible != nil {
		return eligible, nil
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

// BranchName is the branch a task's work goes on.
func (e *Engine) BranchName(t *taskfile.Task, path string) string {
	slug := strings.TrimSuffix(filepath.Base(path), ".md")
	slug = strings.TrimPrefix(slug, t.ID)
	slug = strings.TrimPrefix(slug, "-")
	if slug == "" {
		slug = taskfile.Slug(t.Title)
	}
	return e.Config.BranchPrefix + t.ID + "-" + slug
}

// ensureBranch decides the task's branch: created from its base on a first
// claim (create does it; the claim's commit runs it just before moving the
// state branch) and reused afterwards. Creating is idempotent, so a retried
// claim is harmless.
func (e *Engine) ensureBranch(t *Task) (branch string, reused bool, note string, create func() error, err error) {
	branch = t.Task.Branch
	if branch == "" {
		branch = e.BranchName(&t.Task, t.Path)
	}
	if !taskfile.ValidBranch(branch) {
		return "", false, "", nil, &RuleError{Rule: "branch", Msg: fmt.Sprintf("%q is not a valid branch name", branch), Hint: "fix branch: in the task file"}
	}
	ref := "refs/heads/" + branch
	base := t.Task.BaseBranch
	if base == "" {
		base = e.Config.BaseBranch
	}
	// A task's branch is its own: work committed on the state branch or
	// straight on the base branch would bypass review (or break orch).
	if ref == e.Store.Ref || branch == base {
		what := "the state branch"
		if branch == base {
			what = "the base branch"
		}
		return "", false, "", nil, &RuleError{Rule: "branch", Msg: fmt.Sprintf("%s's branch %q is %s; a task needs a branch of its own", t.Task.ID, branch, what), Hint: "remove branch: from the task file (orch edit " + t.Task.ID + "), and orch names one"}
	}
	cur, err := e.Store.ReadRef(ref)
	if err != nil {
		return "", false, "", nil, err
	}
	// Work another clone pushed (a rejected task retried on another
	// machine) is continued, never started over: the remote-tracking copy
	// of the task's branch is where the work is.
	remote, remoteName := e.Store.Repo.RemoteCopy(branch)
	if !cur.IsZero() {
		repo := e.Store.Repo
		if remote.IsZero() || remote == cur || !repo.IsAncestor(cur, remote) {
			if !remote.IsZero() && remote != cur && !repo.IsAncestor(remote, cur) {
				note = fmt.Sprintf("the branch %s and %s/%s have diverged: merge them before you go on", branch, remoteName, branch)
			}
			return branch, true, note, nil, nil
		}
		// The remote is ahead: fast-forward, unless a worktree has the
		// branch checked out (moving it would leave that worktree stale).
		if wts := e.Store.Repo.CheckedOutIn(ref); len(wts) > 0 {
			note = fmt.Sprintf("%s/%s is ahead of %s, which is checked out in %s: pull it there before you go on", remoteName, branch, branch, strings.Join(wts, ", "))
			return branch, true, note, nil, nil
		}
		create = func() error {
			return e.Store.Repo.UpdateRef(gitrepo.RefUpdate{Name: ref, Old: cur, New: remote, Who: e.Signature().String(), Message: "orch: fast-forward " + branch + " to " + remoteName + "/" + branch})
		}
		return branch, true, fmt.Sprintf("fast-forwarded %s to %s/%s (work pushed from another clone)", branch, remoteName, branch), create, nil
	}
	if !remote.IsZero() {
		create = func() error {
			if err := e.Store.CreateRef(ref, remote, e.Signature(), "orch: branch for "+t.Task.ID+" from "+remoteName+"/"+branch); err != nil && !errors.Is(err, gitrepo.ErrRefMoved) {
				return err
			}
			return nil
		}
		return branch, true, fmt.Sprintf("continued from %s/%s: the work of earlier attempts, pushed from another clone", remoteName, branch), create, nil
	}
	baseHash, err := e.Store.ReadRef("refs/heads/" + base)
	if err != nil {
		return "", false, "", nil, err
	}
	baseFrom := base
	if baseHash.IsZero() {
		// A fresh clone has the base branch only as its remote-tracking
		// copy.
		var rem string
		if baseHash, rem = e.Store.Repo.RemoteCopy(base); !baseHash.IsZero() {
			baseFrom = rem + "/" + base
		}
	}
	if baseHash.IsZero() {
		hint := "create it (git branch " + base + "), or set base_branch in config.yaml (orch edit config) or in the task"
		if here := e.Store.Repo.HeadBranch(); here != "" && here != base {
			hint = fmt.Sprintf("the branch checked out here is %s: if tasks start from it, set base_branch: %s in config.yaml (orch edit config); or create %s", here, here, base)
		}
		if !e.IsHuman() {
			// config.yaml is a person's to change.
			hint = fmt.Sprintf("a person sets up the base branch: ask one with orch escalate %s -m \"the base branch %s does not exist\"", t.Task.ID, base)
		}
		return "", false, "", nil, &SetupError{Msg: fmt.Sprintf("the base branch %s does not exist, so the task's branch cannot be created", base), Hint: hint}
	}
	create = func() error {
		if err := e.Store.CreateRef(ref, baseHash, e.Signature(), "orch: branch for "+t.Task.ID+" from "+baseFrom); err != nil && !errors.Is(err, gitrepo.ErrRefMoved) {
			return err
		}
		return nil
	}
	if t.Task.Branch != "" {
		note = "the branch " + branch + " was missing and was created again from " + baseFrom
	}
	return branch, false, note, create, nil
}

// ---- submit ---------------------------------------------------------------

// SubmitOptions describe a submission.
type SubmitOptions struct {
	PR   int
	Note string
}

// Submit hands the work in for review.
func (e *Engine) Submit(id string, opts SubmitOptions) (*Result, error) {
	if err := checkTexts(namedText{"the note (-m)", opts.Note}); err != nil {
		return nil, err
	}
	return e.transition(id, "submit", func(t *Task) (*change, error) {
		if err := e.requireClaimant(&t.Task, "submit"); err != nil {
			return nil, err
		}
		if err := e.submitGuards(t); err != nil {
			return nil, err
		}
		// One PR per task (the rejection workflow): a retry pushes to the
		// task's PR, whose history the reviewer follows. Moving a task to
		// another PR is a person's explicit edit of pr_number.
		if opts.PR > 0 && t.Task.PRNumber > 0 && opts.PR != t.Task.PRNumber {
			hint := fmt.Sprintf("push your commits to %s (PR #%d updates itself) and run orch submit %s; if PR #%d cannot be used any more, ask a human with orch escalate %s -m \"why\"", t.Task.Branch, t.Task.PRNumber, t.Task.ID, t.Task.PRNumber, t.Task.ID)
			if e.IsHuman() {
				hint = fmt.Sprintf("run orch submit %s without --pr (PR #%d updates itself when %s is pushed); to move the task to PR #%d, set pr_number: %d with orch edit %s first", t.Task.ID, t.Task.PRNumber, t.Task.Branch, opts.PR, opts.PR, t.Task.ID)
			}
			return nil, &RuleError{Rule: "one_pr_per_task", Msg: fmt.Sprintf("%s's PR is #%d (pr_number), not #%d: a task keeps one PR across its retries", t.Task.ID, t.Task.PRNumber, opts.PR), Hint: hint}
		}
		edits := []taskfile.Edit{
			taskfile.Set(taskfile.KeySubmittedBy, taskfile.String(t.Task.ClaimedBy)),
			taskfile.Set(taskfile.KeySubmittedAt, taskfile.Time(e.Now())),
		}
		if t.Task.ClaimedBy == "" {
			edits[0] = taskfile.Set(taskfile.KeySubmittedBy, taskfile.String(e.Actor))
		}
		if opts.PR > 0 {
			edits = append(edits, taskfile.Set(taskfile.KeyPRNumber, taskfile.Int(opts.PR)))
		}
		f, err := t.File.Apply(edits...)
		if err != nil {
			return nil, err
		}
		body := "Submitted for review."
		if opts.Note != "" {
			body += "\n\n" + opts.Note
		}
		pr := opts.PR
		if pr == 0 {
			pr = t.Task.PRNumber
		}
		tip, _ := e.Store.ReadRef("refs/heads/" + t.Task.Branch)
		return &change{file: f, to: taskfile.Provisional, body: body,
			data: map[string]any{"note": opts.Note, "pr_number": pr, "branch": t.Task.Branch, "branch_tip": hashText(tip)}}, nil
	})
}

func hashText(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// submitGuards refuses the two commonest failures of review loops: handing
// in work that does not answer the blocking issues of the last review, and
// handing in the same work again.
func (e *Engine) submitGuards(t *Task) error {
	if rounds := t.File.FeedbackRounds(); len(rounds) > 0 {
		var missing []string
		for _, s := range rounds[0].Sources {
			for _, is := range s.Issues {
				if is.Blocking && !is.Resolved && len(is.Responses) == 0 {
					missing = append(missing, is.ID)
				}
			}
		}
		if len(missing) > 0 {
			return &RuleError{Rule: "unanswered_blocking", Msg: fmt.Sprintf("blocking issues of the last review have no response: %s", strings.Join(missing, ", ")),
				Hint: fmt.Sprintf("answer each: orch respond %s %s fixed -m \"what you changed\" --commit SHA", t.Task.ID, missing[0])}
		}
	}
	if t.Task.RejectedAt != "" && t.Task.Branch != "" {
		tip, err := e.Store.ReadRef("refs/heads/" + t.Task.Branch)
		if err != nil {
			return err
		}
		if tip.String() == t.Task.RejectedAt {
			return &RuleError{Rule: "unchanged_resubmit", Msg: fmt.Sprintf("the branch %s has no new commit since the last rejection (still %s)", t.Task.Branch, tip.String()[:7]),
				Hint: "commit your fixes on " + t.Task.Branch + " first (git log " + t.Task.Branch + " shows where it stands)"}
		}
	}
	return nil
}

// ---- review authority -------------------------------------------------------

// checkReviewer applies review authority (DESIGN §4a): with
// review.reviewers set only they review among agents (a human always may),
// each within its scope (checkReviewerScope), and nobody reviews a task
// they worked on in any round.
func (e *Engine) checkReviewer(t *Task, verb string) error {
	if !e.IsHuman() && !e.Config.IsReviewer(e.Actor) {
		return e.refuseAuthority(verb, t.Task.ID, "reviewer",
			fmt.Sprintf("%s may not %s %s: review.reviewers names who reviews, and %s is not among them", e.Actor, verb, t.Task.ID, e.Actor),
			"a reviewer or a human reviews it; orch claim takes other work")
	}
	if err := e.checkReviewerScope(t, verb); err != nil {
		return err
	}
	if contains(workers(&t.Task), e.Actor) {
		return e.refuseAuthority(verb, t.Task.ID, "self_review",
			fmt.Sprintf("%s worked on %s and may not %s it: nobody reviews their own work, in any round", e.Actor, t.Task.ID, verb),
			"someone who did not work on it reviews it; orch claim takes other work")
	}
	return nil
}

// ---- reject -------------------------------------------------------------------

// Rejection is what reject (and review with blocking issues) adds to a task.
type Rejection struct {
	Sources []taskfile.Source // at least one
	Verdict string
	Data    map[string]any  // extra event data
	Summary string          // commit message body
	Rule    string          // "reject" or "review"
	Edits   []taskfile.Edit // further frontmatter edits (github_reviews)
}

// Reject sends the work back with feedback.
func (e *Engine) Reject(id, text string) (*Result, error) {
	if err := checkTexts(namedText{"the feedback (-m or -F)", text}); err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, &UsageError{Msg: "a rejection needs feedback", Hint: `orch reject ` + id + ` -m "what must change"`}
	}
	src := taskfile.Source{From: e.Actor + " via orch reject", Time: e.Now(), Text: text}
	return e.reject(id, "reject", Rejection{Sources: []taskfile.Source{src}, Summary: firstSentence(text)})
}

// AmendRejection adds a reviewer's note to the newest rejection round
// without rejecting again (orch reject --amend): the rejection workflow's
// lead distills scattered PR comments that orch pr import brought in into a
// note the agent can act on. The count, the lockout and the queue stay; the
// task must not have been submitted since (the next review is the place
// then).
func (e *Engine) AmendRejection(id, text string) (*Result, error) {
	if err := checkTexts(namedText{"the note (-m or -F)", text}); err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, &UsageError{Msg: "a note needs text", Hint: `orch reject ` + id + ` --amend -m "what the comments mean"`}
	}
	return e.transitionAny(id, "reject.amend", func(t *Task) (*change, error) {
		switch t.Task.Queue {
		case taskfile.Rejected, taskfile.Claimed, taskfile.NeedsContinuation, taskfile.Escalated:
		default:
			return nil, &RuleError{Rule: "amend", Msg: fmt.Sprintf("%s is %s: only a rejected task that was not submitted again takes a note on its newest round", t.Task.ID, t.Task.Queue),
				Hint: amendHint(t)}
		}
		rounds := t.File.FeedbackRounds()
		if t.Task.RejectionCount == 0 || len(rounds) == 0 || rounds[0].Approval {
			return nil, &RuleError{Rule: "amend", Msg: fmt.Sprintf("%s has no rejection round to add a note to", t.Task.ID), Hint: amendHint(t)}
		}
		if err := e.checkReviewer(t, "reject"); err != nil {
			return nil, err
		}
		f, err := t.File.AddToNewestRound(taskfile.Source{From: e.Actor + " via orch reject --amend", Time: e.Now(), Text: text})
		if err != nil {
			return nil, err
		}
		body := fmt.Sprintf("Note on rejection #%d by %s: %s", rounds[0].Number, e.Actor, firstSentence(text))
		return &change{file: f, body: body, data: map[string]any{"round": rounds[0].Number, "by": e.Actor, "claimed_by": t.Task.ClaimedBy}}, nil
	})
}

func amendHint(t *Task) string {
	if t.Task.Queue == taskfile.Provisional {
		return "it waits for review: orch reject " + t.Task.ID + ` -m "..."` + " or orch approve " + t.Task.ID
	}
	return "orch show " + t.Task.ID + " shows its rounds"
}

func firstSentence(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(l) > 120 {
		l = l[:117] + "..."
	}
	return l
}

// reject is the one path for every rejection: the feedback round at the top
// of the body, the count, the lockout, and escalation by policy.
func (e *Engine) reject(id, verb string, rj Rejection) (*Result, error) {
	return e.transition(id, verb, func(t *Task) (*change, error) {
		if err := e.checkReviewer(t, verb); err != nil {
			return nil, err
		}
		return e.rejectChange(t, rj)
	})
}

func (e *Engine) rejectChange(t *Task, rj Rejection) (*change, error) {
	n := t.Task.RejectionCount + 1
	f, err := t.File.AddRound(taskfile.Round{Number: n, Verdict: rj.Verdict, Sources: rj.Sources})
	if err != nil {
		return nil, err
	}
	author := t.Task.SubmittedBy
	if author == "" {
		author = t.Task.ClaimedBy
	}
	locked := append([]string{}, t.Task.LockedOut...)
	lockedNow := false
	if e.Config.Review.LockoutOn() && author != "" && !contains(locked, author) {
		locked = append(locked, author)
		lockedNow = true
	}
	edits := []taskfile.Edit{
		taskfile.Set(taskfile.KeyRejectionCount, taskfile.Int(n)),
		taskfile.Unset(taskfile.KeyClaimedBy),
		taskfile.Unset(taskfile.KeyClaimedAt),
	}
	if len(locked) > 0 {
		edits = append(edits, taskfile.Set(taskfile.KeyLockedOut, taskfile.ListOf(locked)))
	}
	if t.Task.Branch != "" {
		if tip, err := e.tasks().ReadRef("refs/heads/" + t.Task.Branch); err == nil && !tip.IsZero() {
			edits = append(edits, taskfile.Set(taskfile.KeyRejectedAt, taskfile.String(tip.String())))
		}
	}
	edits = append(edits, rj.Edits...)
	if f, err = f.Apply(edits...); err != nil {
		return nil, err
	}
	data := map[string]any{"round": n, "by": e.Actor, "author": author, "lockout": lockedNow, "branch": t.Task.Branch, "pr_number": t.Task.PRNumber}
	for k, v := range rj.Data {
		data[k] = v
	}
	c := &change{file: f, to: taskfile.Rejected, data: data,
		body:     fmt.Sprintf("Rejection #%d by %s: %s", n, e.Actor, rj.Summary),
		trailers: []string{"Orch-Round", fmt.Sprint(n)}}
	if lockedNow {
		c.body += fmt.Sprintf("\n\n%s is locked out of this task.", author)
		c.trailers = append(c.trailers, "Orch-Locked-Out", author) // orch log names who
	}
	// Escalation by policy: too many rejections, or nobody left to do it.
	var why, reason string
	switch {
	case n >= e.Config.Review.MaxRejections:
		reason = "max_rejections"
		why = fmt.Sprintf("Rejection #%d reached review.max_rejections (%d): the review loop is not converging.", n, e.Config.Review.MaxRejections)
	case e.deadlocked(&t.Task, locked):
		reason = "lockout_deadlock"
		who := "in the roster"
		if len(e.Config.Agents) == 0 {
			who = "that has worked on tasks of that role"
		}
		why = fmt.Sprintf("Every agent with role %s %s is locked out of this task (%s).", roleOf(&t.Task, e.Config), who, strings.Join(locked, ", "))
	}
	if reason != "" {
		// The message describes the task after this rejection.
		after := t.Task
		after.RejectionCount, after.LockedOut = n, locked
		msg := e.escalationMessage(&after, t.Path, reason, why)
		c.to = taskfile.Escalated
		c.extra = append(c.extra, msg)
		c.data["escalated"] = reason
		c.body += "\n\nEscalated: " + why
	}
	return c, nil
}

func roleOf(t *taskfile.Task, cfg *Config) string {
	if t.Role != "" {
		return t.Role
	}
	return cfg.DefaultRole
}

// deadlocked reports whether every agent capable of the task's role is
// locked out of it (Reviewer Lockout Protocol, "Deadlock Handling"). The
// capable agents are the roster's with that role; without a roster, every
// agent seen working on a task of that role (worked_by, claimants,
// submitters, lockouts).
func (e *Engine) deadlocked(t *taskfile.Task, locked []string) bool {
	role := roleOf(t, e.Config)
	if len(e.Config.Agents) > 0 {
		capable := 0
		for _, a := range e.Config.Agents {
			if !contains(a.Roles, role) {
				continue
			}
			capable++
			if !contains(locked, a.Name) {
				return false
			}
		}
		return capable > 0
	}
	capable, free := false, false
	see := func(tk *taskfile.Task) bool {
		if roleOf(tk, e.Config) != role {
			return true
		}
		for _, w := range workers(tk) {
			if contains(e.Config.Humans, w) {
				continue
			}
			capable = true
			if !contains(locked, w) {
				free = true
				return false // someone can still take it: stop looking
			}
		}
		return true
	}
	if see(t) {
		e.tasks().EachSummaryWhile(func(s *gitstore.Summary) bool { return s.Task.ID == t.ID || see(&s.Task) })
	}
	return capable && !free
}

// escalationMessage writes messages/<time>-<id>.md for the human inbox.
func (e *Engine) escalationMessage(t *taskfile.Task, path, reason, why string) gitstore.Change {
	now := e.Now().UTC()
	name := fmt.Sprintf("%s/%s-%s.md", gitstore.MessagesDir, now.Format("20060102T150405.000Z"), t.ID)
	var b strings.Builder
	fmt.Fprintf(&b, "---\ntask: %s\nreason: %s\ncreated: %s\nby: %q\n---\n", t.ID, reason, taskfile.FormatTime(now), e.Actor)
	fmt.Fprintf(&b, "# %s escalated: %s\n\n", t.ID, oneLine(t.Title))
	b.WriteString("## Why\n\n" + why + "\n\n")
	fmt.Fprintf(&b, "Rejections so far: %d. Locked out: %s. Branch: %s.\n\n", t.RejectionCount, orNone(t.LockedOut), orDash(t.Branch))
	b.WriteString("## Options\n\n")
	fmt.Fprintf(&b, "- Fix it by hand on the branch %s, then send it back for review: `orch requeue %s --to YOU`, `orch claim --task %s`, `orch submit %s`.\n", orDash(t.Branch), t.ID, t.ID, t.ID)
	fmt.Fprintf(&b, "- Unlock an agent and give it guidance (edit the task: `orch edit %s`): `orch unlock %s AGENT`, then `orch requeue %s --to AGENT`.\n", t.ID, t.ID, t.ID)
	fmt.Fprintf(&b, "- Put it back in the queue for anyone: `orch requeue %s`.\n", t.ID)
	fmt.Fprintf(&b, "- Close it as won't-fix: `orch fail %s -m \"reason\"`.\n", t.ID)
	return gitstore.Change{Path: name, Data: []byte(b.String())}
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ---- approve --------------------------------------------------------------------

// Approve accepts the work: provisional -> done. Lockouts are lifted: the
// task is finished.
func (e *Engine) Approve(id, notes string) (*Result, error) {
	if err := checkTexts(namedText{"the notes (-m)", notes}); err != nil {
		return nil, err
	}
	return e.approve(id, "approve", "APPROVED", notes, nil)
}

func (e *Engine) approve(id, verb, verdict, notes string, extra func(t *Task, f *taskfile.File) (*taskfile.File, error)) (*Result, error) {
	return e.transition(id, verb, func(t *Task) (*change, error) {
		if err := e.checkReviewer(t, verb); err != nil {
			return nil, err
		}
		if open := unresolvedBlocking(t.File); len(open) > 0 && verb == "approve" {
			return nil, &RuleError{Rule: "unresolved_blocking", Msg: fmt.Sprintf("blocking issues are unresolved: %s", strings.Join(open, ", ")),
				Hint: "review it instead (orch review " + id + " lists what is still open), or reject it"}
		}
		f := t.File
		var err error
		if extra != nil {
			if f, err = extra(t, f); err != nil {
				return nil, err
			}
		}
		edits := []taskfile.Edit{taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)}
		if len(t.Task.LockedOut) > 0 {
			edits = append(edits, taskfile.Unset(taskfile.KeyLockedOut))
		}
		if f, err = f.Apply(edits...); err != nil {
			return nil, err
		}
		body := fmt.Sprintf("%s by %s.", strings.ReplaceAll(verdict, "_", " "), e.Actor)
		if notes != "" {
			body += "\n\n" + notes
		}
		trailers := []string{"Orch-Verdict", verdict}
		if len(t.Task.LockedOut) > 0 {
			// Approval lifts every lockout: orch log names whom.
			trailers = append(trailers, "Orch-Unlocked", strings.Join(t.Task.LockedOut, ", "))
		}
		return &change{file: f, to: taskfile.Done, body: body,
			data:     map[string]any{"verdict": verdict, "notes": notes, "author": t.Task.SubmittedBy, "rounds": t.Task.RejectionCount, "unlocked": t.Task.LockedOut},
			trailers: trailers}, nil
	})
}

// unresolvedBlocking lists blocking issues not ticked as resolved.
func unresolvedBlocking(f *taskfile.File) []string {
	var out []string
	for _, is := range f.AllIssues() {
		if is.Blocking && !is.Resolved {
			out = append(out, is.ID)
		}
	}
	return out
}

// ---- pause, fail, escalate, requeue, unlock, sweep, archive ---------------------------

// Pause stops work before it is finished; the note goes into the next
// prompt.
func (e *Engine) Pause(id, note string) (*Result, error) {
	if err := checkTexts(namedText{"the note (-m)", note}); err != nil {
		return nil, err
	}
	note = strings.TrimSpace(note)
	if note == "" {
		return nil, &UsageError{Msg: "a pause needs a note for whoever continues", Hint: `orch pause ` + id + ` -m "done: X; next: Y"`}
	}
	return e.transition(id, "pause", func(t *Task) (*change, error) {
		if err := e.requireClaimant(&t.Task, "pause"); err != nil {
			return nil, err
		}
		f, err := t.File.AddSection(fmt.Sprintf("## Continuation Note (%s, %s)\n\n%s\n", e.Actor, taskfile.FormatTime(e.Now()), demote(note)))
		if err != nil {
			return nil, err
		}
		if f, err = f.Apply(taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)); err != nil {
			return nil, err
		}
		return &change{file: f, to: taskfile.NeedsContinuation, body: "Paused by " + e.Actor + ": " + firstSentence(note), data: map[string]any{"note": note, "branch": t.Task.Branch}}, nil
	})
}

// demote keeps free text inside the section it is written to (see
// taskfile.SafeText).
func demote(s string) string { return taskfile.SafeText(s) }

// Fail gives the task up.
func (e *Engine) Fail(id, reason string) (*Result, error) {
	if err := checkTexts(namedText{"the reason (-m)", reason}); err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return nil, &UsageError{Msg: "say why the task failed", Hint: `orch fail ` + id + ` -m "reason"`}
	}
	return e.transition(id, "fail", func(t *Task) (*change, error) {
		// An agent may give up its own claim; failing any other task (failed
		// is final) is a human's decision.
		if t.Task.Queue != taskfile.Claimed || t.Task.ClaimedBy != e.Actor {
			if err := e.requireHuman("fail", t.Task.ID, "failing a task you have not claimed"); err != nil {
				return nil, err
			}
		}
		f, err := t.File.AddSection(fmt.Sprintf("## Failed (%s, %s)\n\n%s\n", e.Actor, taskfile.FormatTime(e.Now()), demote(reason)))
		if err != nil {
			return nil, err
		}
		if f, err = f.Apply(taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)); err != nil {
			return nil, err
		}
		return &change{file: f, to: taskfile.Failed, body: "Failed: " + firstSentence(reason), data: map[string]any{"reason": reason}}, nil
	})
}

// Escalate asks a human to act.
func (e *Engine) Escalate(id, text string) (*Result, error) {
	if err := checkTexts(namedText{"the message (-m)", text}); err != nil {
		return nil, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, &UsageError{Msg: "say what a human must decide", Hint: `orch escalate ` + id + ` -m "why"`}
	}
	return e.transition(id, "escalate", func(t *Task) (*change, error) {
		msg := e.escalationMessage(&t.Task, t.Path, "manual", "Escalated by "+e.Actor+": "+text)
		return &change{file: t.File, to: taskfile.Escalated, body: "Escalated by " + e.Actor + ": " + firstSentence(text),
			extra: []gitstore.Change{msg}, data: map[string]any{"reason": "manual", "text": text}}, nil
	})
}

// Reopen sends a failed task back to incoming: failed is final for agents,
// and only a person undoes it. The branch, the feedback and the counts are
// kept; the reason goes into the task above everything else, for whoever
// claims it next.
func (e *Engine) Reopen(id, reason string) (*Result, error) {
	if err := checkTexts(namedText{"the reason (-m or -F)", reason}); err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return nil, &UsageError{Msg: "say why the task is reopened", Hint: `orch reopen ` + id + ` -m "what changed since it failed"`}
	}
	if err := e.requireHuman("reopen", id, "reopening a failed task"); err != nil {
		return nil, err
	}
	return e.transition(id, "reopen", func(t *Task) (*change, error) {
		f, err := t.File.AddSection(fmt.Sprintf("## Reopened (%s, %s)\n\n%s\n", e.Actor, taskfile.FormatTime(e.Now()), demote(reason)))
		if err != nil {
			return nil, err
		}
		return &change{file: f, to: taskfile.Incoming, body: "Reopened by " + e.Actor + ": " + firstSentence(reason), data: map[string]any{"reason": reason}}, nil
	})
}

// Requeue puts the task back in incoming: the claim is cleared; the branch,
// the feedback and the counts are kept. With to, only that agent may claim
// it.
func (e *Engine) Requeue(id, to string) (*Result, error) {
	if to != "" && !taskfile.ValidName(to) {
		return nil, &UsageError{Msg: fmt.Sprintf("%q is not a valid agent name", printable(to))}
	}
	if err := e.requireHuman("requeue", id, "requeueing a task"); err != nil {
		return nil, err
	}
	return e.transition(id, "requeue", func(t *Task) (*change, error) {
		if to != "" && contains(t.Task.LockedOut, to) {
			return nil, &RuleError{Rule: "lockout", Msg: fmt.Sprintf("%s is locked out of %s", to, id), Hint: fmt.Sprintf("unlock first: orch unlock %s %s", id, to)}
		}
		edits := []taskfile.Edit{taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)}
		if to != "" {
			edits = append(edits, taskfile.Set(taskfile.KeyAssignedTo, taskfile.String(to)))
		}
		f, err := t.File.Apply(edits...)
		if err != nil {
			return nil, err
		}
		body := "Requeued by " + e.Actor + "."
		if to != "" {
			body = fmt.Sprintf("Requeued by %s for %s.", e.Actor, to)
		}
		return &change{file: f, to: taskfile.Incoming, body: body, data: map[string]any{"to": to}}, nil
	})
}

// Unlock lifts one agent's lockout.
func (e *Engine) Unlock(id, agent string) (*Result, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	if err := e.requireHuman("unlock", id, "lifting a lockout"); err != nil {
		return nil, err
	}
	s, err := e.Find(id)
	if err != nil {
		return nil, err
	}
	id = s.Task.ID
	if !contains(s.Task.LockedOut, agent) {
		return nil, &RuleError{Rule: "not_locked_out", Msg: fmt.Sprintf("%s is not locked out of %s (locked out: %s)", printable(agent), id, orNone(s.Task.LockedOut)), Hint: "orch show " + id + " shows the task"}
	}
	return e.transitionAny(id, "unlock", func(t *Task) (*change, error) {
		var rest []string
		for _, a := range t.Task.LockedOut {
			if a != agent {
				rest = append(rest, a)
			}
		}
		edit := taskfile.Set(taskfile.KeyLockedOut, taskfile.ListOf(rest))
		if len(rest) == 0 {
			edit = taskfile.Unset(taskfile.KeyLockedOut)
		}
		f, err := t.File.Apply(edit)
		if err != nil {
			return nil, err
		}
		return &change{file: f, body: fmt.Sprintf("Unlocked %s (by %s).", agent, e.Actor), data: map[string]any{"agent": agent}, trailers: []string{"Orch-Unlocked", agent}}, nil
	})
}

// Sweep moves claims older than the threshold to needs_continuation, one
// commit per task.
func (e *Engine) Sweep(olderThan time.Duration) ([]*Result, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	if err := e.requireHuman("sweep", "", "sweeping other agents' claims"); err != nil {
		return nil, err
	}
	if olderThan <= 0 {
		olderThan = time.Duration(e.Config.ClaimTimeout)
	}
	cutoff := e.Now().Add(-olderThan)
	var ids []string
	e.Store.EachSummaryIn(map[taskfile.Queue]bool{taskfile.Claimed: true}, func(s *gitstore.Summary) {
		if !s.Task.ClaimedAt.IsZero() && leaseStart(&s.Task).Before(cutoff) {
			ids = append(ids, s.Task.ID)
		}
	})
	sort.Strings(ids)
	var out []*Result
	defer e.progress("sweeping stale claims", len(ids), len(ids))
	for i, id := range ids {
		e.progress("sweeping stale claims", i, len(ids))
		res, err := e.transition(id, "sweep", func(t *Task) (*change, error) {
			if t.Task.ClaimedAt.IsZero() || !leaseStart(&t.Task).Before(cutoff) {
				return nil, nil // claimed again, or renewed, meanwhile
			}
			note := fmt.Sprintf("## Continuation Note (orch sweep, %s)\n\n%s claimed this at %s and did not finish within %s. The work so far is on %s; read `git log %s` first.\n",
				taskfile.FormatTime(e.Now()), t.Task.ClaimedBy, taskfile.FormatTime(t.Task.ClaimedAt), olderThan, orDash(t.Task.Branch), orDash(t.Task.Branch))
			f, err := t.File.AddSection(note)
			if err != nil {
				return nil, err
			}
			if f, err = f.Apply(taskfile.Unset(taskfile.KeyClaimedBy), taskfile.Unset(taskfile.KeyClaimedAt)); err != nil {
				return nil, err
			}
			return &change{file: f, to: taskfile.NeedsContinuation, body: fmt.Sprintf("Stale claim by %s swept after %s.", t.Task.ClaimedBy, olderThan),
				data: map[string]any{"claimed_by": t.Task.ClaimedBy, "claimed_at": taskfile.FormatTime(t.Task.ClaimedAt)}}, nil
		})
		var ierr *IllegalTransitionError
		if errors.As(err, &ierr) {
			continue
		}
		if err != nil {
			return out, err
		}
		if res.Commit.IsZero() {
			continue
		}
		out = append(out, res)
	}
	return out, nil
}

// Archive removes a finished task's file from the state branch; history
// keeps every version.
func (e *Engine) Archive(id string) (*Result, error) {
	if err := e.requireHuman("archive", id, "archiving a task"); err != nil {
		return nil, err
	}
	var path string
	res, err := e.transition(id, "archive", func(t *Task) (*change, error) {
		path = t.Path
		return &change{extra: []gitstore.Change{{Path: t.Path, Delete: true}}, body: "Archived " + t.Path + " (git log keeps it).",
			data: map[string]any{"path": t.Path, "queue": string(t.Task.Queue)}}, nil
	})
	if err != nil {
		return nil, err
	}
	_ = path
	return res, nil
}

// InboxItem is one thing waiting for a human.
type InboxItem struct {
	Task    string    `json:"task"`
	Title   string    `json:"title"`
	Queue   string    `json:"queue"`
	Reason  string    `json:"reason"`
	Message string    `json:"message,omitempty"` // path of the message file
	Created time.Time `json:"created,omitzero"`
	Summary string    `json:"summary"`
	// Refusal is the whole refusal of a "refused" item, so that the
	// decision can be taken from the inbox.
	Refusal *PendingRefusal `json:"refusal,omitempty"`
}

// Inbox lists open escalations (escalated tasks with their latest message)
// and refusals awaiting a decision.
func (e *Engine) Inbox() ([]InboxItem, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	snap := e.Store.Snapshot()
	latest := map[string]gitstore.FileEntry{}
	for _, fe := range snap.Files(gitstore.MessagesDir) {
		base := strings.TrimSuffix(filepath.Base(fe.Path), ".md")
		if i := strings.Index(base, "Z-"); i >= 0 {
			id := base[i+2:]
			if cur, ok := latest[id]; !ok || fe.Path > cur.Path {
				latest[id] = fe
			}
		}
	}
	var out []InboxItem
	refused := map[string]bool{}
	// Refused attempts at what is not the actor's to do, from the last
	// week: the lead sees what the agents tried.
	cutoff := e.Now().Add(-authorityWindow)
	for _, fe := range snap.Files(gitstore.MessagesDir) {
		if !strings.Contains(filepath.Base(fe.Path), "Z-authority") {
			continue
		}
		data, err := snap.ReadBlob(fe.Blob)
		if err != nil {
			continue
		}
		f, err := taskfile.Parse("message.md", data)
		if err != nil {
			continue
		}
		item := InboxItem{Reason: "authority", Message: filepath.ToSlash(filepath.Join(gitstore.ViewDirName, fe.Path))}
		if n := f.Node("created"); n != nil {
			item.Created, _ = taskfile.ParseTime(n.Value)
		}
		if item.Created.Before(cutoff) {
			continue
		}
		if n := f.Node("task"); n != nil {
			item.Task = n.Value
		}
		if s := e.Store.SummaryByID(item.Task); s != nil {
			item.Title, item.Queue = s.Task.Title, string(s.Task.Queue)
		}
		by, verb := "", ""
		if n := f.Node("by"); n != nil {
			by = n.Value
		}
		if n := f.Node("verb"); n != nil {
			verb = n.Value
		}
		why := ""
		for _, sec := range f.Sections() {
			if sec.Title == "Why" {
				why = strings.TrimSpace(f.SectionText(sec))
			}
		}
		item.Summary = fmt.Sprintf("%s tried orch %s: %s", by, verb, why)
		out = append(out, item)
	}
	for _, s := range e.Store.Summaries() {
		switch s.Task.Queue {
		case taskfile.Escalated:
			item := InboxItem{Task: s.Task.ID, Title: s.Task.Title, Queue: string(s.Task.Queue), Reason: "escalated", Summary: "escalated"}
			if fe, ok := latest[s.Task.ID]; ok {
				item.Message = filepath.ToSlash(filepath.Join(gitstore.ViewDirName, fe.Path))
				if data, err := snap.ReadBlob(fe.Blob); err == nil {
					item.Reason, item.Summary, item.Created = parseMessage(data)
				}
			}
			out = append(out, item)
		case taskfile.Blocked:
			if e.refusalDecided(s) {
				continue
			}
			refused[s.Task.ID] = true
			out = append(out, InboxItem{Task: s.Task.ID, Title: s.Task.Title, Queue: string(s.Task.Queue), Reason: "refused", Summary: "refused by the agent; decide with orch decide " + s.Task.ID})
		}
	}
	if len(refused) > 0 {
		recs, err := e.latestRefusals(refused)
		if err != nil {
			return nil, err
		}
		for i := range out {
			if rec := recs[out[i].Task]; out[i].Reason == "refused" && rec != nil {
				r := rec.Record
				out[i].Refusal = pendingRefusal(out[i].Task, rec)
				out[i].Created, _ = taskfile.ParseTime(rec.Time)
				out[i].Summary = fmt.Sprintf("%s by %s: %s (default decision: %s)", r.ReasonType, rec.Agent, oneLine(r.ReasonSummary), DefaultDecision(r.ReasonType))
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Reason == "authority") != (out[j].Reason == "authority") {
			return out[j].Reason == "authority" // what waits for a decision first
		}
		if out[i].Task != out[j].Task {
			return out[i].Task < out[j].Task
		}
		return out[i].Created.Before(out[j].Created)
	})
	return out, nil
}

// refusalDecided reports whether the newest note at the top of a blocked
// task is a decision (accept) rather than the refusal itself.
func (e *Engine) refusalDecided(s *gitstore.Summary) bool {
	t, err := e.Load(s)
	if err != nil {
		return false
	}
	for _, sec := range t.File.Sections() {
		if sec.Level != 2 {
			continue // a heading inside someone's text is not orch's section
		}
		switch {
		case strings.HasPrefix(sec.Title, "Decision ("):
			return true
		case strings.HasPrefix(sec.Title, "Refusal ("):
			return false
		}
	}
	return false
}

func parseMessage(data []byte) (reason, summary string, created time.Time) {
	f, err := taskfile.Parse("message.md", data)
	if err != nil {
		return "escalated", "", time.Time{}
	}
	if n := f.Node("reason"); n != nil {
		reason = n.Value
	}
	if n := f.Node("created"); n != nil {
		created, _ = taskfile.ParseTime(n.Value)
	}
	for _, s := range f.Sections() {
		if s.Title == "Why" {
			summary = strings.TrimSpace(f.SectionText(s))
			break
		}
	}
	return reason, summary, created
}
