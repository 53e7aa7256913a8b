package workflow

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// Response statuses.
var responseStatuses = map[string]string{"fixed": "FIXED", "deferred": "DEFERRED", "rejected": "REJECTED"}

// MinJustificationWords is how long the justification of a REJECTED answer
// must be: a sentence that says why the issue does not apply. The review
// protocol asks for technical reasoning and names "too hard", "takes too
// long" and "I disagree" as weak reasons; a word count cannot judge
// reasoning (the reviewer does, on re-review), but it refuses the answers
// that give none: "no", "won't fix", "I disagree with this". Six words
// admit a terse real reason ("the handler computes it once already").
const MinJustificationWords = 6

// justificationWords counts the words of a text: runs of non-space
// characters with at least one letter or digit, so that punctuation and
// dashes do not count.
func justificationWords(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			n++
		}
	}
	return n
}

// Respond records an implementer's answer to a review issue, under the issue
// in the task file. The issue is named by orch's ID or by the reviewer's own
// ID for it. commit, when given, is any commit-ish of the repository the
// command runs in (HEAD is this worktree's); it must be on the task's branch,
// and its full hash is recorded.
func (e *Engine) Respond(id, issue, status, text, commit string) (*Result, error) {
	if err := checkTexts(namedText{"the response (-m)", &text}); err != nil {
		return nil, err
	}
	st, ok := responseStatuses[strings.ToLower(status)]
	if !ok {
		return nil, &UsageError{Msg: fmt.Sprintf("%q is not a response: use fixed, deferred or rejected", printable(status))}
	}
	text = strings.TrimSpace(text)
	if text == "" {
		if st == "REJECTED" {
			return nil, &UsageError{Msg: "rejecting an issue needs a justification (-m TEXT)", Next: Next{Advice: AdviseJustifyText, Task: id, Issue: issue}}
		}
		return nil, &UsageError{Msg: "a response needs a text (-m TEXT)", Next: Next{Advice: AdviseRespondText, Task: id, Issue: issue, Status: strings.ToLower(st)}}
	}
	var fix plumbing.Hash
	if commit = strings.TrimSpace(commit); commit != "" {
		h, err := e.Store.Repo.ResolveRevision(commit)
		if err != nil {
			return nil, commitError(commit, err)
		}
		fix = h
	}
	return e.transitionAny(id, ActionRespond, func(t *Task) (*change, error) {
		if t.Task.Queue != "claimed" {
			return nil, &RuleError{Rule: "respond_not_claimed", Msg: fmt.Sprintf("%s is %s: responses are written while the task is claimed", id, t.Task.Queue), Next: Next{Advice: AdviseClaimFirst, Task: id}}
		}
		if err := e.requireClaimant(&t.Task, "respond"); err != nil {
			return nil, err
		}
		is, err := findIssueRef(t.File.AllIssues(), issue)
		if err != nil {
			return nil, err
		}
		if is == nil {
			return nil, &NotFoundError{What: "review issue", Ref: printable(issue), Next: Next{Advice: AdviseListIssues, Task: id}}
		}
		ref := is.ID
		if st == "DEFERRED" && is.Blocking {
			return nil, &RuleError{Rule: "defer_blocking", Msg: fmt.Sprintf("%s is blocking (%s): it can be fixed, or rejected with a justification, but not deferred", ref, is.Severity),
				Next: Next{Advice: AdviseRespondFixed, Task: id, Issue: ref}}
		}
		if n := justificationWords(text); st == "REJECTED" && n < MinJustificationWords {
			next := Next{Advice: AdviseJustifyOrDefer, Task: id, Issue: ref}
			if is.Blocking {
				next.Advice = AdviseJustifyBlocking
			}
			return nil, &RuleError{Rule: "weak_justification", Msg: fmt.Sprintf("rejecting %s needs a justification that says why the issue does not apply, in at least %d words; %q has %d", ref, MinJustificationWords, clipArg(text), n),
				Next: next}
		}
		full := ""
		if !fix.IsZero() {
			if err := e.checkOnBranch(t, commit, fix); err != nil {
				return nil, err
			}
			full = fix.String()
		}
		f, err := t.File.SetIssueResponse(ref, taskfile.Response{Status: st, Commit: full, Text: text})
		if err != nil {
			return nil, err
		}
		// An answer is work on the task: it renews the claimant's lease.
		if t.Task.Queue == taskfile.Claimed {
			if f, err = f.Apply(taskfile.Set(taskfile.KeyHeartbeatAt, taskfile.Time(e.Now()))); err != nil {
				return nil, err
			}
		}
		// The round answered (a re-opened issue keeps its ID in later
		// rounds) lets orch stats count each answer once.
		round := t.Task.RejectionCount
		data := &RespondData{Issue: ref, Status: st, Commit: full, Text: text, Blocking: is.Blocking, Severity: is.Severity, Round: &round}
		if ref != issue {
			data.NamedAs = issue
		}
		return &change{file: f, body: fmt.Sprintf("%s: %s by %s.", ref, st, e.Actor),
			data: data, trailers: gitstore.Trailers{{Key: gitstore.TrailerIssue, Value: ref}}}, nil
	})
}

// commitError says why --commit names no commit.
func commitError(commit string, err error) error {
	var nf *gitrepo.ErrRevisionNotFound
	var amb *gitrepo.ErrAmbiguousRevision
	switch {
	case errors.As(err, &nf):
		return &UsageError{Msg: fmt.Sprintf("--commit %q names no commit in this repository", printable(commit)), Next: Next{Advice: AdviseFixCommit}}
	case errors.As(err, &amb):
		return &UsageError{Msg: fmt.Sprintf("--commit %q is ambiguous: %d commits start with it", printable(commit), len(amb.Commits)), Next: Next{Advice: AdviseMoreDigits}}
	}
	return err
}

// checkOnBranch refuses a fix commit that is not on the task's branch (its
// tip or an ancestor of it): the answer would point the reviewer at work
// the submission does not contain. The branch is the local one, else a
// remote's copy.
func (e *Engine) checkOnBranch(t *Task, commit string, h plumbing.Hash) error {
	id, br := t.Task.ID, t.Task.Branch
	next := Next{Advice: AdviseCommitOnBranch, Task: id}
	if br == "" {
		return &RuleError{Rule: "commit_not_on_branch", Msg: fmt.Sprintf("%s has no branch, so --commit %s cannot be checked against it", id, printable(commit)), Next: Next{Advice: AdviseNoCommitFlag}}
	}
	repo := e.Store.Repo
	tip, err := repo.ReadRef("refs/heads/" + br)
	if err != nil || tip.IsZero() {
		tip, _ = repo.RemoteCopy(br)
	}
	if tip.IsZero() {
		return &RuleError{Rule: "commit_not_on_branch", Msg: fmt.Sprintf("%s's branch %s is not in this repository, so --commit %s cannot be checked against it", id, br, printable(commit)), Next: next}
	}
	// git answers quickly from its commit-graph; a walk of the objects
	// confirms a "no" (and answers when git cannot run).
	if h == tip || repo.IsAncestor(h, tip) || e.Store.Contains(tip, h) {
		return nil
	}
	return &RuleError{Rule: "commit_not_on_branch", Msg: fmt.Sprintf("--commit %s (%s) is not on %s's branch %s", printable(commit), h.String()[:12], id, br), Next: next}
}
