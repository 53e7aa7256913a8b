package gitstore

import (
	"bytes"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
)

// merge is the table's "both changed" row: a three-way merge of the view's
// file and the branch's from the version the person started from
// (frontmatter field by field, body as text); on conflict the view keeps
// the person's file and the task is marked conflicted.
func (st *Store) merge(p string, pol Policy, rep *Reconciled, b plumbing.Hash, wdata []byte, w, r plumbing.Hash, ws fileStat) error {
	bdata, err := st.objs.Read(plumbing.BlobObject, b)
	if err != nil {
		// Without the base we cannot merge; treat as a hand edit on the branch.
		return st.handEdit(p, pol, rep, plumbing.ZeroHash, wdata, w, nil, ws)
	}
	if older := st.startedFrom(p, bdata, wdata); older != nil {
		bdata = older
	}
	return st.mergeFrom(p, pol, rep, bdata, wdata, w, r, ws)
}

// startedFrom finds the version a person's task file was edited from when
// it is older than base, the version the view held last: an editor buffer
// loaded before orch changed the file, saved after (even while orch put a
// raced save back, see placeView). It is the newest earlier view version
// whose orch-owned fields are those of the person's file; merging from it
// keeps orch's changes since. nil when base is that version, or none is.
func (st *Store) startedFrom(p string, bdata, wdata []byte) []byte {
	ie := st.cache.Index.Get(p)
	if !isTaskPath(p) || ie == nil || len(ie.Prev) == 0 {
		return nil
	}
	wf, err1 := taskfile.Parse(st.rel(p), wdata)
	bf, err2 := taskfile.Parse(st.rel(p), bdata)
	if err1 != nil || err2 != nil || sameOrchFields(wf, bf) {
		return nil
	}
	for _, h := range ie.Prev {
		data, err := st.objs.Read(plumbing.BlobObject, h)
		if err != nil {
			continue
		}
		if pf, err := taskfile.Parse(st.rel(p), data); err == nil && sameOrchFields(wf, pf) {
			return data
		}
	}
	return nil
}

// mergeFrom is merge with the base's content given.
func (st *Store) mergeFrom(p string, pol Policy, rep *Reconciled, bdata, wdata []byte, w, r plumbing.Hash, ws fileStat) error {
	rdata, err := st.objs.Read(plumbing.BlobObject, r)
	if err != nil {
		return err
	}
	var result []byte
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
		bf, err1 := taskfile.Parse(st.rel(p), bdata)
		rf, err2 := taskfile.Parse(st.rel(p), rdata)
		if err1 != nil || err2 != nil {
			st.markConflict(p, rep, st.cache.Index.Get(p), w, r, []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "changed on the state branch"}})
			return nil
		}
		merged, conflicts, err := taskfile.Merge3(bf, wf, rf)
		if err != nil {
			return err
		}
		if len(conflicts) > 0 {
			st.markConflict(p, rep, st.cache.Index.Get(p), w, r, conflicts)
			return nil
		}
		if pol.CheckTask != nil {
			if err := pol.CheckTask(merged); err != nil {
				rep.Broken[p] = err
				return nil
			}
		}
		result, id = merged.Src, merged.Task.ID
		if pol.OrchFields != nil {
			out, note, err := pol.OrchFields(st.rel(p), result, rdata)
			if err != nil {
				return err
			}
			if note != "" {
				result = out
				st.note("%s", note)
			}
		}
	} else {
		text, ok := taskfile.MergeText(string(bdata), string(wdata), string(rdata))
		if !ok {
			st.markConflict(p, rep, st.cache.Index.Get(p), w, r, []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "changed on the state branch"}})
			return nil
		}
		result = []byte(text)
		if pol.CheckFile != nil {
			if err := pol.CheckFile(st.rel(p), result); err != nil {
				rep.Broken[p] = err
				return nil
			}
		}
	}
	if !bytes.Equal(result, rdata) && held(pol, p, rep) {
		return nil
	}
	if !bytes.Equal(result, rdata) {
		if err := st.commitHandEdit(p, id, ActionEdit, result, pol); err != nil {
			return err
		}
		rep.Committed = append(rep.Committed, p)
	}
	if bytes.Equal(result, wdata) {
		blob, _ := st.snap.Get(p)
		st.record(p, blob, ws)
	} else if err := st.placeEdited(p, result, wdata, w); err != nil {
		return err
	}
	st.note("%s: merged your edit with changes on the state branch", st.rel(p))
	return nil
}

func (st *Store) markConflict(p string, rep *Reconciled, ie *statecache.IndexEntry, w, r plumbing.Hash, conflicts []taskfile.Conflict) {
	rep.Conflicts[p] = conflicts
	if ie == nil {
		ie = &statecache.IndexEntry{}
		st.cache.PutIndex(p, ie)
	}
	if ie.ConflictW != w || ie.ConflictR != r {
		ie.MarkChanged()
		ie.ConflictW, ie.ConflictR = w, r
		if ie.Blob.IsZero() {
			ie.Blob = r
		}
		st.dirty = true
	}
	// Conflict details are recomputed each time from the three versions;
	// the record only says "do not touch until the person decides".
}

// reconcileConflicted handles a file in conflict. Until the person changes
// the view file it stays as it is; once they do, their version is their
// resolution and is committed (merged with anything newer on the branch).
func (st *Store) reconcileConflicted(p string, pol Policy, rep *Reconciled, ie *statecache.IndexEntry, w plumbing.Hash, wdata []byte, r plumbing.Hash, rok bool, ws fileStat) error {
	if w == ie.ConflictW && r == ie.ConflictR {
		// Unchanged: report it again, with details.
		if wdata == nil {
			var err error
			if wdata, err = st.ReadViewFile(p); err != nil {
				rep.Broken[p] = err
				return nil
			}
		}
		rep.Conflicts[p] = st.DescribeConflict(p, ie.Blob, wdata, r)
		return nil
	}
	if w == ie.ConflictW {
		// Only the branch moved: the person has not resolved anything yet.
		// Merge again from the version the view file was based on, so the
		// conflict stays (or goes, if the branch's new change settles it).
		if !rok {
			st.markConflict(p, rep, ie, w, r, []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "removed from the state branch"}})
			return nil
		}
		if wdata == nil {
			var err error
			if wdata, err = st.ReadViewFile(p); err != nil {
				rep.Broken[p] = err
				return nil
			}
		}
		ie.MarkChanged()
		ie.ConflictW, ie.ConflictR = plumbing.ZeroHash, plumbing.ZeroHash
		return st.merge(p, pol, rep, ie.Blob, wdata, w, r, ws)
	}
	if !rok {
		ie.MarkChanged()
		ie.ConflictW, ie.ConflictR = plumbing.ZeroHash, plumbing.ZeroHash
		return st.handNew(p, pol, rep, wdata, ws)
	}
	if wdata == nil {
		var err error
		if wdata, err = st.ReadViewFile(p); err != nil {
			rep.Broken[p] = err
			return nil
		}
	}
	seenR := ie.ConflictR
	ie.MarkChanged()
	ie.ConflictW, ie.ConflictR = plumbing.ZeroHash, plumbing.ZeroHash
	if base := st.resolutionBase(p, ie.Blob, seenR, wdata); base != nil {
		ie.Blob = seenR
		return st.mergeFrom(p, pol, rep, base, wdata, w, r, ws)
	}
	if r == seenR {
		// The person resolved it against the branch version they were shown.
		ie.Blob = r
		return st.handEdit(p, pol, rep, r, wdata, w, nil, ws)
	}
	ie.Blob = seenR
	return st.merge(p, pol, rep, seenR, wdata, w, r, ws)
}

// resolutionBase is what a person's resolution of a conflicted task is
// merged from, when orch changed orch-owned fields on the branch: the branch
// version the conflict was found against, with the orch-owned fields of the
// version the person's file was based on (b) wherever the resolution
// (wdata) still has them. So the person's file wins for everything they
// wrote, and the orch-owned fields they left as they were take the branch's
// values: like a stale editor buffer, a resolution must not undo orch's
// changes. nil when there is nothing of orch's to keep.
func (st *Store) resolutionBase(p string, b, seenR plumbing.Hash, wdata []byte) []byte {
	if !isTaskPath(p) || b.IsZero() || seenR.IsZero() || b == seenR {
		return nil
	}
	bdata, err1 := st.objs.Read(plumbing.BlobObject, b)
	rdata, err2 := st.objs.Read(plumbing.BlobObject, seenR)
	if err1 != nil || err2 != nil {
		return nil
	}
	bf, err1 := taskfile.Parse(st.rel(p), bdata)
	rf, err2 := taskfile.Parse(st.rel(p), rdata)
	wf, err3 := taskfile.Parse(st.rel(p), wdata)
	if err1 != nil || err2 != nil || err3 != nil || sameOrchFields(bf, rf) {
		return nil
	}
	out := rf
	for _, k := range taskfile.OrchOwned {
		if !taskfile.SameField(out, bf, k) && taskfile.SameField(wf, bf, k) {
			var err error
			if out, err = taskfile.TakeField(out, bf, k); err != nil {
				return nil
			}
		}
	}
	if out == rf {
		return nil
	}
	return out.Src
}

// DescribeConflict says what conflicts in view file p (wdata) edited from
// blob b while the branch changed it to r: the fields, else the whole file.
func (st *Store) DescribeConflict(p string, b plumbing.Hash, wdata []byte, r plumbing.Hash) []taskfile.Conflict {
	generic := []taskfile.Conflict{{Key: "", Ours: "edited in the view", Theirs: "changed on the state branch"}}
	if !isTaskPath(p) {
		return generic
	}
	bdata, err1 := st.objs.Read(plumbing.BlobObject, b)
	rdata, err2 := st.objs.Read(plumbing.BlobObject, r)
	if err1 != nil || err2 != nil {
		return generic
	}
	bf, e1 := taskfile.Parse(p, bdata)
	wf, e2 := taskfile.Parse(p, wdata)
	rf, e3 := taskfile.Parse(p, rdata)
	if e1 != nil || e2 != nil || e3 != nil {
		return generic
	}
	_, c, err := taskfile.Merge3(bf, wf, rf)
	if err != nil || len(c) == 0 {
		return generic
	}
	return c
}
