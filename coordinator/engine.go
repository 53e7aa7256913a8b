//go:build unix

package coordinator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// engineQueue is Queue over orch's own Engine: every call opens the
// repository as the actor it acts for, does what the verbs do, and closes
// it. An agent's claim and lease are its own (the slot's name is the actor,
// an agent); what the coordinator does about a run its agent left (a
// pause, an escalation, a released review claim) is the lead's, who
// started orch run.
type engineQueue struct {
	lead workflow.Options      // the person who started orch run
	sync *workflow.SyncOptions // claims, renewals and reviews through the remote; nil: this clone only
	run  *config.Run
	logs func(task string) []string
	tip  plumbing.Hash
	told string // the run: section whose difference was told last
	// heldTold: the policy-file changes found and recorded already.
	heldTold map[string]bool
	// ghWaited: with land.mode github, when each approved task's pull
	// request last could not merge; the house asks GitHub about it again
	// only after run.poll_prs, not at every step.
	ghWaited map[string]time.Time
}

// NewQueue is the Queue of the repository lead opens: lead is the person
// who runs orch run; sync, when set, makes claims, review claims and lease
// renewals go through the remote (claim refs decide across clones). logs
// lists a task's log files, newest last.
func NewQueue(lead workflow.Options, sync *workflow.SyncOptions, run *config.Run, logs func(task string) []string) Queue {
	return &engineQueue{lead: lead, sync: sync, run: run, logs: logs}
}

// as is how the coordinator opens the repository for a slot's agent: the
// agent is the actor, governed as an agent (docs/design.md §5.1).
func (q *engineQueue) as(s *Slot, verb string, fence *workflow.Fence) workflow.Options {
	o := q.lead
	o.Actor = s.Name
	o.Signals = workflow.ActorSignals{Source: "orch run", EnvAgent: s.Name}
	o.Verb, o.ReadOnly, o.Fence, o.Optimistic = verb, false, fence, false
	return o
}

// asLead is how the coordinator opens the repository for its own
// bookkeeping: as the lead, but holding back any edit of a policy file
// found in the view (an agent may have made it: only a person's own
// command commits one).
func (q *engineQueue) asLead(verb string) workflow.Options {
	o := q.lead
	o.Verb, o.Optimistic, o.Fence, o.HoldPolicyEdits = verb, false, nil, true
	return o
}

func (q *engineQueue) Claim(s *Slot) (*Job, error) {
	var e *workflow.Engine
	var res *workflow.ClaimResult
	var err error
	if q.sync != nil {
		e, res, _, err = workflow.ClaimSync(q.as(s, "claim", nil), workflow.ClaimOptions{}, *q.sync)
	} else {
		if e, err = workflow.Open(q.as(s, "claim", nil)); err == nil {
			res, err = e.Claim(workflow.ClaimOptions{})
		}
	}
	var nothing *workflow.NothingToClaimError
	if errors.As(err, &nothing) {
		err = nil
	}
	if e == nil || err != nil || res == nil {
		if e != nil {
			e.Close()
		}
		return nil, err
	}
	t := res.Task.Task
	j := &Job{Slot: s, Task: t.ID, Title: t.Title, Attempt: res.Attempt, Role: t.Role, Branch: res.Branch}
	if j.Role == "" {
		j.Role = e.Config.DefaultRole
	}
	return q.prepare(e, j, res.Task, "", "claim")
}

// prepare gives a claimed job (task s) its worktree and prompt, and closes
// e. With --sync, the task's branch is fetched first (with e closed: no
// lock of orch's is held across the network), so that work another clone
// pushed is reviewed or continued here; the engine opened again looks the
// task up again.
func (q *engineQueue) prepare(e *workflow.Engine, j *Job, s *gitstore.Summary, role, verb string) (*Job, error) {
	if q.sync != nil && j.Branch != "" {
		repo := e.Store.Repo
		who := e.Signature().String()
		e.Close()
		if err := workflow.FetchTaskBranch(repo, q.sync.Remote, j.Branch, who); err != nil {
			return j, fmt.Errorf("cannot fetch the branch %s from %s: %w", j.Branch, q.sync.Remote, err)
		}
		var err error
		if e, err = workflow.Open(q.as(j.Slot, verb, nil)); err != nil {
			return j, err
		}
		if s = e.Store.SummaryByID(j.Task); s == nil {
			e.Close()
			return j, &workflow.NotFoundError{What: "task", Ref: j.Task}
		}
	}
	defer e.Close()
	p, err := e.Prepare(s, role, true, true)
	var rule *workflow.RuleError
	if errors.As(err, &rule) && rule.Rule == "no_branch" {
		return j, fmt.Errorf("%w: %v", ErrBranchMissing, err)
	}
	if err != nil {
		return j, err
	}
	j.Worktree, j.Prompt = p.Worktree, p.Prompt
	return j, nil
}

func (q *engineQueue) ClaimReview(s *Slot) (*Job, error) {
	var rc *workflow.ReviewClaim
	claim := func(e *workflow.Engine) error {
		var err error
		rc, err = e.ClaimReview("", s.Skip)
		return err
	}
	var e *workflow.Engine
	var err error
	if q.sync != nil {
		e, _, err = workflow.StepSync(q.as(s, "claim-review", nil), *q.sync, "claim-review", claim)
	} else if e, err = workflow.Open(q.as(s, "claim-review", nil)); err == nil {
		err = claim(e)
	}
	if e == nil {
		return nil, err
	}
	if err != nil || rc == nil {
		e.Close()
		return nil, err
	}
	t := rc.Task.Task
	j := &Job{Slot: s, Task: t.ID, Title: t.Title, Attempt: rc.Attempt, Role: "reviewer", Rejections: t.RejectionCount, Branch: t.Branch}
	return q.prepare(e, j, rc.Task, "reviewer", "claim-review")
}

func (q *engineQueue) fence(j *Job) *workflow.Fence {
	return &workflow.Fence{Task: j.Task, Attempt: j.Attempt, Reviewer: j.Slot.Reviewer}
}

func (q *engineQueue) Renew(j *Job) error {
	opts := q.as(j.Slot, "heartbeat", q.fence(j))
	var e *workflow.Engine
	var err error
	if q.sync != nil {
		e, _, _, err = workflow.HeartbeatSync(opts, *q.sync, j.Task)
	} else if e, err = workflow.Open(opts); err == nil {
		_, err = e.Heartbeat(j.Task)
	}
	if e != nil {
		e.Close()
	}
	var rule *workflow.RuleError
	if errors.As(err, &rule) {
		return fmt.Errorf("%w: %s", ErrLost, rule.Msg)
	}
	return err
}

// Finish reads what became of the job's task.
func (q *engineQueue) Finish(j *Job, rec RunRecord) (Outcome, bool, error) {
	var pushErr error
	if q.sync != nil {
		// The agent's commits first, then its verbs: a reviewer or the next
		// agent on another clone fetches the branch the state names.
		if !j.Slot.Reviewer && j.Branch != "" && q.lead.Repo != nil {
			pushErr = workflow.PushTaskBranch(q.lead.Repo, q.sync.Remote, j.Branch)
		}
		_, _, _ = workflow.Sync(q.asLead("sync"), *q.sync)
	}
	e, err := workflow.Open(q.asLead("show"))
	if err != nil {
		return Outcome{}, false, err
	}
	defer e.Close()
	held := q.heldEdits(e, j)
	o, done := q.outcome(e, j)
	o.Held = held
	if err := e.RecordRun(j.Task, runData(j, rec, done)); err != nil {
		o.Warning = "cannot record what the run spent: " + err.Error()
	}
	if pushErr != nil {
		o.Warning = fmt.Sprintf("the branch %s was not pushed to %s (a reviewer on another clone does not see this work yet): %v", j.Branch, q.sync.Remote, pushErr)
	}
	return o, done, nil
}

// heldEdits records a policy file found changed in the view when a run
// ended, naming the run's agent (once for each change of the file), and
// says it for orch run's output.
func (q *engineQueue) heldEdits(e *workflow.Engine, j *Job) string {
	var out []string
	for _, p := range e.HeldPolicyEdits() {
		key := p
		if fi, err := os.Stat(filepath.Join(e.Store.View, filepath.FromSlash(p))); err == nil {
			key = fmt.Sprintf("%s %d %d", p, fi.Size(), fi.ModTime().UnixNano())
		}
		if q.heldTold[key] {
			continue
		}
		if q.heldTold == nil {
			q.heldTold = map[string]bool{}
		}
		q.heldTold[key] = true
		e.RecordHeldEdit(p, j.Slot.Name, j.Task, j.Attempt)
		out = append(out, fmt.Sprintf("%s/%s was changed in the view during %s's run of %s (attempt %d): not committed, and not used; orch run keeps the config it started with, and will not start again until a person commits or undoes the change (orch inbox)",
			gitstore.ViewDirName, p, j.Slot.Name, j.Task, j.Attempt))
	}
	return strings.Join(out, "\n")
}

// outcome is what became of the job's task, as the state branch says.
func (q *engineQueue) outcome(e *workflow.Engine, j *Job) (Outcome, bool) {
	s := e.Store.SummaryByID(j.Task)
	if s == nil {
		return Outcome{Event: "archived", Text: j.Task + " is gone from the state branch (archived)"}, true
	}
	t := &s.Task
	if j.Slot.Reviewer {
		if t.Queue == taskfile.Provisional && t.ReviewClaimedBy == j.Slot.Name && t.ReviewAttempts == j.Attempt {
			return Outcome{}, false
		}
		verdict, words := "approved", "approved"
		switch {
		case t.RejectionCount > j.Rejections:
			verdict, words = "rejected", "rejected"
		case t.Queue != taskfile.Done && t.Queue != taskfile.Approved:
			verdict, words = string(t.Queue), "left it "+string(t.Queue)
		}
		o := Outcome{Event: "reviewed", Verdict: verdict, Queue: string(t.Queue), Text: fmt.Sprintf("%s reviewed %s: %s", j.Slot.Name, j.Task, words)}
		if t.Queue == taskfile.Escalated {
			o.escalation(e, j.Task)
		}
		return o, true
	}
	if t.Queue == taskfile.Claimed && t.ClaimedBy == j.Slot.Name && t.Attempts == j.Attempt {
		return Outcome{}, false
	}
	ev := map[taskfile.Queue]string{taskfile.Provisional: "submitted", taskfile.NeedsContinuation: "paused", taskfile.Blocked: "refused",
		taskfile.Escalated: "escalated", taskfile.Failed: "failed", taskfile.Done: "done"}[t.Queue]
	if ev == "" {
		ev = "moved"
	}
	o := Outcome{Event: ev, Queue: string(t.Queue), Text: fmt.Sprintf("%s on %s: %s (%s)", j.Slot.Name, j.Task, ev, t.Queue)}
	if t.Queue == taskfile.Escalated {
		o.escalation(e, j.Task)
	}
	return o, true
}

// escalation adds why the task escalated, as its inbox message says, on
// a line of its own in the outcome's text.
func (o *Outcome) escalation(e *workflow.Engine, id string) {
	o.Rule, o.Cause = "escalated", "orch inbox says why"
	if x := e.EscalationOf(id); x != nil {
		o.Rule, o.Cause = x.Rule, text.OneLine(x.Why)
	}
	o.Text += fmt.Sprintf("\n  %s escalated (%s): %s", id, o.Rule, o.Cause)
}

// runData is a run's event data.
func runData(j *Job, r RunRecord, done bool) *workflow.RunRecordData {
	role := j.Role
	if j.Slot.Reviewer {
		role = "reviewer"
	}
	return &workflow.RunRecordData{Agent: j.Slot.Name, Role: role, Attempt: j.Attempt, Harness: j.Slot.Harness, DurationMS: r.Duration.Milliseconds(),
		Exit: r.Exit, Transition: done, Cause: r.Cause, Words: r.Words, Killed: r.Killed,
		Input: r.Usage.InputTokens, Output: r.Usage.OutputTokens, CacheRead: r.Usage.CacheReadTokens, CacheWrite: r.Usage.CacheWriteTokens, CostUSD: r.Usage.CostUSD}
}

// SlotStopped tells orch inbox that a slot stopped (the lead's).
func (q *engineQueue) SlotStopped(s *Slot, why string) error {
	e, err := workflow.Open(q.asLead("run"))
	if err != nil {
		return err
	}
	err = e.SlotStopped(s.Name, s.Reviewer, why)
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	return err
}

// Done shares, with --sync, what the last runs recorded.
func (q *engineQueue) Done() {
	if q.sync != nil {
		_, _, _ = workflow.Sync(q.asLead("sync"), *q.sync)
	}
}

// Abandon records a run that ended without a transition of its agent.
func (q *engineQueue) Abandon(j *Job, end End) (Outcome, error) {
	e, err := workflow.Open(q.asLead("run"))
	if err != nil {
		return Outcome{}, err
	}
	res, err := e.EndRun(workflow.RunEnd{Task: j.Task, Agent: j.Slot.Name, Attempt: j.Attempt, Reviewer: j.Slot.Reviewer, Reason: end.Reason,
		Note: runNote(end), Crash: countsAsCrash(end.Reason), MaxCrashes: q.run.MaxCrashes, Logs: q.logs(j.Task)})
	cerr := e.Close()
	var lost *workflow.RunLostError
	if errors.As(err, &lost) {
		return Outcome{}, fmt.Errorf("%w: %s", ErrLost, lost.Msg)
	}
	if err == nil {
		err = cerr
	}
	if err != nil {
		return Outcome{}, err
	}
	if q.sync != nil {
		_, _, _ = workflow.Sync(q.asLead("sync"), *q.sync)
	}
	var o Outcome
	switch {
	case j.Slot.Reviewer && res.To == taskfile.Escalated:
		o = Outcome{Event: "escalated", Text: fmt.Sprintf("%s escalated: orch run cannot start a review of it; orch inbox says why", j.Task)}
	case j.Slot.Reviewer:
		o = Outcome{Event: "released", Text: fmt.Sprintf("%s left %s without a verdict (%s): its review claim is released", j.Slot.Name, j.Task, endWords(end))}
	case res.To == taskfile.Escalated:
		o = Outcome{Event: "escalated", Text: fmt.Sprintf("%s escalated: %d runs in a row ended without a transition (run.max_crashes); orch inbox says what to do", j.Task, q.run.MaxCrashes)}
	default:
		o = Outcome{Event: "paused", Text: fmt.Sprintf("%s paused after %s's attempt %d ended (%s); the next claimant continues", j.Task, j.Slot.Name, j.Attempt, endWords(end))}
	}
	if res.To != "" {
		o.Queue = string(res.To)
	}
	if x := res.Escalation; x != nil {
		o.Rule, o.Cause = x.Rule, text.OneLine(x.Why)
		o.Text = fmt.Sprintf("%s escalated (%s): %s; orch inbox says what to do", j.Task, x.Rule, strings.TrimSuffix(o.Cause, "."))
	}
	return o, nil
}

// countsAsCrash: exits, timeouts and stalls count toward run.max_crashes;
// rate limits, a stop by the lead, a dead coordinator, a slot's broken
// setup (setup, permission, fast) and a missing branch do not.
func countsAsCrash(reason string) bool {
	// setup, permission, fast, rate_limit, stopped, orphaned, no_branch:
	// not the task's doing.
	return reason == "crash" || reason == "timeout" || reason == "stall" || reason == "unstartable"
}

// noteLines and noteLineWidth bound what a note keeps of a run's output:
// its last lines, each cut, control characters made visible. Whatever the
// agent printed (a NUL, 30 kB lines, escape sequences), the note can be
// written; the log has the rest.
const (
	noteLines     = 10
	noteLineWidth = 300
)

// runNote is the note a run without a transition leaves for the next
// agent: the exit status, the duration and the log's last lines (indented:
// a code block, whatever the agent printed).
func runNote(end End) string {
	var b strings.Builder
	switch end.Reason {
	case "timeout":
		fmt.Fprintf(&b, "It ran past run.task_timeout and was stopped after %s.", roundDuration(end.Duration))
	case "stall":
		fmt.Fprintf(&b, "It printed nothing for run.stall_timeout and was stopped after %s.", roundDuration(end.Duration))
	case "rate_limit":
		fmt.Fprintf(&b, "It was rate limited (exit status %d, after %s); this does not count as a crash.", end.ExitCode, roundDuration(end.Duration))
	case "stopped":
		fmt.Fprintf(&b, "The lead stopped orch run after %s.", roundDuration(end.Duration))
	case "orphaned":
		b.WriteString("The orch run that started it ended without stopping it (killed); the agent died with it.")
	case "unstartable":
		b.WriteString("orch run could not start it.")
	case "setup", "permission":
		fmt.Fprintf(&b, "It could not work: its setup is the lead's to fix (exit status %d, after %s); this does not count as a crash.", end.ExitCode, roundDuration(end.Duration))
	case "fast":
		fmt.Fprintf(&b, "It exited with status %d after %s without a transition, too fast to have worked; this does not count as a crash.", end.ExitCode, roundDuration(end.Duration))
	default:
		fmt.Fprintf(&b, "It exited with status %d after %s without submitting, pausing or refusing.", end.ExitCode, roundDuration(end.Duration))
	}
	if end.Cause != "" {
		fmt.Fprintf(&b, " The cause: %s.", strings.TrimSuffix(text.Clip(text.Visible(text.OneLine(end.Cause)), 300), "."))
	}
	if len(end.Escaped) > 0 {
		b.WriteString(" It left processes that escaped its process group, which orch run ended: ")
		for i, p := range end.Escaped {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(text.Clip(text.Visible(text.OneLine(p)), 120))
		}
		b.WriteString(".")
	}
	if tail := text.Lines(strings.Join(end.Tail, "\n"), noteLines, noteLineWidth); len(end.Tail) > 0 && len(tail) > 0 {
		b.WriteString(" The last lines of its output:\n\n")
		for _, l := range tail {
			b.WriteString("    " + strings.ReplaceAll(l, "\t", "    ") + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// roundDuration shows a short run in milliseconds, a long one in seconds.
func roundDuration(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Second)
}

func (q *engineQueue) Left() (map[string]int, error) {
	e, err := workflow.Open(q.asLead("list"))
	if err != nil {
		return nil, err
	}
	defer e.Close()
	open := map[taskfile.Queue]bool{}
	for _, qu := range taskfile.Queues {
		open[qu] = qu.Open()
	}
	left := map[string]int{}
	e.Store.EachSummaryIn(open, func(s *gitstore.Summary) { left[string(s.Task.Queue)]++ })
	return left, nil
}

func (q *engineQueue) Provisional() (int, error) {
	e, err := workflow.Open(q.asLead("list"))
	if err != nil {
		return 0, err
	}
	defer e.Close()
	n := 0
	e.Store.EachSummaryIn(map[taskfile.Queue]bool{taskfile.Provisional: true}, func(*gitstore.Summary) { n++ })
	return n, nil
}

// Moved reads the state branch's tip: far cheaper than opening the store.
func (q *engineQueue) Moved() bool {
	r := q.lead.Repo
	if r == nil {
		return true
	}
	ref := q.lead.StateBranch
	if ref == "" {
		ref = gitstore.DefaultStateBranch
	}
	if !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	h, err := r.ReadRef(ref)
	if err != nil {
		return true
	}
	moved := h != q.tip
	q.tip = h
	return moved
}

func (q *engineQueue) PollPRs() error {
	poll, err := workflow.PollPRs(q.asLead("pr poll"), true)
	if err != nil {
		return err
	}
	return poll.Stopped
}

// Archive is the lead's: the housekeeping a transition of the CLI does
// after it (workflow.Engine.ArchiveDue).
func (q *engineQueue) Archive() error {
	e, err := workflow.Open(q.asLead("run"))
	if err != nil {
		return err
	}
	defer e.Close()
	_, err = e.ArchiveDue(workflow.ArchiveBatch)
	return err
}

func (q *engineQueue) ClaimedSince(s *Slot, since time.Time) ([]*Job, error) {
	if q.sync != nil {
		// The claim may be on the remote only (claim refs): bring it here.
		_, _, _ = workflow.Sync(q.asLead("sync"), *q.sync)
	}
	e, err := workflow.Open(q.asLead("run"))
	if err != nil {
		return nil, err
	}
	defer e.Close()
	var out []*Job
	for _, c := range e.ClaimsHere(s.Name, s.Reviewer, since) {
		out = append(out, &Job{Slot: s, Task: c.Task, Attempt: c.Attempt})
	}
	return out, nil
}

func (q *engineQueue) RunChanged() string {
	o := q.asLead("run")
	o.NoReconcile = true
	e, err := workflow.Open(o)
	if err != nil {
		return ""
	}
	now := e.Config.Run
	e.Close()
	was, is := runLines(q.run), runLines(&now)
	if is == was || is == q.told {
		return ""
	}
	q.told = is
	return lineDiff(was, is)
}

// runLines is run: one line a slot or setting, for telling a change.
func runLines(r *config.Run) string {
	var b strings.Builder
	for _, list := range []struct {
		what  string
		slots []config.RunSlot
	}{{"agent", r.Agents}, {"reviewer", r.Reviewers}} {
		for _, s := range list.slots {
			j, _ := json.Marshal(s)
			fmt.Fprintf(&b, "%s %s: %s\n", list.what, s.Name, j)
		}
	}
	fmt.Fprintf(&b, "task_timeout: %s\nstall_timeout: %s\nkill_grace: %s\nmax_provisional: %d\nmax_crashes: %d\npoll_prs: %s\nbackoff: %s\nnotify: %q\n",
		time.Duration(r.TaskTimeout), time.Duration(r.StallTimeout), time.Duration(r.KillGrace), r.MaxProvisional, r.MaxCrashes, time.Duration(r.PollPRs), time.Duration(r.Backoff), r.Notify)
	return b.String()
}

// lineDiff lists the lines one text has and the other has not: - was, + is.
func lineDiff(was, is string) string {
	wl, il := strings.Split(strings.TrimSpace(was), "\n"), strings.Split(strings.TrimSpace(is), "\n")
	var b strings.Builder
	for _, l := range wl {
		if !slices.Contains(il, l) {
			b.WriteString("  - " + l + "\n")
		}
	}
	for _, l := range il {
		if !slices.Contains(wl, l) {
			b.WriteString("  + " + l + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// House does one step of the coordinator's own work: review.check on the
// next submission that waits for it, else a landing of approved work (with
// --sync, the push of the base is the commit point; with land.mode github,
// gh pr merge of each approved task's pull request). It acts as the lead.
func (q *engineQueue) House() HouseResult {
	rep, err := workflow.ReviewCheck(q.asLead("run"))
	if err != nil {
		return HouseResult{Err: err}
	}
	if rep != nil {
		ev := Event{Event: "checked", Task: rep.Task, Reason: rep.Outcome, Cause: rep.Why, Text: fmt.Sprintf("review.check on %s: %s", rep.Task, rep.Outcome)}
		if rep.Outcome == "escalated" {
			ev.Queue, ev.Rule = string(taskfile.Escalated), "land_failures"
		}
		if rep.Why != "" {
			ev.Text += " (" + rep.Why + ")"
		}
		q.shareState()
		return HouseResult{Events: []Event{ev}}
	}
	lo := workflow.LandOptions{}
	if q.sync != nil {
		lo.Remote = q.sync.Remote
	}
	now := time.Now()
	lo.Hold = q.ghHeld(now)
	lrep, err := workflow.LandApproved(q.asLead("land"), lo)
	var rule *workflow.RuleError
	if errors.As(err, &rule) && rule.Rule == "land_mode" {
		return HouseResult{Idle: true}
	}
	if err != nil {
		return HouseResult{Err: err}
	}
	var evs []Event
	for _, t := range lrep.Results {
		ev := Event{Event: t.Outcome, Task: t.Task, Reason: "land", Cause: t.Why, Text: t.Summary(lrep.Base)}
		switch t.Outcome {
		case "landed":
			ev.Queue = string(taskfile.Done)
		case "rejected":
			ev.Queue = string(taskfile.Rejected)
		case "escalated":
			// Landing failed for the last time (land.max_failures).
			ev.Queue, ev.Rule = string(taskfile.Escalated), "land_failures"
		case "waiting":
			if q.ghWaited == nil {
				q.ghWaited = map[string]time.Time{}
			}
			q.ghWaited[t.Task] = now
		}
		evs = append(evs, ev)
	}
	if lrep.Waiting != "" {
		evs = append(evs, Event{Event: "waiting", Reason: "land", Text: "landing waits: " + lrep.Waiting})
	}
	if len(evs) > 0 {
		q.shareState()
	}
	moved := 0
	for _, t := range lrep.Results {
		if t.Outcome != "waiting" { // land.mode github: a pull request GitHub does not merge yet
			moved++
		}
	}
	// Idle when nothing moved and nothing is left: landing waits for a
	// person, or the step found nothing approved.
	idle := moved == 0 && !lrep.Busy && (lrep.Waiting != "" || lrep.Queued == 0)
	return HouseResult{Events: evs, Idle: idle}
}

// ghHeld lists the approved tasks whose pull request could not merge less
// than run.poll_prs (default 5 minutes) ago: a house step every few
// seconds must not spend GitHub's rate limit on what waits for CI.
func (q *engineQueue) ghHeld(now time.Time) map[string]bool {
	every := 5 * time.Minute
	if q.run != nil && q.run.PollPRs > 0 {
		every = time.Duration(q.run.PollPRs)
	}
	held := map[string]bool{}
	for id, at := range q.ghWaited {
		if now.Sub(at) < every {
			held[id] = true
		} else {
			delete(q.ghWaited, id)
		}
	}
	return held
}

// shareState syncs the state branch with --sync.
func (q *engineQueue) shareState() {
	if q.sync != nil {
		_, _, _ = workflow.Sync(q.asLead("sync"), *q.sync)
	}
}
