package workflow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/internal/trace"
	"github.com/orch-tool/orch/land"
	"github.com/orch-tool/orch/taskfile"
)

// Landing (docs/design.md): with land.mode set, approval moves a task to
// approved, and done means its work is on the base branch. A landing step
// (package land) merges the approved commits onto the base's tip in a
// scratch worktree, checks the result and moves the base by
// compare-and-swap; this file picks what lands, in order, and records what
// became of each: done with the commit that holds it, or back to rejected
// on its own branch with a round of landing feedback (a conflict, a red
// check), which locks no one out and counts toward land.max_failures.

// approval is where approval takes a task and what it records: with
// landing on, approved, with the branch tip that was approved (what lands,
// whatever the branch holds later) and when (landing order); done when
// landing is off, or when the task has no branch (nothing to land).
func (e *Engine) approval(t *taskfile.Task) (taskfile.Queue, []taskfile.Edit, error) {
	if !e.Config.Land.On() || t.Branch == "" || !taskfile.ValidBranch(t.Branch) {
		return taskfile.Done, nil, nil
	}
	tip, err := e.Store.ReadRef("refs/heads/" + t.Branch)
	if err != nil {
		return "", nil, err
	}
	if tip.IsZero() {
		return "", nil, &RuleError{Rule: "no_branch", Msg: fmt.Sprintf("%s cannot be approved for landing: its branch %s is not in this repository", t.ID, t.Branch),
			Next: Next{Advice: AdviseFetchBranch, Branch: t.Branch}}
	}
	return taskfile.Approved, []taskfile.Edit{taskfile.Set(taskfile.KeyApprovedAt, taskfile.Time(e.Now())), taskfile.Set(taskfile.KeyApprovedAtSHA, taskfile.String(tip.String()))}, nil
}

// LandQueue is the approved tasks in landing order: priority first, then
// the oldest approval, then ID.
func (e *Engine) LandQueue() []*gitstore.Summary {
	var out []*gitstore.Summary
	e.Store.EachSummaryIn(map[taskfile.Queue]bool{taskfile.Approved: true}, func(s *gitstore.Summary) {
		if s.Problem == "" {
			out = append(out, s)
		}
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i].Task, &out[j].Task
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if !a.ApprovedAt.Equal(b.ApprovedAt) {
			return a.ApprovedAt.Before(b.ApprovedAt)
		}
		return a.ID < b.ID
	})
	return out
}

// baseOf is the branch a task's work lands on.
func (e *Engine) baseOf(t *taskfile.Task) string {
	if t.BaseBranch != "" {
		return t.BaseBranch
	}
	return e.Config.BaseBranch
}

// LandOptions are a landing's settings beyond config.yaml's.
type LandOptions struct {
	// Remote, when set, makes the push of the base the commit point
	// (land.push, or orch run --sync).
	Remote string
	// DryRun lists what would land, in order, and the conflicts a trial
	// merge sees, and changes nothing.
	DryRun bool
	// Max bounds how many tasks one call lands (0: land.batch).
	Max int
	// Wait waits for another landing in this clone to end; without it a
	// landing that finds one running returns at once (LandReport.Busy).
	Wait bool
	// Hold lists approved tasks a github landing does not ask GitHub
	// about this time (orch run's house: their pull request waited a
	// moment ago); they count as waiting.
	Hold map[string]bool
}

// LandReport is what one landing did, a line for each task it tried.
type LandReport struct {
	Base    string
	Results []LandedTask
	// Waiting says why landing waits (the base checked out with changes),
	// "" when it did not.
	Waiting string
	// Busy: another landing runs in this clone (LandOptions.Wait unset).
	Busy bool
	// Queued is how many approved tasks of the base the step found, read
	// under the landing lock: none, and nothing is left to land.
	Queued int
	// All: the step tried every approved task of the base (land.mode:
	// github, where each pull request merges on its own), so a next step
	// would only try again what waits.
	All bool
}

// LandedTask is one task a landing tried.
type LandedTask struct {
	Task    string `json:"task"`
	Title   string `json:"title"`
	Outcome string `json:"outcome"`   // landed, rejected, escalated, would_land, would_conflict, skipped; github: waiting, would_escalate
	Commit  string `json:"commit"`    // the landed commit on the base ("" unless landed)
	Check   string `json:"check"`     // passed, none, failed ("" when no check ran, as with land.mode: github)
	Why     string `json:"why"`       // why it did not land ("" when it did)
	PR      int    `json:"pr_number"` // land.mode github: the pull request (0: none, or local landing)
	// Escalation is why the landing escalated the task (for orch run's
	// event; orch land's answer says it in why).
	Escalation *Escalation `json:"-"`
}

// Summary is the outcome in a line, as orch land and orch run print it.
func (t LandedTask) Summary(base string) string {
	switch {
	case t.Outcome == "landed" && t.PR > 0:
		return fmt.Sprintf("%s landed on %s as %s (PR #%d merged on GitHub): %s", t.Task, base, shortHash(t.Commit), t.PR, t.Title)
	case t.Outcome == "landed":
		return fmt.Sprintf("%s landed on %s as %s (check: %s): %s", t.Task, base, shortHash(t.Commit), t.Check, t.Title)
	case t.Why != "":
		return fmt.Sprintf("%s %s: %s (%s)", t.Task, t.Outcome, t.Title, t.Why)
	}
	return fmt.Sprintf("%s %s: %s", t.Task, t.Outcome, t.Title)
}

func shortHash(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

// LandApproved lands the approved tasks of one base branch, up to
// land.batch of them as one step (opts.Max overrides), in landing order.
// The merge and the check run with no lock of orch's held: the engines it
// opens (opts, as the lead) only read the queue before and record the
// outcomes after. A task moved meanwhile (requeued by a person) is left
// as it is.
func LandApproved(opts Options, lo LandOptions) (*LandReport, error) {
	e, err := Open(opts)
	if err != nil {
		return nil, err
	}
	cfg := e.Config
	if err := e.requireLanding(); err != nil {
		e.Close()
		return nil, err
	}
	if lo.Remote == "" && cfg.Land.Push {
		lo.Remote = "origin"
	}
	rep := &LandReport{Base: cfg.BaseBranch}
	scratch := filepath.Join(e.Store.PrivDir(), gitstore.LandDir, "wt")
	if !lo.DryRun {
		unlock, err := land.Lock(scratch, lo.Wait)
		if errors.Is(err, land.ErrBusy) {
			e.Close()
			rep.Busy = true
			return rep, nil
		}
		if err != nil {
			e.Close()
			return nil, err
		}
		defer unlock()
	}
	if cfg.Land.Mode == config.LandGitHub {
		// Under the same lock: two coordinators of one clone never merge
		// one pull request twice.
		return landGitHub(opts, e, rep, lo)
	}
	queue := e.LandQueue()
	max := lo.Max
	if max <= 0 {
		max = cfg.Land.Batch
	}
	var cands []land.Candidate
	for _, s := range queue {
		t := &s.Task
		if e.baseOf(t) != rep.Base {
			continue // another base: another step
		}
		rep.Queued++
		if !lo.DryRun && len(cands) >= max {
			break
		}
		cands = append(cands, land.Candidate{Task: t.ID, Title: t.Title, Branch: t.Branch, Tip: t.ApprovedCommit})
	}
	repo := e.Store.Repo
	sig := e.Signature()
	e.Close()
	if len(cands) == 0 {
		return rep, nil
	}
	if lo.DryRun {
		return dryRun(repo, rep, cands)
	}
	lopts := land.Options{CommonDir: repo.CommonDir, Base: rep.Base, Strategy: cfg.Land.Strategy, Check: cfg.Land.Check,
		CheckTimeout: time.Duration(cfg.Land.CheckTimeout), Scratch: scratch, Name: sig.Name, Email: sig.Email,
		Remote: lo.Remote, Env: checkEnv(cands), CheckedOut: repo.CheckedOutIn}
	trace.Phase("land: queue read")
	outcomes, err := land.Land(lopts, cands)
	trace.Phase("land: step")
	var wait *land.WaitError
	if asWait(err, &wait) {
		rep.Waiting = wait.Error()
		return rep, nil
	}
	if err != nil {
		return rep, &ExternalError{Msg: "landing failed: " + err.Error(), Next: Next{Advice: AdviseRetryCommand}}
	}
	e, err = Open(opts)
	if err != nil {
		return rep, err
	}
	defer e.Close()
	for i, o := range outcomes {
		c := cands[i]
		lt := LandedTask{Task: c.Task, Title: c.Title, Commit: o.Commit, Check: o.Check}
		var res *Result
		switch {
		case o.Landed:
			res, err = e.landed(c, o)
			lt.Outcome = "landed"
		case o.Failure != nil:
			res, err = e.landFailed(c, o.Failure)
			lt.Outcome, lt.Why = "rejected", failureWords(o.Failure)
		default:
			continue
		}
		if err != nil {
			why, moved := movedMeanwhile(c.Task, err)
			if !moved {
				return rep, err
			}
			lt.Outcome, lt.Why = "skipped", why
			rep.Results = append(rep.Results, lt)
			continue
		}
		if res != nil && res.To == taskfile.Escalated {
			lt.Outcome, lt.Escalation = "escalated", res.Escalation
		}
		rep.Results = append(rep.Results, lt)
		trace.Phase("land: recorded " + c.Task)
		if o.Landed {
			e.cleanLanded(c)
			trace.Phase("land: cleaned " + c.Task)
		}
	}
	return rep, nil
}

// movedMeanwhile says why a landing's record found its task moved since
// the step read it (recorded by another coordinator, requeued by a
// person): the task is skipped, not an error of the landing.
func movedMeanwhile(task string, err error) (why string, moved bool) {
	var lost *RunLostError
	var illegal *IllegalTransitionError
	switch {
	case errors.As(err, &lost):
		return lost.Msg, true
	case errors.As(err, &illegal):
		return fmt.Sprintf("%s is %s now", task, illegal.Queue), true
	}
	return "", false
}

func asWait(err error, w **land.WaitError) bool {
	we, ok := err.(*land.WaitError)
	*w = we
	return ok
}

// requireLanding refuses a landing where land.mode does not land here.
func (e *Engine) requireLanding() error {
	if err := e.RequireInit(); err != nil {
		return err
	}
	if err := e.requireHuman("land", "", "landing work on the base branch"); err != nil {
		return err
	}
	if !e.Config.Land.On() {
		return &RuleError{Rule: "land_mode", Msg: fmt.Sprintf("land.mode is %s: approval is the end and a person merges; orch land lands only with land.mode: local or github", e.Config.Land.Mode),
			Next: Next{Advice: AdviseLandMode}}
	}
	return nil
}

// checkEnv is the check's environment: orch's own, without what would
// point git elsewhere, with the tasks it checks.
func checkEnv(cands []land.Candidate) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GIT_DIR" || k == "GIT_WORK_TREE" || k == "GIT_INDEX_FILE" || k == "GIT_COMMON_DIR" || strings.HasPrefix(k, "ORCH_") {
			continue
		}
		env = append(env, kv)
	}
	var ids []string
	for _, c := range cands {
		ids = append(ids, c.Task)
	}
	return append(env, "ORCH_LAND_TASKS="+strings.Join(ids, " "))
}

// dryRun reports what would land, in order, with the conflicts a trial
// merge (git merge-tree, no worktree) sees against the base as it is.
func dryRun(repo *gitrepo.Repo, rep *LandReport, cands []land.Candidate) (*LandReport, error) {
	for _, c := range cands {
		lt := LandedTask{Task: c.Task, Title: c.Title, Outcome: "would_land"}
		if files, err := land.TrialConflicts(repo.CommonDir, rep.Base, c.Tip); err != nil {
			lt.Outcome, lt.Why = "skipped", err.Error()
		} else if len(files) > 0 {
			lt.Outcome, lt.Why = "would_conflict", "conflicts in "+strings.Join(files, ", ")
		}
		rep.Results = append(rep.Results, lt)
	}
	return rep, nil
}

// landed records a task's landing: approved -> done, with the commit of
// the base that holds its work.
func (e *Engine) landed(c land.Candidate, o land.Outcome) (*Result, error) {
	return e.transition(c.Task, ActionLand, func(t *Task) (*change, error) {
		if t.Task.Queue != taskfile.Approved || t.Task.ApprovedCommit != c.Tip {
			return nil, &RunLostError{fmt.Sprintf("%s is %s now: its landing (%s) is recorded nowhere else", c.Task, t.Task.Queue, short(o.Commit))}
		}
		f, err := t.File.Apply(taskfile.Set(taskfile.KeyLandedCommit, taskfile.String(o.Commit)))
		if err != nil {
			return nil, err
		}
		body := fmt.Sprintf("Landed on %s as %s (check: %s).", e.baseOf(&t.Task), short(o.Commit), o.Check)
		if o.Already {
			body = fmt.Sprintf("Found landed on %s as %s (check: %s): a landing whose record was lost.", e.baseOf(&t.Task), short(o.Commit), o.Check)
		}
		return &change{file: f, to: taskfile.Done, body: body,
			data: &LandData{Base: e.baseOf(&t.Task), Commit: o.Commit, Tip: c.Tip, Check: o.Check, Strategy: e.Config.Land.Strategy}}, nil
	})
}

// landFailed sends work that could not land back through the loop, on its
// branch: rejected with a round of landing feedback (what it met, and how
// to bring the branch up to date), or escalated at land.max_failures. No
// one is locked out: it is not a verdict on the author.
func (e *Engine) landFailed(c land.Candidate, fail *land.Failure) (*Result, error) {
	var res *Result
	var err error
	step := func(t *Task) (*change, error) {
		if t.Task.Queue != taskfile.Approved || t.Task.ApprovedCommit != c.Tip {
			return nil, &RunLostError{fmt.Sprintf("%s is %s now", c.Task, t.Task.Queue)}
		}
		return e.failureChange(t, fail, "landing", c.Tip)
	}
	res, err = e.transition(c.Task, ActionLand, step)
	return res, err
}

// failureChange is the change of a landing or review-check failure (kind
// "landing" or "check"): a feedback round, land_failures one more, the
// branch tip recorded so that the resubmission must add commits; rejected,
// or escalated at land.max_failures.
func (e *Engine) failureChange(t *Task, fail *land.Failure, kind, tip string) (*change, error) {
	n := t.Task.LandFailures + 1
	max := e.Config.Land.MaxFailures
	round := taskfile.Round{Number: n, Landing: true, Sources: []taskfile.Source{{From: "orch " + map[string]string{"landing": "land", "check": "run (review.check)"}[kind], Time: e.Now(),
		Text: e.failureText(&t.Task, fail, kind, tip, n, max)}}}
	f, err := t.File.AddSection(strings.Replace(taskfile.RenderRound(round), "(landing #", "("+kind+" #", 1))
	if err != nil {
		return nil, err
	}
	edits := []taskfile.Edit{taskfile.Set(taskfile.KeyLandFailures, taskfile.Int(n)), taskfile.Set(taskfile.KeyRejectedAt, taskfile.String(tip)),
		taskfile.Unset(taskfile.KeyCheckedCommit)}
	if f, err = f.Apply(edits...); err != nil {
		return nil, err
	}
	what := failureWords(fail)
	ld := LandData{Base: e.baseOf(&t.Task), Tip: tip, Failure: fail.Kind, Why: what, Failures: n, Kind: kind}
	var data EventData = &ld
	if kind == "check" {
		data = &CheckData{ld}
	}
	if n >= max {
		why := fmt.Sprintf("%d landing failures (land.max_failures is %d); the last: %s", n, max, what)
		msg := e.escalationMessage(&f.Task, t.Path, "land_failures", why)
		return &change{file: f, to: taskfile.Escalated, body: "Escalated: " + why, extra: []gitstore.Change{msg}, data: data, escalation: &Escalation{"land_failures", why}}, nil
	}
	return &change{file: f, to: taskfile.Rejected, body: fmt.Sprintf("Could not land (%s #%d of %d): %s.", kind, n, max, what), data: data}, nil
}

// failureWords says a failure in a line.
func failureWords(f *land.Failure) string {
	if f.Kind == "pr_conflict" {
		return f.Output
	}
	if f.Kind == "conflict" {
		return fmt.Sprintf("it conflicts with %s in %s", short(f.Base), orNone(f.Files))
	}
	if f.Exit < 0 {
		return fmt.Sprintf("the check `%s` ran past land.check_timeout", text.Clip(f.Command, 80))
	}
	return fmt.Sprintf("the check `%s` failed (exit %d)", text.Clip(f.Command, 80), f.Exit)
}

// failureText is the round's text: what the work met, and the exact
// commands that bring the branch up to date.
func (e *Engine) failureText(t *taskfile.Task, f *land.Failure, kind, tip string, n, max int) string {
	base := e.baseOf(t)
	var b strings.Builder
	switch {
	case f.Kind == "pr_conflict":
		fmt.Fprintf(&b, "The approved work (%s at %s) could not merge on GitHub: %s. Pull request #%d must be brought up to date with %s before it can merge.\n", t.Branch, short(tip), f.Output, f.PR, base)
	case f.Kind == "conflict":
		fmt.Fprintf(&b, "The approved work (%s at %s) could not land: it conflicts with %s at %s.\n\nConflicting files:\n\n", t.Branch, short(tip), base, short(f.Base))
		for _, p := range f.Files {
			fmt.Fprintf(&b, "- `%s`\n", p)
		}
		b.WriteString("\nThe conflicting hunks:\n\n" + indent(f.Hunks) + "\n")
	case kind == "check":
		fmt.Fprintf(&b, "review.check failed on %s at %s, before review: `%s` exited %d. The tail of its output:\n\n%s\n", t.Branch, short(tip), f.Command, f.Exit, indent(f.Output))
	default:
		fmt.Fprintf(&b, "The approved work (%s at %s), merged onto %s at %s, failed the check: `%s` exited %d. The tail of its output:\n\n%s\n",
			t.Branch, short(tip), base, short(f.Base), f.Command, f.Exit, indent(f.Output))
	}
	fmt.Fprintf(&b, "\nTo bring the branch up to date, in the task's worktree (orch worktree %s):\n\n", t.ID)
	switch {
	case kind == "check":
		fmt.Fprintf(&b, "    %s   # see it fail, fix it, git commit\n", f.Command)
	case f.Kind == "pr_conflict":
		fmt.Fprintf(&b, "    git fetch origin %s\n    git merge origin/%s   # resolve, git commit\n    git push origin %s   # the pull request's branch\n", base, base, t.Branch)
	default:
		check := ""
		if e.Config.Land.Check != "" {
			check = " run " + e.Config.Land.Check + ","
		}
		fmt.Fprintf(&b, "    git merge %s   # resolve,%s git commit\n", base, check)
	}
	fmt.Fprintf(&b, "    orch submit %s -m \"what you changed\"\n\n", t.ID)
	fmt.Fprintf(&b, "This is not a verdict on the work: no one is locked out. It is failure %d of %d (land.max_failures): the %s escalates it to a human.", n, max, ordinal(max))
	return b.String()
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "first"
	case 2:
		return "second"
	case 3:
		return "third"
	}
	return fmt.Sprintf("%dth", n)
}

func indent(s string) string {
	if strings.TrimSpace(s) == "" {
		return "    (nothing)"
	}
	lines := strings.Split(strings.TrimRight(text.Visible(s), "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + strings.ReplaceAll(l, "\t", "    ")
	}
	return strings.Join(lines, "\n")
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// cleanLanded removes a landed task's worktree (unless it holds what its
// commits do not: changes, untracked or ignored files) and, with
// land.delete_branch, its branch (unless it moved past what landed). The
// worktree goes at once, as git knows it; its files are deleted by
// DeleteLater, with whatever an earlier landing left in the trash.
func (e *Engine) cleanLanded(c land.Candidate) {
	repo := e.Store.Repo
	ref := "refs/heads/" + c.Branch
	trash := filepath.Join(e.Store.PrivDir(), gitstore.TrashDir)
	discarded := false
	for _, w := range repo.CheckedOutIn(ref) {
		if files, err := repo.WorktreeFiles(w); err == nil && len(files) == 0 {
			if dir, _ := repo.DiscardWorktree(w, trash); dir != "" {
				discarded = true
			}
		}
	}
	if discarded {
		deleteLater(gitrepo.TrashEntries(trash))
	}
	if !e.Config.Land.DeletesBranch() || len(repo.CheckedOutIn(ref)) > 0 {
		return
	}
	if h, err := repo.ReadRef(ref); err == nil && h.String() == c.Tip {
		_ = repo.DeleteRef(ref, h)
	}
}

// DeleteLater, when set, deletes directories without the landing waiting
// for it: the files of removed worktrees, which are cleanup after a
// landing's commit point (cmd/orch sets it). Unset, in this package's
// tests, they are deleted at once.
var DeleteLater func(dirs []string)

func deleteLater(dirs []string) {
	if DeleteLater != nil {
		DeleteLater(dirs)
		return
	}
	gitrepo.RemoveAll(dirs)
}

// LandData is the event of a landing, or of a landing failure (Failure
// set): the base, the commit that holds the work, the approved tip, the
// check's result.
type LandData struct {
	Base     string `json:"base"`
	Commit   string `json:"commit,omitempty"`
	Tip      string `json:"tip"`
	Check    string `json:"check,omitempty"`
	Strategy string `json:"strategy,omitempty"`
	Failure  string `json:"failure,omitempty"` // conflict or check; github: pr_conflict, pr_closed, no_pr
	Why      string `json:"why,omitempty"`
	Failures int    `json:"failures,omitempty"`
	Kind     string `json:"kind,omitempty"`      // landing or check (review.check)
	PR       int    `json:"pr_number,omitempty"` // land.mode github: the pull request
}

// Action is a LandData's action.
func (*LandData) Action() Action { return ActionLand }

// CheckData is the event of review.check on a submission: a LandData of
// kind "check".
type CheckData struct{ LandData }

// Action is a CheckData's action.
func (*CheckData) Action() Action { return ActionCheck }

// needsCheck reports whether a submission waits for review.check: it is
// set, and the check has not passed on the branch's tip.
func (e *Engine) needsCheck(t *taskfile.Task) bool {
	if e.Config.Review.Check == "" || t.Queue != taskfile.Provisional {
		return false
	}
	tip, err := e.Store.ReadRef("refs/heads/" + t.Branch)
	return err != nil || tip.IsZero() || tip.String() != t.CheckedCommit
}

// CheckReport is what one run of review.check did.
type CheckReport struct {
	Task    string
	Title   string
	Passed  bool
	Outcome string // passed, rejected, escalated, skipped
	Why     string
}

// ReviewCheck runs review.check on the next submission that waits for it
// (claim order), in the task's worktree, with no lock of orch's held while
// it runs: green records the tip it passed on (reviewers claim only such
// submissions), red sends the task back with the check's output as a round
// of feedback, without lockout, counted toward land.max_failures. nil when
// none waits.
func ReviewCheck(opts Options) (*CheckReport, error) {
	e, err := Open(opts)
	if err != nil {
		return nil, err
	}
	var next *gitstore.Summary
	var candidates []*gitstore.Summary
	e.Store.EachSummaryIn(map[taskfile.Queue]bool{taskfile.Provisional: true}, func(s *gitstore.Summary) { candidates = append(candidates, s) })
	sortClaimOrder(candidates, false)
	for _, s := range candidates {
		if e.needsCheck(&s.Task) && !e.reviewClaimed(&s.Task) {
			next = s
			break
		}
	}
	if next == nil {
		return nil, e.Close()
	}
	t := next.Task
	cmd, timeout := e.Config.Review.Check, time.Duration(e.Config.Land.CheckTimeout)
	wt, werr := e.TaskWorktree(t.ID, "")
	tipHash, _ := e.Store.ReadRef("refs/heads/" + t.Branch)
	tip := tipHash.String()
	e.Close()
	rep := &CheckReport{Task: t.ID, Title: t.Title}
	var fail *land.Failure
	if werr != nil {
		fail = &land.Failure{Kind: "check", Command: cmd, Exit: -2, Output: "orch could not make the task's worktree: " + werr.Error()}
	} else {
		code, out, err := land.RunCheck(wt.Path, cmd, checkEnv(nil), timeout)
		if err != nil {
			return nil, &ExternalError{Msg: err.Error(), Next: Next{Advice: AdviseRetryCommand}}
		}
		if code != 0 {
			fail = &land.Failure{Kind: "check", Command: cmd, Exit: code, Output: out}
		}
	}
	if e, err = Open(opts); err != nil {
		return nil, err
	}
	defer e.Close()
	res, err := e.transitionAny(t.ID, ActionCheck, func(tk *Task) (*change, error) {
		if tk.Task.Queue != taskfile.Provisional || tk.Task.Branch != t.Branch {
			return nil, &RunLostError{fmt.Sprintf("%s is %s now", t.ID, tk.Task.Queue)}
		}
		if now, _ := e.Store.ReadRef("refs/heads/" + t.Branch); now.String() != tip {
			return nil, &RunLostError{fmt.Sprintf("%s's branch moved while its check ran", t.ID)}
		}
		if fail == nil {
			f, err := tk.File.Apply(taskfile.Set(taskfile.KeyCheckedCommit, taskfile.String(tip)))
			if err != nil {
				return nil, err
			}
			return &change{file: f, body: fmt.Sprintf("review.check passed on %s.", short(tip)),
				data: &CheckData{LandData{Kind: "check", Tip: tip, Check: "passed", Base: e.baseOf(&tk.Task)}}}, nil
		}
		return e.failureChange(tk, fail, "check", tip)
	})
	if why, moved := movedMeanwhile(rep.Task, err); moved {
		rep.Outcome, rep.Why = "skipped", why
		return rep, nil
	}
	if err != nil {
		return nil, err
	}
	rep.Passed, rep.Outcome = fail == nil, "passed"
	if fail != nil {
		rep.Outcome, rep.Why = "rejected", failureWords(fail)
		if res.To == taskfile.Escalated {
			rep.Outcome = "escalated"
		}
	}
	return rep, nil
}
