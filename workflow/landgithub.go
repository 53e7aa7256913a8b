package workflow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/ghreview"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/land"
	"github.com/orch-tool/orch/taskfile"
)

// Landing with land.mode: github (docs/design.md §8.5): an approved task
// lands when its pull request merges on GitHub. orch land (and orch run's
// house) runs gh pr merge with land.strategy, only while the pull request's
// head is the approved commit; orch pr poll records what GitHub did
// meanwhile. What GitHub says decides, never gh's wording:
//   - MERGED: done, with the pull request's merge commit as landed_commit;
//   - CLOSED unmerged: escalated (a person closed it: a person decides);
//   - OPEN and CONFLICTING: rejected with a landing round, as a local
//     conflict (no lockout, counted toward land.max_failures);
//   - OPEN otherwise: it waits (checks running, a review required, a merge
//     queue), and the task stays approved.
// A task without a pr_number has nothing GitHub can merge: it escalates, so
// that it leaves the landing queue (orch run --until-idle ends) and a
// person chooses (open a pull request, or land it another way).

// prVerdict is what orch does about an approved task's pull request.
type prVerdict int

const (
	prWaits       prVerdict = iota // open and not mergeable now: nothing to record
	prMerged                       // done
	prClosed                       // escalated
	prConflicting                  // rejected, a landing round
	prMissing                      // no pr_number: escalated
)

// prFinding is what GitHub said of one approved task's pull request.
type prFinding struct {
	c       land.Candidate
	pr      int
	verdict prVerdict
	commit  string // prMerged: the merge commit
	why     string // in words, for the round, the escalation or the wait
	ghErr   error  // gh itself failed (the finding waits)
}

// prSays reads a pull request's state: the verdict, or prWaits when it is
// open and GitHub does not say it conflicts.
func prSays(c land.Candidate, v *ghreview.PR) prFinding {
	f := prFinding{c: c, pr: v.Number}
	switch {
	case v.Merged() != "":
		f.verdict, f.commit = prMerged, v.Merged()
	case v.State == "MERGED":
		f.why = fmt.Sprintf("GitHub says PR #%d is merged but names no merge commit", v.Number)
	case v.State == "CLOSED":
		f.verdict, f.why = prClosed, fmt.Sprintf("its pull request #%d was closed without being merged", v.Number)
	case v.Mergeable == "CONFLICTING":
		f.verdict, f.why = prConflicting, fmt.Sprintf("GitHub says pull request #%d conflicts with %s", v.Number, orDash(v.BaseRefName))
	default:
		f.why = fmt.Sprintf("PR #%d is open and not merged yet", v.Number)
	}
	return f
}

// mergePR lands one approved task on GitHub: it reads the pull request,
// marks a draft ready, merges it with strategy while its head is the
// approved commit, and reads it again to learn the merge commit. It never
// touches the state branch.
func mergePR(gh *ghreview.GH, repo string, c land.Candidate, pr int, strategy string) prFinding {
	if pr <= 0 {
		return prFinding{c: c, verdict: prMissing, why: "it was approved with land.mode: github but has no pull request (pr_number): there is nothing gh pr merge can merge"}
	}
	waits := func(err error, format string, a ...any) prFinding {
		return prFinding{c: c, pr: pr, ghErr: err, why: fmt.Sprintf(format, a...)}
	}
	v, err := gh.ViewPR(repo, pr)
	if err != nil {
		return waits(err, "gh could not read PR #%d: %s", pr, ghreview.CleanText(err.Error()))
	}
	if f := prSays(c, v); f.verdict != prWaits || v.State != "OPEN" {
		return f
	}
	if v.HeadRefOid != c.Tip {
		// Commits pushed after the approval were not reviewed, and an
		// approved commit not pushed yet is not on GitHub.
		return waits(nil, "PR #%d's head is %s, not the approved commit %s: push the approved commit to %s (and nothing after it), or requeue the task for review",
			pr, short(v.HeadRefOid), short(c.Tip), c.Branch)
	}
	if v.IsDraft {
		if err := gh.ReadyPR(repo, pr); err != nil {
			return waits(err, "gh could not mark the draft PR #%d ready: %s", pr, ghreview.CleanText(err.Error()))
		}
	}
	if merr := gh.MergePR(repo, pr, strategy, c.Tip); merr != nil {
		// GitHub's state says why better than gh's words (a conflict, a
		// merge by someone else meanwhile).
		if v, err := gh.ViewPR(repo, pr); err == nil {
			if f := prSays(c, v); f.verdict != prWaits {
				return f
			}
		}
		msg := ghSays(merr)
		if l := strings.ToLower(msg); strings.Contains(l, "conflict") || strings.Contains(l, "cannot be cleanly created") {
			return prFinding{c: c, pr: pr, verdict: prConflicting, why: fmt.Sprintf("gh pr merge %d failed on a conflict with its base", pr)}
		}
		return waits(nil, "gh pr merge %d did not merge it: %s", pr, msg)
	}
	v, err = gh.ViewPR(repo, pr)
	if err == nil && v.Merged() != "" {
		return prFinding{c: c, pr: pr, verdict: prMerged, commit: v.Merged()}
	}
	return waits(nil, "PR #%d is queued to merge on GitHub (auto-merge or a merge queue): orch pr poll records it once it merged", pr)
}

// ghSays is what gh said when it failed: its stderr's first line (the
// command is named by the caller), else the error.
func ghSays(err error) string {
	var ge *ghreview.Error
	if errors.As(err, &ge) && !ge.Missing {
		if s, _, _ := strings.Cut(strings.TrimSpace(ge.Stderr), "\n"); s != "" {
			return ghreview.CleanText(s)
		}
	}
	return ghreview.CleanText(err.Error())
}

// ghTask is an approved task of the github landing queue.
type ghTask struct {
	c  land.Candidate
	pr int
}

// landGitHub is LandApproved for land.mode: github: every approved task
// of the base (opts.Max bounds them), each pull request on its own. gh
// runs with no lock of orch's held; e is closed here.
func landGitHub(opts Options, e *Engine, rep *LandReport, lo LandOptions) (*LandReport, error) {
	var todo []ghTask
	var waiting []string
	for _, s := range e.LandQueue() {
		t := &s.Task
		if e.baseOf(t) != rep.Base {
			continue
		}
		rep.Queued++
		if lo.Max > 0 && len(todo) >= lo.Max {
			break
		}
		if lo.Hold[t.ID] && !lo.DryRun {
			waiting = append(waiting, fmt.Sprintf("%s (PR #%d)", t.ID, t.PRNumber))
			continue
		}
		todo = append(todo, ghTask{land.Candidate{Task: t.ID, Title: t.Title, Branch: t.Branch, Tip: t.ApprovedCommit}, t.PRNumber})
	}
	dir := e.Store.Repo.WorkTree
	if dir == "" {
		dir = e.Store.Repo.GitDir
	}
	repoCfg, strategy := e.Config.GitHub.Repo, e.Config.Land.Strategy
	e.Close()
	rep.All = lo.Max <= 0 || len(todo) < lo.Max
	// Each task's line says why it waits; this one is for the house and
	// the end of orch land's output.
	waits := func() {
		if len(waiting) > 0 {
			rep.Waiting = fmt.Sprintf("%d pull request(s) cannot merge on GitHub yet: %s; orch land tries again, orch pr poll records a merge done on GitHub", len(waiting), strings.Join(waiting, ", "))
		}
	}
	if len(todo) == 0 {
		waits()
		return rep, nil
	}
	if lo.DryRun {
		for _, t := range todo {
			lt := LandedTask{Task: t.c.Task, Title: t.c.Title, PR: t.pr, Outcome: "would_land", Why: fmt.Sprintf("gh pr merge %d --%s", t.pr, strategy)}
			if t.pr <= 0 {
				lt.Outcome, lt.Why = "would_escalate", "no pull request (pr_number): nothing for gh pr merge"
			}
			rep.Results = append(rep.Results, lt)
		}
		return rep, nil
	}
	gh := ghreview.New(dir)
	var repo string
	for _, t := range todo {
		if t.pr > 0 {
			r, err := gh.Repo(repoCfg)
			if err != nil {
				return nil, GitHubFailure(err)
			}
			repo = r
			break
		}
	}
	var found []prFinding
	var ghErr error
	answered := false
	for _, t := range todo {
		f := mergePR(gh, repo, t.c, t.pr, strategy)
		if f.ghErr != nil && ghErr == nil {
			ghErr = f.ghErr
		}
		answered = answered || f.ghErr == nil
		found = append(found, f)
	}
	if !answered && ghErr != nil {
		return nil, GitHubFailure(ghErr)
	}
	e, err := Open(opts)
	if err != nil {
		return rep, err
	}
	defer e.Close()
	for _, f := range found {
		lt := LandedTask{Task: f.c.Task, Title: f.c.Title, PR: f.pr}
		res, err := e.recordPR(f)
		switch {
		case err != nil:
			why, moved := movedMeanwhile(f.c.Task, err)
			if !moved {
				return rep, err
			}
			lt.Outcome, lt.Why = "skipped", why
		case res == nil:
			lt.Outcome, lt.Why = "waiting", f.why
			waiting = append(waiting, fmt.Sprintf("%s (PR #%d)", f.c.Task, f.pr))
		default:
			lt.Outcome = map[taskfile.Queue]string{taskfile.Done: "landed", taskfile.Rejected: "rejected", taskfile.Escalated: "escalated"}[res.To]
			lt.Commit, lt.Why, lt.Escalation = f.commit, f.why, res.Escalation
		}
		rep.Results = append(rep.Results, lt)
		if lt.Outcome == "landed" {
			e.cleanLanded(f.c)
		}
	}
	waits()
	return rep, nil
}

// recordPR records a finding: done, rejected or escalated; nil for one
// that waits.
func (e *Engine) recordPR(f prFinding) (*Result, error) {
	switch f.verdict {
	case prMerged:
		return e.prLanded(f)
	case prConflicting:
		return e.landFailed(f.c, &land.Failure{Kind: "pr_conflict", PR: f.pr, Output: f.why})
	case prClosed:
		return e.prEscalate(f, "pr_closed")
	case prMissing:
		return e.prEscalate(f, "no_pr")
	}
	return nil, nil
}

// stillApproved refuses to record over a task that moved since its pull
// request was read.
func stillApproved(t *Task, c land.Candidate) error {
	if t.Task.Queue != taskfile.Approved || t.Task.ApprovedCommit != c.Tip {
		return &RunLostError{fmt.Sprintf("%s is %s now", c.Task, t.Task.Queue)}
	}
	return nil
}

// prLanded records a merged pull request: approved -> done, with its merge
// commit as landed_commit.
func (e *Engine) prLanded(f prFinding) (*Result, error) {
	return e.transition(f.c.Task, ActionLand, func(t *Task) (*change, error) {
		if err := stillApproved(t, f.c); err != nil {
			return nil, err
		}
		nf, err := t.File.Apply(taskfile.Set(taskfile.KeyLandedCommit, taskfile.String(f.commit)))
		if err != nil {
			return nil, err
		}
		base := e.baseOf(&t.Task)
		return &change{file: nf, to: taskfile.Done, body: fmt.Sprintf("Merged on GitHub: pull request #%d, %s on %s.", f.pr, short(f.commit), base),
			data: &LandData{Base: base, Commit: f.commit, Tip: f.c.Tip, Strategy: e.Config.Land.Strategy, PR: f.pr}}, nil
	})
}

// prEscalate escalates an approved task GitHub cannot land: its pull
// request closed unmerged, or none.
func (e *Engine) prEscalate(f prFinding, reason string) (*Result, error) {
	return e.transition(f.c.Task, ActionLand, func(t *Task) (*change, error) {
		if err := stillApproved(t, f.c); err != nil {
			return nil, err
		}
		why := f.why + "; the approved work is on " + orDash(t.Task.Branch) + " at " + short(f.c.Tip)
		msg := e.escalationMessage(&t.Task, t.Path, reason, why)
		return &change{file: t.File, to: taskfile.Escalated, body: "Escalated: " + why, extra: []gitstore.Change{msg},
			data: &LandData{Base: e.baseOf(&t.Task), Tip: f.c.Tip, Failure: reason, Why: f.why, PR: f.pr}, escalation: &Escalation{reason, why}}, nil
	})
}

// prLandTargets lists the approved tasks whose pull request orch pr poll
// reads with land.mode: github.
func (e *Engine) prLandTargets() []ghTask {
	if e.Config.Land.Mode != config.LandGitHub {
		return nil
	}
	var out []ghTask
	for _, s := range e.LandQueue() {
		if s.Task.PRNumber > 0 {
			out = append(out, ghTask{land.Candidate{Task: s.Task.ID, Title: s.Task.Title, Branch: s.Task.Branch, Tip: s.Task.ApprovedCommit}, s.Task.PRNumber})
		}
	}
	return out
}

// The outcomes of pr poll for an approved task's pull request.
const (
	PRMerged       ghreview.Outcome = "merged"
	PRClosed       ghreview.Outcome = "closed unmerged"
	PRConflicting  ghreview.Outcome = "conflicting"
	PRNotMergedYet ghreview.Outcome = "not merged yet"
)

// pollLanded records what GitHub says of each approved task's pull
// request (views, read by PollPRs without the lock): merged, closed
// unmerged, conflicting; an open one is left as it is.
func (e *Engine) pollLanded(found []prFinding, out *PRPoll) error {
	for _, f := range found {
		imp := &PRImport{Task: f.c.Task, PR: f.pr, Outcome: map[prVerdict]ghreview.Outcome{prWaits: PRNotMergedYet, prMerged: PRMerged, prClosed: PRClosed, prConflicting: PRConflicting}[f.verdict]}
		res, err := e.recordPR(f)
		if err != nil {
			var lost *RunLostError
			if errors.As(err, &lost) {
				continue // moved on while gh read GitHub
			}
			if !prRefusable(err) {
				out.Stopped = err
				return nil
			}
			out.Refused = append(out.Refused, PRRefusal{f.c.Task, f.pr, ghreview.CleanText(err.Error())})
			continue
		}
		if res != nil && !res.Commit.IsZero() {
			imp.To, imp.Commit = string(res.To), res.Commit.String()
			if res.To == taskfile.Done {
				imp.Landed = f.commit
				e.cleanLanded(f.c)
			}
		}
		out.Imports = append(out.Imports, imp)
	}
	return nil
}
