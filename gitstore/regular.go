package gitstore

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/gitstore/statecache"
)

// NotRegularPrivateFiles lists what is in the private state directory but
// not a regular file, where orch expects one (every entry but the edits/
// directory of kept edit buffers).
func (st *Store) NotRegularPrivateFiles() []*privfile.ErrNotRegular {
	ents, err := os.ReadDir(st.priv)
	if err != nil {
		return nil
	}
	var out []*privfile.ErrNotRegular
	for _, e := range ents {
		if e.Name() == editsDir && e.IsDir() {
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
