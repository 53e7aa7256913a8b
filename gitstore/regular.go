package gitstore

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/gitstore/statecache"
)

// PrivateDirs are the directories orch keeps in the private state
// directory: kept edit buffers (edits), orch run's logs and state (logs,
// run), landing's scratch worktree (land) and the worktrees a landing
// discarded (trash). Every other entry there is a file.
var PrivateDirs = map[string]bool{editsDir: true, LogsDir: true, RunDir: true, LandDir: true, TrashDir: true}

// The directories of PrivateDirs that other packages fill: orch run's
// agent logs and run state (coordinator), landing's scratch worktree and
// the worktrees a landing discarded (workflow, gitrepo.DiscardWorktree).
const (
	LogsDir  = "logs"
	RunDir   = "run"
	LandDir  = "land"
	TrashDir = "trash"
)

// NotRegularPrivateFiles lists what is in the private state directory but
// not a regular file, where orch expects one (every entry but
// PrivateDirs).
func (st *Store) NotRegularPrivateFiles() []*privfile.ErrNotRegular {
	ents, err := os.ReadDir(st.priv)
	if err != nil {
		return nil
	}
	var out []*privfile.ErrNotRegular
	for _, e := range ents {
		if PrivateDirs[e.Name()] && e.IsDir() {
			continue
		}
		if e.Type().IsRegular() {
			continue
		}
		out = append(out, &privfile.ErrNotRegular{Path: filepath.Join(st.priv, e.Name()), Kind: privfile.KindOf(e.Type())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// checkPrivateFiles refuses to go on when a file orch is about to read or
// write in the private state is not a regular file.
func (st *Store) checkPrivateFiles() error {
	for _, p := range []string{st.CachePath(), statecache.JournalPath(st.CachePath()), filepath.Join(st.priv, "view-owner"), filepath.Join(st.priv, "clone-id"), st.Repo.LockOwnerFile} {
		if err := privfile.Check(p); err != nil {
			return err
		}
	}
	return nil
}
