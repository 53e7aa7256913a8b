package workflow

import (
	"fmt"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
)

// NewTask describes a task to create.
type NewTask struct {
	Title     string
	Priority  string
	Role      string
	Assign    string
	DependsOn []string
	Labels    []string
	Body      string
}

// New creates a task in incoming.
func (e *Engine) New(nt NewTask) (*Result, error) {
	if err := checkTexts(namedText{"the body (--body or -F)", &nt.Body}); err != nil {
		return nil, err
	}
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	f, err := e.renderTask(nt, nil)
	if err != nil {
		return nil, err
	}
	id, title, prio := f.Task.ID, f.Task.Title, f.Task.Priority
	h, err := e.Store.Update(func(snap *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		ev, err := e.eventChange(snap, Event{Time: taskfile.FormatTime(e.Now()), Task: id, Action: ActionNew, To: taskfile.Incoming, Actor: e.Actor},
			&NewData{Title: title, Priority: prio})
		if err != nil {
			return nil, err
		}
		return &gitstore.CommitRequest{
			Changes: []gitstore.Change{{Path: f.Path, Data: f.Src}, ev},
			Message: commitMessage(id, ActionNew, "", taskfile.Incoming, e.Actor, "New task: "+title, nil),
			Author:  e.Signature(),
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return &Result{Task: e.Store.Summary(f.Path), Commit: h, To: taskfile.Incoming}, nil
}

// renderTask validates a new task and renders its file (Path is the path on
// the state branch). taken lists IDs minted earlier in the same commit.
func (e *Engine) renderTask(nt NewTask, taken map[string]bool) (*taskfile.File, error) {
	title := text.OneLine(nt.Title)
	if title == "" {
		return nil, &UsageError{Msg: "a task needs a title", Next: Next{Advice: AdviseNewTitle}}
	}
	if len(title) > 200 {
		return nil, &UsageError{Msg: "the title is longer than 200 characters", Next: Next{Advice: AdviseTitleInBody}}
	}
	// Control characters (terminal escapes) would reach every listing.
	if strings.IndexFunc(title, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) >= 0 {
		return nil, &UsageError{Msg: fmt.Sprintf("the title %q contains control characters", clipArg(title)), Next: Next{Advice: AdvisePlainText}}
	}
	prio := taskfile.DefaultPriority
	if nt.Priority != "" {
		p, ok := taskfile.NormalizePriority(nt.Priority)
		if !ok {
			return nil, &UsageError{Msg: fmt.Sprintf("%q is not a priority", printable(nt.Priority)), Next: Next{Advice: AdvisePriorities}}
		}
		prio = p
	}
	role := nt.Role
	if role == "" {
		role = e.Config.DefaultRole
	}
	for _, n := range append([]string{role, nt.Assign}, nt.Labels...) {
		if n != "" && !taskfile.ValidName(n) {
			return nil, &UsageError{Msg: fmt.Sprintf("%q is not a valid name", printable(n)), Next: Next{Advice: AdviseNameForm}}
		}
	}
	var deps []string
	for _, d := range nt.DependsOn {
		if taken[d] {
			deps = append(deps, d)
			continue
		}
		s, err := e.Find(d)
		if ae, ok := err.(*ArchivedError); ok {
			s, err = ae.Task, nil // finished long ago: a dependency like any other
		}
		if err != nil {
			return nil, err
		}
		deps = append(deps, s.Task.ID)
	}
	if strings.ContainsRune(nt.Body, 0) {
		return nil, &UsageError{Msg: "the body contains a NUL byte"}
	}
	id := e.newID(func(id string) bool { return taken[id] })
	p := gitstore.TasksDir + "/" + id + "-" + taskfile.Slug(title) + ".md"
	fields := []taskfile.Edit{
		taskfile.Set(taskfile.KeyID, taskfile.String(id)),
		taskfile.Set(taskfile.KeyTitle, taskfile.String(title)),
		taskfile.Set(taskfile.KeyQueue, taskfile.String(string(taskfile.Incoming))),
		taskfile.Set(taskfile.KeyPriority, taskfile.String(prio)),
		taskfile.Set(taskfile.KeyCreated, taskfile.Time(e.Now())),
	}
	if role != "" {
		fields = append(fields, taskfile.Set(taskfile.KeyRole, taskfile.String(role)))
	}
	if nt.Assign != "" {
		fields = append(fields, taskfile.Set(taskfile.KeyAssignedTo, taskfile.String(nt.Assign)))
	}
	if len(deps) > 0 {
		fields = append(fields, taskfile.Set(taskfile.KeyDependsOn, taskfile.ListOf(deps)))
	}
	if len(nt.Labels) > 0 {
		fields = append(fields, taskfile.Set(taskfile.KeyLabels, taskfile.ListOf(nt.Labels)))
	}
	f, err := taskfile.Render(p, fields, nt.Body)
	if err != nil {
		return nil, err
	}
	if errs := f.Validate(); len(errs) > 0 {
		return nil, &InvalidFileError{Problems: errs}
	}
	return f, nil
}
