package workflow

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
)

// Several machines share one queue through a remote: `orch sync` fetches
// the remote's state branch, merges it task by task, and pushes with a
// lease, retrying when another clone pushed first.
//
// The merge: a file changed on one side takes that side. A task file changed
// on both is merged frontmatter key by key and body as text; event logs are
// a union of lines; other files are merged as text. A true conflict (both
// sides changed the same key, or the same lines, differently) is resolved by
// one rule: the remote's version wins, because it was pushed first; the
// local version is reported in the output, kept in the merge commit's
// message and in a sync.conflict event, and a local body that lost is kept
// under "## Sync conflict" in the task, so nothing is silently dropped. A file
// deleted on one side and changed on the other is kept, changed.

// SyncConflict is one conflict the merge resolved by the rule.
type SyncConflict struct {
	Path   string `json:"path"`
	Task   string `json:"task,omitempty"`
	Key    string `json:"key"` // "" for the body or a whole file
	Local  string `json:"local"`
	Remote string `json:"remote"`
	Kept   string `json:"kept"` // "remote", or "both" for bodies
}

// SyncResult reports a sync.
type SyncResult struct {
	Remote    string         `json:"remote"`
	Action    string         `json:"action"` // up_to_date | pushed | fast_forward | merged | created_remote
	Local     string         `json:"local"`
	RemoteTip string         `json:"remote_tip"`
	Merge     string         `json:"merge_commit,omitempty"`
	Changed   []string       `json:"changed"`
	Conflicts []SyncConflict `json:"conflicts"`
	Attempts  int            `json:"attempts"`
}

// configAtTip is the config at the state branch's tip, read without the
// lock (the defaults when it cannot be read): what a command that talks to
// the remote needs before it takes the lock.
func configAtTip(st *gitstore.Store) *config.Config {
	if data, err := st.ReadAtTip(gitstore.ConfigFile); err == nil {
		if cfg, err := config.Parse(gitstore.ConfigFile, data); err == nil {
			return cfg
		}
	}
	return config.Default()
}

// branchPrefixOf returns the task-branch prefix of the config at the state
// branch's tip (the default when it has none).
func branchPrefixOf(st *gitstore.Store) string {
	if p := configAtTip(st).BranchPrefix; p != "" {
		return p
	}
	return config.Default().BranchPrefix
}

// acceptRemoteRewrite moves the local state branch to a remote's rewritten
// tip (orch sync --accept-rewrite): what the remote dropped is dropped
// here too. prev is what the tracking ref held before the fetch; this
// clone's transitions since are kept. It is a human's decision.
func (e *Engine) acceptRemoteRewrite(remote string, prev, rtip plumbing.Hash) error {
	if err := e.requireHuman("sync --accept-rewrite", "", "accepting a rewritten remote"); err != nil {
		return err
	}
	st := e.Store
	ltip := st.Snapshot().Tip
	if rtip.IsZero() || ltip == rtip || st.Contains(rtip, ltip) {
		return nil
	}
	if prev.IsZero() || st.Contains(prev, ltip) {
		// Nothing here the remote did not have: follow it.
		if err := st.MoveTo(rtip, e.Signature(), "orch: accept the rewritten "+remote); err != nil {
			return err
		}
		return e.afterMove()
	}
	// This clone has transitions of its own since it last fetched: keep
	// them, and take the rewrite, by merging from what the remote held
	// before it (what the rewrite dropped stays dropped).
	res := &SyncResult{Remote: remote}
	if err := e.mergeFrom(remote, prev, rtip, res); err != nil {
		return err
	}
	return e.afterMove()
}

// mergeRemote brings the remote tip into the local state branch, under the
// lock: fast-forward when local is behind, a merge commit when both moved.
// It returns what it did ("up_to_date", "ahead", "fast_forward", "merged").
func (e *Engine) mergeRemote(remote string, rtip plumbing.Hash, res *SyncResult) error {
	st := e.Store
	if err := e.dropEndedClaimWork(remote, rtip, res); err != nil {
		return err
	}
	ltip := st.Snapshot().Tip
	res.RemoteTip = hashText(rtip)
	switch {
	case rtip.IsZero() || rtip == ltip:
		res.Action = "up_to_date"
		if rtip.IsZero() {
			res.Action = "ahead"
		}
		return nil
	case ltip.IsZero():
		if err := st.MoveTo(rtip, e.Signature(), "orch: sync from "+remote); err != nil {
			return err
		}
		res.Action = "fast_forward"
		if st.View != "" {
			// A fresh clone: keep the view out of git status, as init does.
			if _, err := st.ExcludeView(); err != nil {
				return err
			}
		}
		return e.afterMove()
	}
	// A clone that claims in a loop is a few commits ahead of what it
	// fetched last: seen within them, no merge base needs computing.
	if st.ContainsWithin(ltip, rtip, 64) {
		res.Action = "ahead"
		return nil
	}
	base, err := st.MergeBase(ltip, rtip)
	if err != nil {
		return err
	}
	switch base {
	case rtip:
		res.Action = "ahead"
		return nil
	case ltip:
		if err := st.MoveTo(rtip, e.Signature(), "orch: sync from "+remote+" (fast-forward)"); err != nil {
			return err
		}
		res.Action = "fast_forward"
		return e.afterMove()
	}
	// Both moved: merge on top of the local tip.
	return e.mergeFrom(remote, base, rtip, res)
}

// dropEndedClaimWork takes back, before a merge with the remote, what this
// clone did to a task under a claim that has ended on the remote: the
// remote's claim ref names another claim of the task (a takeover of an
// expired lease) that this clone has not seen. The claim ref decides, so
// the old holder's transitions (a submit, a pause committed here by a
// process that did not know) are not pushed over the new holder's claim:
// the task file is set back to the remote's version, in a commit of its
// own, and each is reported as a conflict the remote won. A task the
// remote's state branch does not hold is left alone (nothing to go back
// to).
func (e *Engine) dropEndedClaimWork(remote string, rtip plumbing.Hash, res *SyncResult) error {
	if len(e.remoteClaims) == 0 || rtip.IsZero() {
		return nil
	}
	st := e.Store
	ls := st.Snapshot()
	if ls.Tip.IsZero() || st.Contains(rtip, ls.Tip) {
		return nil // a fast-forward: nothing of this clone's survives it
	}
	rs, err := st.SnapshotOf(rtip)
	if err != nil {
		return err
	}
	var changes []gitstore.Change
	var dropped []SyncConflict
	ids := make([]string, 0, len(e.remoteClaims))
	for id := range e.remoteClaims {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		rc := e.remoteClaims[id]
		s := st.SummaryByID(id)
		if s == nil || rc.By == unknownClaimer || rc.isClaim(&s.Task) || e.claimState(rc) != "pending" {
			continue
		}
		ours, err1 := ls.Read(s.Path)
		theirs, err2 := rs.Read(s.Path)
		if err1 != nil || err2 != nil || bytes.Equal(ours, theirs) {
			continue
		}
		tf, err := taskfile.Parse(s.Path, theirs)
		if err != nil {
			continue
		}
		t, r := &s.Task, &tf.Task
		if t.Queue == r.Queue && t.ClaimedBy == r.ClaimedBy && t.Attempts == r.Attempts && t.SubmittedBy == r.SubmittedBy {
			continue // no transition here: the three-way merge keeps the edits
		}
		changes = append(changes, gitstore.Change{Path: s.Path, Data: theirs})
		who := t.ClaimedBy
		if who == "" {
			who = t.SubmittedBy
		}
		dropped = append(dropped, SyncConflict{Path: s.Path, Task: id, Key: "queue",
			Local:  fmt.Sprintf("%s by %s (attempt %d)", t.Queue, orDash(who), t.Attempts),
			Remote: fmt.Sprintf("claimed by %s (attempt %d, claim ref %s)", rc.By, rc.Attempt, rc.Commit.String()[:12]), Kept: "remote"})
	}
	if len(changes) == 0 {
		return nil
	}
	_, err = st.Update(func(snap *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		var body strings.Builder
		for _, c := range dropped {
			fmt.Fprintf(&body, "%s: local %s dropped; %s is %s on %s.\n", c.Task, c.Local, c.Task, c.Remote, remote)
		}
		ev, err := e.eventChange(&mergedSnapshot{snap, changes}, Event{Time: taskfile.FormatTime(e.Now()), Action: ActionSyncConflict, Actor: e.Actor},
			&SyncConflictData{Remote: remote, Conflicts: dropped})
		if err != nil {
			return nil, err
		}
		tr := gitstore.Trailers{{Key: gitstore.TrailerAction, Value: string(ActionSync)}, {Key: gitstore.TrailerRemote, Value: remote}, {Key: gitstore.TrailerActor, Value: e.Actor}}
		return &gitstore.CommitRequest{Changes: mergeChange(changes, ev), Message: tr.Message("orch: sync with "+remote+": drop what ended claims did here", body.String()), Author: e.Signature()}, nil
	})
	if err != nil {
		return err
	}
	res.Conflicts = append(res.Conflicts, dropped...)
	return nil
}

// mergeFrom merges the remote tip rtip into the local tip, three ways from
// base, as one merge commit.
func (e *Engine) mergeFrom(remote string, base, rtip plumbing.Hash, res *SyncResult) error {
	st := e.Store
	var bs *gitstore.Snapshot
	var err error
	if base.IsZero() {
		bs, err = st.SnapshotOf(plumbing.ZeroHash)
	} else {
		bs, err = st.SnapshotOf(base)
	}
	if err != nil {
		return err
	}
	rs, err := st.SnapshotOf(rtip)
	if err != nil {
		return err
	}
	h, err := st.Update(func(ls *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		changes, conflicts, changed, err := e.mergeSnapshots(bs, ls, rs)
		if err != nil {
			return nil, err
		}
		res.Conflicts, res.Changed = conflicts, changed
		var body strings.Builder
		fmt.Fprintf(&body, "Merged %s (remote) into %s (local): %d file(s) changed, %d conflict(s).\n", rtip.String()[:7], ls.Tip.String()[:7], len(changed), len(conflicts))
		for _, c := range conflicts {
			fmt.Fprintf(&body, "\nConflict in %s %s: local %q, remote %q; kept %s.", c.Path, orDash(c.Key), clipText(c.Local), clipText(c.Remote), c.Kept)
		}
		tr := gitstore.Trailers{{Key: gitstore.TrailerAction, Value: string(ActionSync)}, {Key: gitstore.TrailerRemote, Value: remote}, {Key: gitstore.TrailerActor, Value: e.Actor}}
		msg := tr.Message("orch: sync with "+remote, body.String())
		if len(conflicts) > 0 {
			ev, err := e.eventChange(&mergedSnapshot{ls, changes}, Event{Time: taskfile.FormatTime(e.Now()), Action: ActionSyncConflict, Actor: e.Actor},
				&SyncConflictData{Remote: remote, Conflicts: conflicts})
			if err != nil {
				return nil, err
			}
			changes = mergeChange(changes, ev)
		}
		return &gitstore.CommitRequest{Changes: changes, Message: msg, Author: e.Signature(), MergeParents: []plumbing.Hash{rtip}}, nil
	})
	if err != nil {
		return err
	}
	res.Action, res.Merge = "merged", h.String()
	return nil
}

// mergedSnapshot lets eventChange see the events file as a commit's other
// changes leave it.
type mergedSnapshot struct {
	*gitstore.Snapshot
	changes []gitstore.Change
}

func (m *mergedSnapshot) Read(path string) ([]byte, error) {
	for _, c := range m.changes {
		if c.Path == path {
			if c.Delete {
				return nil, fmt.Errorf("%s: deleted", path)
			}
			return c.Data, nil
		}
	}
	return m.Snapshot.Read(path)
}

// Has reports whether path exists as the commit will leave it.
func (m *mergedSnapshot) Has(path string) bool {
	for _, c := range m.changes {
		if c.Path == path {
			return !c.Delete
		}
	}
	return m.Snapshot.Has(path)
}

func mergeChange(changes []gitstore.Change, c gitstore.Change) []gitstore.Change {
	for i := range changes {
		if changes[i].Path == c.Path {
			changes[i] = c
			return changes
		}
	}
	return append(changes, c)
}

func clipText(s string) string { return text.Clip(text.OneLine(s), 57) }

// afterMove brings the view in step after the branch moved under it.
func (e *Engine) afterMove() error {
	rep, err := e.Store.Reconcile(e.policy())
	if err != nil {
		return err
	}
	e.Reconciled = rep
	e.loadConfig()
	return nil
}

// mergeSnapshots computes the changes that turn ours into the merge of ours
// and theirs over base.
func (e *Engine) mergeSnapshots(base, ours, theirs *gitstore.Snapshot) ([]gitstore.Change, []SyncConflict, []string, error) {
	files := map[string][3]plumbing.Hash{}
	// The archive is not in a snapshot's files: when both sides changed it
	// (or only theirs), its files are merged like the rest.
	withArchive := ours.ArchiveTree() != theirs.ArchiveTree() && base.ArchiveTree() != theirs.ArchiveTree()
	for i, s := range []*gitstore.Snapshot{base, ours, theirs} {
		fs := s.AllFiles()
		if withArchive {
			archived, err := s.Archived()
			if err != nil {
				return nil, nil, nil, err
			}
			fs = append(fs, archived...)
		}
		for _, fe := range fs {
			v := files[fe.Path]
			v[i] = fe.Blob
			files[fe.Path] = v
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	read := func(s *gitstore.Snapshot, h plumbing.Hash) ([]byte, error) {
		if h.IsZero() {
			return nil, nil
		}
		return s.ReadBlob(h)
	}
	var changes []gitstore.Change
	var conflicts []SyncConflict
	var changed []string
	for _, p := range paths {
		v := files[p]
		b, o, t := v[0], v[1], v[2]
		if o == t || b == t {
			continue
		}
		if b == o {
			if t.IsZero() {
				changes = append(changes, gitstore.Change{Path: p, Delete: true})
			} else {
				data, err := read(theirs, t)
				if err != nil {
					return nil, nil, nil, err
				}
				changes = append(changes, gitstore.Change{Path: p, Data: data})
			}
			changed = append(changed, p)
			continue
		}
		bd, err := read(base, b)
		if err != nil {
			return nil, nil, nil, err
		}
		od, err := read(ours, o)
		if err != nil {
			return nil, nil, nil, err
		}
		td, err := read(theirs, t)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case o.IsZero(): // deleted here, changed there: keep it
			changes = append(changes, gitstore.Change{Path: p, Data: td})
			conflicts = append(conflicts, SyncConflict{Path: p, Local: "deleted", Remote: "changed", Kept: "remote"})
			changed = append(changed, p)
			continue
		case t.IsZero(): // deleted there, changed here: keep ours
			conflicts = append(conflicts, SyncConflict{Path: p, Local: "changed", Remote: "deleted", Kept: "local"})
			continue
		}
		var merged []byte
		var cs []SyncConflict
		switch {
		case strings.HasPrefix(p, gitstore.EventsDir+"/"):
			merged = unionLines(od, td)
		case strings.HasPrefix(p, gitstore.TasksDir+"/") && strings.HasSuffix(p, ".md"), gitstore.IsArchivePath(p):
			merged, cs = e.mergeTaskFile(p, bd, od, td)
		default:
			text, ok := taskfile.MergeText(string(bd), string(od), string(td))
			merged = []byte(text)
			if !ok {
				merged = td
				cs = []SyncConflict{{Path: p, Local: "edited", Remote: "edited", Kept: "remote"}}
			}
		}
		conflicts = append(conflicts, cs...)
		if !bytes.Equal(merged, od) {
			changes = append(changes, gitstore.Change{Path: p, Data: merged})
			changed = append(changed, p)
		}
	}
	return changes, conflicts, changed, nil
}

// unionLines keeps every line of ours, then the lines of theirs that ours
// lacks: event logs are append-only.
func unionLines(ours, theirs []byte) []byte {
	have := map[string]bool{}
	var out bytes.Buffer
	for _, l := range bytes.SplitAfter(ours, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		have[strings.TrimRight(string(l), "\n")] = true
		out.Write(l)
		if l[len(l)-1] != '\n' {
			out.WriteByte('\n')
		}
	}
	for _, l := range bytes.SplitAfter(theirs, []byte("\n")) {
		k := strings.TrimRight(string(l), "\n")
		if k == "" || have[k] {
			continue
		}
		have[k] = true
		out.WriteString(k + "\n")
	}
	return out.Bytes()
}

// mergeTaskFile merges one task file: key by key and body as text, the
// remote winning true conflicts, a losing local body kept in a section.
func (e *Engine) mergeTaskFile(p string, bd, od, td []byte) ([]byte, []SyncConflict) {
	bf, err1 := taskfile.Parse(p, bd)
	of, err2 := taskfile.Parse(p, od)
	tf, err3 := taskfile.Parse(p, td)
	if err1 != nil || err2 != nil || err3 != nil {
		return td, []SyncConflict{{Path: p, Local: "edited", Remote: "edited", Kept: "remote"}}
	}
	merged, cs, err := taskfile.Merge3(bf, of, tf)
	if err != nil {
		return td, []SyncConflict{{Path: p, Local: "edited", Remote: "edited", Kept: "remote"}}
	}
	var out []SyncConflict
	id := tf.Task.ID
	for _, c := range cs {
		if c.Key == "" {
			continue
		}
		if m, err := taskfile.TakeField(merged, tf, c.Key); err == nil {
			merged = m
		}
		out = append(out, SyncConflict{Path: p, Task: id, Key: c.Key, Local: c.Ours, Remote: c.Theirs, Kept: "remote"})
	}
	for _, c := range cs {
		if c.Key != "" {
			continue
		}
		// The body: take the remote's and keep the local one below it.
		fence := "~~~~"
		for strings.Contains(string(of.Body()), fence) {
			fence += "~"
		}
		body := strings.TrimRight(string(tf.Body()), "\n") + fmt.Sprintf("\n\n## Sync conflict (%s, %s)\n\nThis task's body was changed here and on the remote in the same place; the remote's text is above. The local text was:\n\n%s\n%s\n%s\n",
			e.Actor, taskfile.FormatTime(e.Now()), fence, strings.TrimRight(string(of.Body()), "\n"), fence)
		if m, err := merged.WithBody([]byte(body)); err == nil {
			merged = m
		}
		out = append(out, SyncConflict{Path: p, Task: id, Key: "", Local: "body edited", Remote: "body edited", Kept: "both"})
	}
	return merged.Src, out
}
