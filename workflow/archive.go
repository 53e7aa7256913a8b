package workflow

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// The archive (gitstore.ArchiveDir) holds finished tasks that left the hot
// path: a done, failed or superseded task finished more than archive_after
// ago moves there, a batch at a time, after a command's own transition, or
// at once with orch archive ID. No ordinary command reads it: show, log,
// edit and reopen fall back to it by ID, list --all and the board's
// finished columns read it whole, dependencies consult a cache of the
// archived done tasks' IDs (archivedDone), and new IDs one shard's tree.

// ArchiveBatch is the most tasks one command moves to the archive: the
// move is one commit of that many files, well under a transition's cost,
// so a repository with a long backlog of finished work drains it command by
// command instead of in one long pause.
const ArchiveBatch = 100

// finishedQueues are the queues whose tasks may be archived.
var finishedQueues = map[taskfile.Queue]bool{taskfile.Done: true, taskfile.Failed: true, taskfile.Superseded: true}

// FinishedAt is when a finished task finished: its finished_at, or, for a
// task finished before orch recorded that, the latest time its file holds.
func FinishedAt(t *taskfile.Task) time.Time {
	if !t.FinishedAt.IsZero() {
		return t.FinishedAt
	}
	latest := t.Created
	for _, x := range []time.Time{t.ClaimedAt, t.HeartbeatAt, t.SubmittedAt, t.ReviewClaimedAt} {
		if x.After(latest) {
			latest = x
		}
	}
	return latest
}

// archiveMove is the changes that move task s's file into the archive.
func archiveMove(snap *gitstore.Snapshot, s *gitstore.Summary) ([]gitstore.Change, error) {
	data, err := snap.ReadAt(s.Path, s.Blob)
	if err != nil {
		return nil, err
	}
	return []gitstore.Change{{Path: s.Path, Delete: true}, {Path: gitstore.ArchivePath(s.Task.ID, s.Task.Queue, s.Path), Data: data}}, nil
}

// archiveCheckedStamp is the private stamp (gitrepo.Repo.MarkStamp) of the
// last ArchiveDue that found fewer due tasks than a batch.
const archiveCheckedStamp = "archive-checked"

// archiveCheckEvery is how long after finding nothing more due ArchiveDue
// looks again: a tenth of archive_after, at most an hour. Looking means
// decoding the summary of every finished task among the tasks, which a
// transition should not pay each time for an answer that changes over
// days.
func archiveCheckEvery(after time.Duration) time.Duration { return min(time.Hour, after/10) }

// ArchiveDue is the housekeeping after a transition: unless it looked less
// than archiveCheckEvery ago and found nothing more due, it moves a batch
// of up to limit tasks finished more than archive_after ago into the
// archive (archiveBatch) and returns their IDs.
func (e *Engine) ArchiveDue(limit int) ([]string, error) {
	after := time.Duration(e.Config.ArchiveAfter)
	if after <= 0 || limit <= 0 || e.Config.Unknown() {
		return nil, nil
	}
	now := e.Now()
	if last := e.Store.Repo.StampTime(archiveCheckedStamp); !last.After(now) && now.Sub(last) < archiveCheckEvery(after) {
		return nil, nil
	}
	moved, err := e.archiveBatch(limit)
	if err == nil && len(moved) < limit {
		e.Store.Repo.MarkStamp(archiveCheckedStamp) // drained: look again later
	}
	return moved, err
}

// archiveBatch moves up to limit tasks finished more than archive_after ago
// into the archive, oldest first, as one commit, and returns their IDs. A
// task whose view file holds a hand edit orch has not committed (broken or
// in conflict) stays until that is settled.
func (e *Engine) archiveBatch(limit int) ([]string, error) {
	after := time.Duration(e.Config.ArchiveAfter)
	if after <= 0 || limit <= 0 || e.Config.Unknown() {
		return nil, nil
	}
	cutoff := e.Now().Add(-after)
	var moved []string
	_, err := e.Store.Update(func(snap *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		moved = moved[:0]
		type due struct {
			s  *gitstore.Summary
			at time.Time
		}
		var all []due
		e.Store.EachSummaryIn(finishedQueues, func(s *gitstore.Summary) {
			if at := FinishedAt(&s.Task); at.Before(cutoff) && s.Task.ID != "" && e.editable(s) == nil {
				all = append(all, due{s, at})
			}
		})
		if len(all) == 0 {
			return nil, nil
		}
		sort.Slice(all, func(i, j int) bool {
			if !all[i].at.Equal(all[j].at) {
				return all[i].at.Before(all[j].at)
			}
			return all[i].s.Task.ID < all[j].s.Task.ID
		})
		if len(all) > limit {
			all = all[:limit]
		}
		var changes []gitstore.Change
		now := taskfile.FormatTime(e.Now())
		for _, d := range all {
			mv, err := archiveMove(snap, d.s)
			if err != nil {
				return nil, err
			}
			changes = append(changes, mv...)
			ev := Event{Time: now, Task: d.s.Task.ID, Action: ActionArchive, Actor: e.Actor}
			evc, err := e.eventChange(&mergedSnapshot{snap, changes}, ev, &ArchiveData{Path: d.s.Path, Queue: d.s.Task.Queue, After: e.Config.ArchiveAfter.String()})
			if err != nil {
				return nil, err
			}
			changes = mergeChange(changes, evc)
			moved = append(moved, d.s.Task.ID)
		}
		tr := gitstore.Trailers{{Key: gitstore.TrailerAction, Value: string(ActionArchive)}, {Key: gitstore.TrailerActor, Value: e.Actor},
			{Key: gitstore.TrailerArchived, Value: strings.Join(moved, " ")}}
		body := fmt.Sprintf("Moved %d task(s) finished more than %s ago (archive_after) to %s/: orch show, orch log and orch list --all still read them; orch reopen brings one back.",
			len(moved), e.Config.ArchiveAfter, gitstore.ArchiveDir)
		return &gitstore.CommitRequest{Changes: changes, Message: tr.Message(fmt.Sprintf("orch: archive %d finished task(s)", len(moved)), body), Author: e.Signature()}, nil
	})
	if err != nil {
		return nil, err
	}
	return moved, nil
}

// ArchivedError is a reference to a task that is in the archive, given to a
// verb that works only on the tasks (exit 3).
type ArchivedError struct {
	Task *gitstore.Summary
	Next Next
}

func (e *ArchivedError) Error() string {
	t := &e.Task.Task
	when := ""
	if at := FinishedAt(t); !at.IsZero() {
		when = ", finished " + taskfile.FormatTime(at)
	}
	return fmt.Sprintf("%s is archived (%s%s): it is no longer among the tasks", t.ID, t.Queue, when)
}

// archiveIndex is the archived task files the engine has parsed, by path
// and blob (a snapshot keeps the archive's trees it read).
type archiveIndex map[gitstore.FileEntry]*gitstore.Summary

// archivedNamed lists the archived files of ref's shard, in every queue,
// whose names' IDs pass match: every archived file's name starts with its
// task's ID (gitstore.ArchivePath), so an ID or a prefix of one is matched
// on names, and only the files that match are read.
func (e *Engine) archivedNamed(ref string, match func(id string) bool) ([]*gitstore.Summary, error) {
	files, err := e.archivedFileNamed(ref, match)
	if err != nil {
		return nil, err
	}
	if e.archive == nil {
		e.archive = archiveIndex{}
	}
	snap := e.Store.Snapshot()
	out := make([]*gitstore.Summary, 0, len(files))
	for _, fe := range files {
		s := e.archive[fe]
		if s == nil {
			if s, err = e.archivedSummary(snap, fe); err != nil {
				return nil, err
			}
			e.archive[fe] = s
		}
		out = append(out, s)
	}
	return out, nil
}

// archivedFileNamed is archivedNamed without reading the files.
func (e *Engine) archivedFileNamed(ref string, match func(id string) bool) ([]gitstore.FileEntry, error) {
	if e.Store == nil {
		return nil, nil // the rules' unit tests: tasks in memory, no archive
	}
	snap := e.Store.Snapshot()
	if snap.ArchiveTree().IsZero() {
		return nil, nil
	}
	files, err := snap.ArchivedIn(gitstore.ArchiveShard(ref), "")
	if err != nil {
		return nil, err
	}
	var out []gitstore.FileEntry
	for _, fe := range files {
		if match(gitstore.ArchivedNameID(fe.Path)) {
			out = append(out, fe)
		}
	}
	return out, nil
}

// archivedSummary reads an archived task file into a summary.
func (e *Engine) archivedSummary(snap *gitstore.Snapshot, fe gitstore.FileEntry) (*gitstore.Summary, error) {
	data, err := snap.ReadBlob(fe.Blob)
	if err != nil {
		return nil, err
	}
	s := &gitstore.Summary{Path: fe.Path, Blob: fe.Blob}
	f, err := taskfile.Parse(filepath.Join(gitstore.ViewDirName, fe.Path), data)
	if err != nil {
		pe := asParseError(err, fe.Path)
		s.Problem, s.ProblemLine = pe.Msg, pe.Line
		return s, nil
	}
	s.Task, s.Fields = f.Task, f.CustomFieldsJSON()
	return s, nil
}

// ArchivedByID is the archived task id, or nil.
func (e *Engine) ArchivedByID(id string) (*gitstore.Summary, error) {
	if !taskfile.ValidID(id) {
		return nil, nil
	}
	lower := strings.ToLower(id)
	ss, err := e.archivedNamed(id, func(named string) bool { return named == lower })
	if err != nil {
		return nil, err
	}
	for _, s := range ss {
		if s.Task.ID == id {
			return s, nil
		}
	}
	return nil, nil
}

// findArchived resolves a reference among the archived tasks as Find does
// among the tasks: an exact ID, a unique prefix of an ID, or of its random
// part; a prefix names a shard only from two characters of the random part
// on (nil when it does not, or nothing matches).
func (e *Engine) findArchived(ref string) (*gitstore.Summary, error) {
	lower := strings.ToLower(ref)
	rnd := lower
	if _, r, ok := strings.Cut(lower, "-"); ok {
		rnd = r
	}
	if len(rnd) < 2 || strings.ContainsAny(lower, "/\\. \x00") {
		return nil, nil
	}
	found, err := e.archivedNamed(lower, func(id string) bool {
		_, r, _ := strings.Cut(id, "-")
		return strings.HasPrefix(id, lower) || (!strings.Contains(lower, "-") && strings.HasPrefix(r, lower))
	})
	if err != nil {
		return nil, err
	}
	for _, s := range found {
		if strings.ToLower(s.Task.ID) == lower {
			return s, nil
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, s := range found {
		ids[i] = s.Task.ID
	}
	sort.Strings(ids)
	return nil, &AmbiguousError{Prefix: clipArg(ref), Matches: ids}
}

// archivedDone reports whether task id is in the archive as done (see
// gitstore.Store.ArchivedDone).
func (e *Engine) archivedDone(id string) bool {
	return e.Store != nil && taskfile.ValidID(id) && e.Store.ArchivedDone(id)
}

// LookupArchived is Lookup for the verbs that read or bring back an archived
// task (show, log, edit, reopen): a task among the tasks, else an archived
// one; archived reports which.
func (e *Engine) LookupArchived(ref string) (s *gitstore.Summary, archived bool, err error) {
	s, err = e.Lookup(ref)
	if ae, ok := err.(*ArchivedError); ok {
		return ae.Task, true, nil
	}
	return s, false, err
}

// ArchivedTasks lists every archived task, in the archive's order.
func (e *Engine) ArchivedTasks() ([]*gitstore.Summary, error) {
	snap := e.Store.Snapshot()
	all, err := e.Store.ArchivedSummaries(func(fe gitstore.FileEntry) (*gitstore.Summary, error) {
		return e.archivedSummary(snap, fe)
	})
	if err != nil {
		return nil, err
	}
	out := make([]*gitstore.Summary, 0, len(all))
	for _, s := range all {
		if s.Task.ID != "" && e.Store.SummaryByID(s.Task.ID) != nil {
			continue // back among the tasks (a merge kept both): that copy is the task
		}
		out = append(out, s)
	}
	return out, nil
}

// ArchiveAllDue is orch archive --due: every task archive_after has made
// due, a batch per commit (a human's verb, like orch archive ID).
func (e *Engine) ArchiveAllDue() ([]string, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	if err := e.requireHuman("archive", "", "archiving tasks"); err != nil {
		return nil, err
	}
	due := []string{}
	for {
		moved, err := e.archiveBatch(ArchiveBatch)
		if err != nil || len(moved) == 0 {
			return due, err
		}
		due = append(due, moved...)
	}
}

// archived reports whether task id is in the archive, in any queue (from
// the archive's trees, no file read).
func (e *Engine) archived(id string) bool {
	if e.Store == nil || !taskfile.ValidID(id) {
		return false
	}
	ok, err := e.Store.Snapshot().ArchivedHas(id, "")
	return err == nil && ok
}
