package workflow

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
)

// change is what a verb does to one task: the new file, the queue it goes
// to, and what to record in the commit and the event log.
type change struct {
	file *taskfile.File
	to   taskfile.Queue
	body string    // commit message body
	data EventData // the event's data, of the verb's type
	// ground is what put the task in a scoped reviewer's scope (the
	// reviewer check's answer): apply records it in the event and the
	// Orch-Ground trailer.
	ground   string
	extra    []gitstore.Change
	created  []createdTask     // tasks this change creates: each gets its own "new" event
	trailers gitstore.Trailers // after the ones every transition has (commitMessage)
	// beforeRef is a side effect outside the state branch, run just before
	// the ref moves (see gitstore.CommitRequest.BeforeRef).
	beforeRef func() error
	// escalation is why the change escalates the task, when it does.
	escalation *Escalation
}

// transition applies fn to one task as one commit. fn runs inside the
// commit loop, on the task as it is at the tip being built on, so a retry
// after a lost race re-checks every rule against the new state.
func (e *Engine) transition(id string, verb Action, fn func(t *Task) (*change, error)) (*Result, error) {
	return e.apply(id, verb, true, fn)
}

// transitionAny is transition for verbs that change a task without moving
// it between queues (unlock): any queue will do.
func (e *Engine) transitionAny(id string, verb Action, fn func(t *Task) (*change, error)) (*Result, error) {
	return e.apply(id, verb, false, fn)
}

func (e *Engine) apply(id string, verb Action, checkQueue bool, fn func(t *Task) (*change, error)) (*Result, error) {
	if e.batching != nil {
		// Engine.Batch gathers the verb's change, to make it with the
		// others in one commit.
		*e.batching = append(*e.batching, pendingChange{id: id, verb: verb, checkQueue: checkQueue, fn: fn})
		return &Result{}, nil
	}
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	var res Result
	h, err := e.Store.Update(func(snap *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		built, err := e.build(snap, nil, pendingChange{id: id, verb: verb, checkQueue: checkQueue, fn: fn})
		if err != nil || built == nil {
			return nil, err
		}
		res.From, res.To, res.Escalation = built.from, built.to, built.c.escalation
		msgFrom, msgTo := built.from, built.to
		if built.from == built.to {
			msgFrom, msgTo = "", ""
		}
		return &gitstore.CommitRequest{
			Changes:   built.changes,
			Message:   commitMessage(id, verb, msgFrom, msgTo, e.Actor, built.c.body, built.c.trailers),
			Author:    e.Signature(),
			BeforeRef: built.c.beforeRef,
		}, nil
	})
	if err != nil {
		return nil, err
	}
	res.Commit = h
	res.Task = e.Store.SummaryByID(id)
	return &res, nil
}

// pendingChange is a verb's change to one task, not yet made.
type pendingChange struct {
	id         string
	verb       Action
	checkQueue bool
	fn         func(t *Task) (*change, error)
}

// builtChange is a pendingChange made into the changes of a commit.
type builtChange struct {
	c        *change
	from, to taskfile.Queue
	changes  []gitstore.Change // prior's, and this task's after them
}

// build runs the rules of p on the task as snap, with the changes prior
// of the same commit made, holds it, and returns the changes of the
// commit with this task's added (nil: the verb has nothing to do).
func (e *Engine) build(snap *gitstore.Snapshot, prior []gitstore.Change, p pendingChange) (*builtChange, error) {
	id, verb := p.id, p.verb
	s := e.Store.SummaryByID(id)
	archived := false
	if s == nil {
		// Reopen is the one verb that takes a task from the archive:
		// its file goes back among the tasks in the same commit.
		a, err := e.ArchivedByID(id)
		switch {
		case err != nil:
			return nil, err
		case a != nil && verb == ActionReopen:
			s, archived = a, true
		case a != nil:
			return nil, &ArchivedError{Task: a, Next: Next{Advice: AdviseArchived, Task: id}}
		default:
			return nil, &NotFoundError{What: "task", Ref: id, Next: Next{Advice: AdviseListTasks}}
		}
	}
	c, from, to, err := e.step(s, e.Load, verb, p.checkQueue, p.fn)
	if err != nil || c == nil {
		return nil, err
	}
	changes := append([]gitstore.Change{}, prior...)
	if c.file != nil {
		path := s.Path
		if archived {
			path = gitstore.UnarchivedPath(s.Path)
			changes = mergeChange(changes, gitstore.Change{Path: s.Path, Delete: true})
		}
		changes = mergeChange(changes, gitstore.Change{Path: path, Data: c.file.Src})
	}
	for _, x := range c.extra {
		changes = mergeChange(changes, x)
	}
	ev := Event{Time: taskfile.FormatTime(e.Now()), Task: id, Action: verb, Actor: e.Actor}
	if to != from {
		ev.From, ev.To = from, to
	}
	evc, err := e.eventChange(&mergedSnapshot{Snapshot: snap, changes: changes}, ev, c.data)
	if err != nil {
		return nil, err
	}
	changes = mergeChange(changes, evc)
	var createdIDs []string
	for _, ct := range c.created {
		nev := Event{Time: ev.Time, Task: ct.ID, Action: ActionNew, To: taskfile.Incoming, Actor: e.Actor}
		rd := &mergedSnapshot{Snapshot: snap, changes: changes}
		evn, err := e.eventChange(rd, nev, &NewData{Title: ct.Title, From: id, By: verb})
		if err != nil {
			return nil, err
		}
		changes = mergeChange(changes, evn)
		createdIDs = append(createdIDs, ct.ID)
	}
	if len(createdIDs) > 0 {
		c.trailers.Add(gitstore.TrailerCreated, strings.Join(createdIDs, " "))
	}
	return &builtChange{c: c, from: from, to: to, changes: changes}, nil
}

// step is the rule half of a transition, on task s as the tip being built
// on holds it (load reads its file): s must be changeable and, with
// checkQueue, in a queue verb takes tasks from; fn decides the change, which
// may move s only where the transition table lets verb; the file returned
// is in queue to. step reads tasks only through the TaskIndex and commits
// nothing (apply commits what it returns), so the rule suite runs the very
// same code over tasks in memory.
func (e *Engine) step(s *gitstore.Summary, load func(*gitstore.Summary) (*Task, error), verb Action, checkQueue bool, fn func(t *Task) (*change, error)) (c *change, from, to taskfile.Queue, err error) {
	id := s.Task.ID
	if err := e.editable(s); err != nil {
		return nil, "", "", err
	}
	if err := e.claimRefLost(&s.Task, verb); err != nil {
		return nil, "", "", err
	}
	if checkQueue {
		if err := CheckTransition(verb, id, s.Task.Queue); err != nil {
			return nil, "", "", err
		}
	}
	if err := e.checkFence(&s.Task); err != nil {
		return nil, "", "", err
	}
	t, err := load(s)
	if err != nil {
		return nil, "", "", err
	}
	if c, err = fn(t); err != nil || c == nil {
		return nil, "", "", err
	}
	if c.ground != "" {
		// A scoped reviewer's review says what it was in scope by.
		sc, ok := c.data.(scoped)
		if !ok {
			return nil, "", "", fmt.Errorf("internal error: %s of %s has a reviewer's ground, and its data (%T) no place for it", verb, id, c.data)
		}
		sc.setGround(c.ground)
		c.trailers.Add(gitstore.TrailerGround, c.ground)
	}
	from, to = s.Task.Queue, c.to
	if to == "" {
		to = from
	}
	if checkQueue {
		// The table's To column binds the code as its From column binds
		// the task: a verb cannot move a task anywhere else.
		if tr := TransitionFor(verb); tr != nil && len(tr.To) > 0 && !slices.Contains(tr.To, to) {
			return nil, "", "", fmt.Errorf("internal error: %s would move %s from %s to %s, which the transition table does not allow (it allows %s)", verb, id, from, to, tr.ToText())
		}
	}
	if c.file != nil && to != from {
		edits := []taskfile.Edit{taskfile.Set(taskfile.KeyQueue, taskfile.String(string(to)))}
		if from == taskfile.Provisional && c.file.Task.ReviewClaimedBy != "" {
			// A submission that leaves review leaves its review claim.
			edits = append(edits, taskfile.Unset(taskfile.KeyReviewBy), taskfile.Unset(taskfile.KeyReviewAt))
		}
		switch {
		case from.Open() && !to.Open():
			edits = append(edits, taskfile.Set(taskfile.KeyFinishedAt, taskfile.Time(e.Now())))
		case !from.Open() && to.Open():
			edits = append(edits, taskfile.Unset(taskfile.KeyFinishedAt))
		}
		if c.file.Task.Crashes > 0 && (from == taskfile.Claimed && s.Task.ClaimedBy == e.Actor || from == taskfile.Provisional && to != taskfile.Escalated) {
			// The agent ended its own run, or a verdict ended the review:
			// the crashes were not in a row.
			edits = append(edits, taskfile.Unset(taskfile.KeyCrashes))
		}
		if c.file, err = c.file.Apply(edits...); err != nil {
			return nil, "", "", err
		}
	}
	return c, from, to, nil
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
		return &ConflictError{Msg: fmt.Sprintf("%s has a hand edit that does not parse (%v); orch will not change the task until it is fixed", view, err), Next: Next{Advice: AdviseFixOrDelete}}
	}
	if cs := e.tasks().Conflicted(s.Path); cs != nil {
		return &ConflictError{Msg: conflictText(s.Task.ID, cs), Next: Next{Advice: AdviseEditOrDelete, Path: view}}
	}
	if s.Problem != "" {
		return &InvalidFileError{Problems: []*taskfile.ParseError{{Path: view, Line: s.ProblemLine, Msg: s.Problem}}}
	}
	return nil
}

// Result is what a state-changing operation reports.
type Result struct {
	Task   *gitstore.Summary
	Commit plumbing.Hash
	From   taskfile.Queue
	To     taskfile.Queue
	// Escalation says why the transition escalated the task (nil when it
	// did not): the rule's code and the reason in words, as orch inbox has
	// them.
	Escalation *Escalation
}

// Escalation is why a task escalated: a rule code (max_rejections,
// lockout_deadlock, no_progress, crashes, land_failures, manual, ...) and
// the reason in words.
type Escalation struct {
	Rule string
	Why  string
}

// commitMessage builds the message of a transition, with the trailers that
// `orch log` and claim refs read: the task, the action, the queues, the
// actor, then the verb's own (their values made one line).
func commitMessage(id string, action Action, from, to taskfile.Queue, actor, body string, extra gitstore.Trailers) string {
	subject := fmt.Sprintf("orch(%s): %s", id, action)
	if from != "" && to != "" && from != to {
		subject = fmt.Sprintf("orch(%s): %s -> %s", id, from, to)
	}
	tr := gitstore.Trailers{{Key: gitstore.TrailerTask, Value: id}, {Key: gitstore.TrailerAction, Value: string(action)}}
	if from != "" {
		tr.Add(gitstore.TrailerFrom, string(from))
	}
	if to != "" {
		tr.Add(gitstore.TrailerTo, string(to))
	}
	tr.Add(gitstore.TrailerActor, actor)
	for _, x := range extra {
		tr.Add(x.Key, text.OneLine(x.Value))
	}
	return tr.Message(subject, body)
}
