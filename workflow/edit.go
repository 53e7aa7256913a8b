package workflow

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// EditTarget is a file `orch edit` works on.
type EditTarget struct {
	Path string // path on the state branch
	ID   string // task id, if a task
	Data []byte
	Base plumbing.Hash
	// FromCopy says the edit is a file made earlier (orch edit --from), not
	// an edit of Data: its base is the version it was made from.
	FromCopy bool
}

// EditStart resolves what to edit: a task reference, "config", or a file of
// the state branch such as prompts/reviewer.md.
func (e *Engine) EditStart(ref string) (*EditTarget, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	snap := e.Store.Snapshot()
	p := ""
	id := ""
	switch {
	case ref == "config" || ref == gitstore.ConfigFile:
		p = gitstore.ConfigFile
	case strings.Contains(ref, "/"):
		clean := path.Clean(ref)
		if clean != ref || !gitstore.Mirrored(clean) || strings.HasPrefix(clean, gitstore.TasksDir+"/") {
			return nil, &UsageError{Msg: fmt.Sprintf("%q is not a file orch edits", printable(ref)), Next: Next{Advice: AdviseEditWhat}}
		}
		p = clean
	default:
		s, err := e.resolve(ref)
		if ae, ok := err.(*ArchivedError); ok {
			s, err = ae.Task, nil // an archived task is edited where it is
		}
		if err != nil {
			return nil, err
		}
		p, id = s.Path, s.Task.ID
	}
	if isPolicyFile(p) {
		if err := e.requireHuman("edit", "", "changing "+p+" (policy files are a human's)"); err != nil {
			return nil, err
		}
	}
	t := &EditTarget{Path: p, ID: id}
	h, ok, err := snap.GetAny(p)
	if err != nil {
		return nil, err
	}
	if ok {
		data, err := snap.ReadBlob(h)
		if err != nil {
			return nil, err
		}
		t.Data, t.Base = data, h
	} else if p == gitstore.ConfigFile {
		t.Data = []byte(config.DefaultYAML)
	}
	return t, nil
}

// EditFinish commits an edited copy of an EditTarget. When the branch moved
// while the editor was open, the edit is merged with those changes: a
// person's edit never undoes orch's.
func (e *Engine) EditFinish(t *EditTarget, edited []byte) (*Result, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	snap := e.Store.Snapshot()
	if _, ok, _ := snap.GetAny(t.Path); !ok && t.ID != "" && !gitstore.IsArchivePath(t.Path) {
		// Archived while the editor was open: the edit goes to the
		// archived file (never lost; orch reopen brings it back).
		if a, err := e.ArchivedByID(t.ID); err == nil && a != nil {
			t.Path = a.Path
		}
	}
	view := filepath.Join(gitstore.ViewDirName, t.Path)
	cur, curOK, err := snap.GetAny(t.Path)
	if err != nil {
		return nil, err
	}
	var curData []byte
	if curOK {
		var err error
		if curData, err = snap.ReadBlob(cur); err != nil {
			return nil, err
		}
	}
	result := edited
	if strings.HasPrefix(t.Path, gitstore.TasksDir+"/") || gitstore.IsArchivePath(t.Path) {
		ef, err := taskfile.Parse(view, edited)
		if err != nil {
			return nil, &InvalidFileError{Problems: []*taskfile.ParseError{asParseError(err, view)}}
		}
		if errs := ef.Validate(); len(errs) > 0 {
			return nil, &InvalidFileError{Problems: errs}
		}
		if perr := taskfile.CheckIDKept(view, ef, t.ID); perr != nil {
			return nil, &InvalidFileError{Problems: []*taskfile.ParseError{perr}}
		}
		if !curOK {
			return nil, &ConflictError{Msg: fmt.Sprintf("%s was removed from the state branch while you edited it", t.ID), Next: Next{Advice: AdviseLogTask, Task: t.ID}}
		}
		rf, err := taskfile.Parse(view, curData)
		if err != nil {
			return nil, &ConflictError{Msg: fmt.Sprintf("%s changed on the state branch while you edited it", t.ID), Next: Next{Advice: AdviseEditAgain, Task: t.ID}}
		}
		// One rule for every hand edit (docs/design.md §1.3): a three-way merge from
		// the version the person started from. For an editor that is the
		// version it was opened on; for a copy, the version it was made
		// from, found in the task's history.
		bf, err := taskfile.Parse(view, t.Data)
		if err != nil {
			return nil, err
		}
		if t.FromCopy {
			if older := e.editBase(t.Path, ef); older != nil {
				bf = older
			}
		}
		if !bytes.Equal(bf.Src, curData) {
			merged, conflicts, err := taskfile.Merge3(bf, ef, rf)
			if err != nil {
				return nil, err
			}
			if len(conflicts) > 0 {
				return nil, &ConflictError{Msg: conflictText(t.ID, conflicts), Next: Next{Advice: AdviseEditAgainFromNew, Task: t.ID}}
			}
			result = merged.Src
		}
		mf, err := taskfile.Parse(view, result)
		if err != nil {
			return nil, err
		}
		if err := e.checkDependencies(mf); err != nil {
			return nil, &InvalidFileError{Problems: []*taskfile.ParseError{asParseError(err, view)}}
		}
		if changed := e.handChangedFields(mf, rf); len(changed) > 0 {
			return nil, &RuleError{Rule: "orch_owned", Msg: fmt.Sprintf("%s: an edit may not change %s: orch-owned fields change only through verbs", t.ID, strings.Join(changed, ", ")),
				Next: Next{Advice: AdviseOwnedFields, Steps: e.stepsFor(changed, mf, t.ID)}}
		}
	} else {
		if err := CheckFile(view, edited); err != nil {
			return nil, &InvalidFileError{Problems: []*taskfile.ParseError{asParseError(err, view)}}
		}
		if curOK && cur != t.Base {
			text, ok := taskfile.MergeText(string(t.Data), string(edited), string(curData))
			if !ok {
				return nil, &ConflictError{Msg: fmt.Sprintf("%s changed on the state branch while you edited it, in the same lines", t.Path), Next: Next{Advice: AdviseEditAgain}}
			}
			result = []byte(text)
		}
	}
	if curOK && bytes.Equal(result, curData) {
		return &Result{Commit: snap.Tip}, nil
	}
	if e.Store.BrokenFile(t.Path) != nil || e.Store.Conflicted(t.Path) != nil {
		return nil, &ConflictError{Msg: fmt.Sprintf("%s has an uncommitted hand edit in the view that orch cannot commit", view), Next: Next{Advice: AdviseFixViewFirst}}
	}
	id, action := t.ID, ActionEdit
	msg := commitMessage(id, action, "", "", e.Actor, "Edited with orch edit.", nil)
	if id == "" {
		tr := gitstore.Trailers{{Key: gitstore.TrailerAction, Value: string(action)}, {Key: gitstore.TrailerActor, Value: e.Actor}}
		msg = tr.Message("orch: edit "+t.Path, "Edited with orch edit.")
	}
	h, err := e.Store.Update(func(*gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		return &gitstore.CommitRequest{Changes: []gitstore.Change{{Path: t.Path, Data: result}}, Message: msg, Author: e.Signature()}, nil
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Commit: h}
	switch {
	case id != "" && gitstore.IsArchivePath(t.Path):
		if res.Task, err = e.ArchivedByID(id); err != nil {
			return nil, err
		}
	case id != "":
		res.Task = e.Store.Summary(t.Path)
	}
	return res, nil
}

func conflictText(id string, cs []taskfile.Conflict) string {
	var parts []string
	for _, c := range cs {
		if c.Key == "" {
			parts = append(parts, "the body (the same lines changed on both sides)")
		} else {
			parts = append(parts, fmt.Sprintf("%s (yours: %s, branch: %s)", c.Key, c.Ours, c.Theirs))
		}
	}
	return fmt.Sprintf("%s changed on the state branch while you edited it, and both changed %s", id, strings.Join(parts, "; "))
}
