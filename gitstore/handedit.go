package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// handEdit commits a change a person made to a view file. base is the blob
// the view held before (zero when unknown); prev are older blobs the view
// held, used to recognise a stale editor buffer.
func (st *Store) handEdit(p string, pol Policy, rep *Reconciled, base plumbing.Hash, wdata []byte, w plumbing.Hash, prev []plumbing.Hash, ws fileStat) error {
	r, _ := st.snap.Get(p)
	rdata, err := st.objs.Read(plumbing.BlobObject, r)
	if err != nil {
		return err
	}
	result := wdata
	id := ""
	if isTaskPath(p) {
		wf, err := taskfile.Parse(st.rel(p), wdata)
		if err != nil {
			rep.Broken[p] = err
			return nil
		}
		if errs := wf.Validate(); len(errs) > 0 {
			rep.Broken[p] = taskfile.Problems(errs)
			return nil
		}
		if pol.CheckTask != nil {
			if err := pol.CheckTask(wf); err != nil {
				rep.Broken[p] = err
				return nil
			}
		}
		rf, err := taskfile.Parse(st.rel(p), rdata)
		if err != nil {
			rf = nil
		}
		if rf != nil {
			if perr := taskfile.CheckIDKept(st.rel(p), wf, rf.Task.ID); perr != nil {
				rep.Broken[p] = perr
				return nil
			}
		}
		id = wf.Task.ID
		if rf != nil {
			merged, stale, conflicts, err := st.staleBuffer(p, wf, rf, base, prev)
			if err != nil {
				return err
			}
			if len(conflicts) > 0 {
				st.markConflict(p, rep, st.cache.Index.Get(p), w, r, conflicts)
				return nil
			}
			if stale {
				result = merged.Src
				st.note("%s was saved from an old copy: kept your edits and orch's newer %s", st.rel(p), strings.Join(changedOrchFields(wf, rf), ", "))
			}
		}
	} else if pol.CheckFile != nil {
		if err := pol.CheckFile(st.rel(p), wdata); err != nil {
			rep.Broken[p] = err
			return nil
		}
	}
	if isTaskPath(p) && pol.OrchFields != nil {
		out, note, err := pol.OrchFields(st.rel(p), result, rdata)
		if err != nil {
			return err
		}
		if note != "" {
			result = out
			st.note("%s", note)
		}
	}
	if bytes.Equal(result, rdata) {
		if !bytes.Equal(result, wdata) {
			// Only orch-owned fields changed, and were kept out: the view
			// gets the branch's version back.
			return st.placeEdited(p, result, wdata, w)
		}
		st.record(p, r, ws)
		return nil
	}
	if held(pol, p, rep) {
		return nil
	}
	if err := st.commitHandEdit(p, id, ActionEdit, result, pol); err != nil {
		return err
	}
	if !bytes.Equal(result, wdata) {
		if err := st.placeEdited(p, result, wdata, w); err != nil {
			return err
		}
	} else {
		blob, _ := st.snap.Get(p)
		st.record(p, blob, ws)
	}
	rep.Committed = append(rep.Committed, p)
	return nil
}

// staleBuffer recognises a file saved from an editor buffer older than the
// branch: its orch-owned fields equal those of an older version the view
// held, and differ from the branch's. The person's other edits are kept and
// orch's fields win, by merging with that older version as the base. When
// base is unknown, the branch's orch-owned fields are simply kept.
func (st *Store) staleBuffer(p string, wf, rf *taskfile.File, base plumbing.Hash, prev []plumbing.Hash) (*taskfile.File, bool, []taskfile.Conflict, error) {
	if sameOrchFields(wf, rf) {
		return nil, false, nil, nil
	}
	if base.IsZero() {
		out := wf
		for _, k := range taskfile.OrchOwned {
			if !taskfile.SameField(wf, rf, k) {
				var err error
				out, err = taskfile.TakeField(out, rf, k)
				if err != nil {
					return nil, false, nil, err
				}
			}
		}
		return out, true, nil, nil
	}
	for _, h := range prev {
		data, err := st.objs.Read(plumbing.BlobObject, h)
		if err != nil {
			continue
		}
		pf, err := taskfile.Parse(wf.Path, data)
		if err != nil || !sameOrchFields(wf, pf) {
			continue
		}
		merged, conflicts, err := taskfile.Merge3(pf, wf, rf)
		if err != nil {
			return nil, false, nil, err
		}
		return merged, true, conflicts, nil
	}
	return nil, false, nil, nil
}

func sameOrchFields(a, b *taskfile.File) bool {
	for _, k := range taskfile.OrchOwned {
		if !taskfile.SameField(a, b, k) {
			return false
		}
	}
	return true
}

func changedOrchFields(a, b *taskfile.File) []string {
	var out []string
	for _, k := range taskfile.OrchOwned {
		if !taskfile.SameField(a, b, k) {
			out = append(out, k)
		}
	}
	return out
}

// handNew commits a file a person created in the view.
func (st *Store) handNew(p string, pol Policy, rep *Reconciled, wdata []byte, ws fileStat) error {
	if wdata == nil {
		var err error
		if wdata, err = st.ReadViewFile(p); err != nil {
			rep.Broken[p] = err
			return nil
		}
	}
	result := wdata
	id := ""
	action := ActionEdit
	unarchived := false // an archived task's file, saved again in the view
	if isTaskPath(p) {
		if pol.PrepareNewTask == nil {
			return nil
		}
		taken := func(id string) bool {
			s := st.SummaryByID(id)
			return s != nil && s.Path != p
		}
		out, newID, err := pol.PrepareNewTask(st.rel(p), wdata, taken)
		if err != nil {
			rep.Broken[p] = err
			return nil
		}
		result, id, action = out, newID, ActionNew
		// An editor buffer of a task archived since it was opened, saved:
		// the task's edit, not a new task (no "new" event, which would
		// count it as created and send it to incoming while its file says
		// it is finished). It is among the tasks again, the newer copy;
		// the next archive batch moves it back.
		if archived, err := st.snap.ArchivedHas(id, ""); err == nil && archived {
			action, unarchived = ActionEdit, true
		}
	} else if pol.CheckFile != nil {
		if err := pol.CheckFile(st.rel(p), wdata); err != nil {
			rep.Broken[p] = err
			return nil
		}
	}
	if held(pol, p, rep) {
		return nil
	}
	if !bytes.Equal(result, wdata) {
		// Keep the person's version as an object: if this process dies
		// between the commit and the view write, the next reconcile (no
		// sync record, W = this, R = orch's completed copy) then pulls R
		// instead of reporting W as a broken hand edit for ever.
		if _, err := st.objs.Write(plumbing.BlobObject, wdata); err != nil {
			return err
		}
	}
	if err := st.commitHandEdit(p, id, action, result, pol); err != nil {
		return err
	}
	if bytes.Equal(result, wdata) {
		blob, _ := st.snap.Get(p)
		st.record(p, blob, ws)
	} else if err := st.placeEdited(p, result, wdata, gitrepo.HashBlob(wdata)); err != nil {
		return err
	}
	rep.Committed = append(rep.Committed, p)
	switch {
	case action == ActionNew:
		st.note("committed the task you created by hand: %s (%s)", st.rel(p), id)
	case unarchived:
		st.note("committed your edit of %s (%s), which had been archived: it is among the tasks again, as it was, until the next archive batch moves it back", st.rel(p), id)
	default:
		st.note("committed your new file %s", st.rel(p))
	}
	return nil
}

// commitHandEdit commits one hand-edited file.
func (st *Store) commitHandEdit(p, id, action string, data []byte, pol Policy) error {
	subject := "orch: edit " + p
	if id != "" {
		subject = fmt.Sprintf("orch(%s): %s", id, action)
	}
	body := "Hand edit of " + p + "."
	if action == ActionNew {
		body = "Task created by hand in the view (" + p + ")."
	}
	var tr Trailers
	if id != "" {
		tr.Add(TrailerTask, id)
	}
	tr.Add(TrailerAction, action)
	if action == ActionNew {
		tr.Add(TrailerTo, string(taskfile.Incoming))
	}
	tr.Add(TrailerActor, pol.Actor.Name)
	msg := tr.Message(subject, body)
	changes := []Change{{Path: p, Data: data}}
	if action == ActionNew && id != "" && pol.Event != nil {
		ev, err := pol.Event(st.snap, id, p)
		if err != nil {
			return err
		}
		changes = append(changes, ev)
	}
	_, err := st.Commit(&CommitRequest{Changes: changes, Message: msg, Author: pol.Actor})
	if errors.Is(err, gitrepo.ErrRefMoved) {
		// Another writer moved the branch between our reconcile and our
		// commit: the caller reconciles again from the new tip.
		return err
	}
	return err
}
