package gitstore

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
)

// ArchiveDir holds finished tasks that left the hot path: archive/<shard>/
// <the file's name in tasks/>. A snapshot never loads it, the view does not
// mirror it and no scan stats it, so a command's cost does not grow with
// the finished work a project accumulates; the few commands that read it
// (show, log, list --all, reopen, edit) read the trees they need.
//
// The shard is the first two characters of the ID's random part, so an ID,
// or the random part's prefix a person types, names one small tree: at
// 20,000 archived tasks a shard holds about twenty, and moving a batch
// rewrites the shards it touches and the archive's 1,024-entry tree, never
// one tree of every archived task.
const ArchiveDir = "archive"

// ArchiveShard is the shard of the archive that holds task id.
func ArchiveShard(id string) string {
	_, rnd, ok := strings.Cut(strings.ToLower(id), "-")
	if !ok {
		rnd = strings.ToLower(id)
	}
	if len(rnd) > 2 {
		rnd = rnd[:2]
	}
	if rnd == "" {
		rnd = "_"
	}
	return rnd
}

// ArchivePath is where the file at taskPath (tasks/<name>) of task id goes
// in the archive: its name, which orch starts with the ID; a name a person
// chose gets the ID in front, so that every archived file's name starts
// with its ID and a look-up by ID reads only the files it names.
func ArchivePath(id, taskPath string) string {
	_, name := splitPath(taskPath)
	if !strings.HasPrefix(strings.ToLower(name), strings.ToLower(id)+"-") && !strings.EqualFold(name, id+".md") {
		name = id + "-" + name
	}
	return ArchiveDir + "/" + ArchiveShard(id) + "/" + name
}

// UnarchivedPath is where an archived task file goes back to among the
// tasks.
func UnarchivedPath(archivePath string) string {
	_, name := splitPath(archivePath)
	return TasksDir + "/" + name
}

// IsArchivePath reports whether p is a task file in the archive.
func IsArchivePath(p string) bool {
	return strings.HasPrefix(p, ArchiveDir+"/") && strings.HasSuffix(p, ".md") && strings.Count(p, "/") == 2
}

// childTree finds the subtree named name in entries.
func childTree(ents []gitrepo.TreeEntry, name string) (plumbing.Hash, bool) {
	i := sort.Search(len(ents), func(i int) bool { return !gitrepo.GitLess(ents[i].Name, ents[i].IsTree(), name, true) })
	if i < len(ents) && ents[i].Name == name && ents[i].IsTree() {
		return ents[i].Hash, true
	}
	return plumbing.ZeroHash, false
}

func (s *Snapshot) readTree(h plumbing.Hash) ([]gitrepo.TreeEntry, error) {
	data, err := s.objs.Read(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	ents, err := gitrepo.ParseTree(data)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	return ents, nil
}

// ArchiveTree is the id of the archive's tree (zero: nothing archived).
func (s *Snapshot) ArchiveTree() plumbing.Hash {
	if root := s.dirs[""]; root != nil {
		h, _ := childTree(root.Entries, ArchiveDir)
		return h
	}
	return plumbing.ZeroHash
}

// archiveShards lists the archive's shard trees.
func (s *Snapshot) archiveShards() ([]gitrepo.TreeEntry, error) {
	h := s.ArchiveTree()
	if h.IsZero() {
		return nil, nil
	}
	return s.readTree(h)
}

// ArchivedIn lists the task files of one shard of the archive.
func (s *Snapshot) ArchivedIn(shard string) ([]FileEntry, error) {
	shards, err := s.archiveShards()
	if err != nil {
		return nil, err
	}
	h, ok := childTree(shards, shard)
	if !ok {
		return nil, nil
	}
	return s.archivedFiles(shard, h)
}

func (s *Snapshot) archivedFiles(shard string, h plumbing.Hash) ([]FileEntry, error) {
	ents, err := s.readTree(h)
	if err != nil {
		return nil, err
	}
	out := make([]FileEntry, 0, len(ents))
	for _, e := range ents {
		if (e.Mode == gitrepo.ModeFile || e.Mode == gitrepo.ModeExec) && strings.HasSuffix(e.Name, ".md") {
			out = append(out, FileEntry{Path: ArchiveDir + "/" + shard + "/" + e.Name, Blob: e.Hash})
		}
	}
	return out, nil
}

// Archived lists every task file in the archive, shard by shard.
func (s *Snapshot) Archived() ([]FileEntry, error) {
	shards, err := s.archiveShards()
	if err != nil {
		return nil, err
	}
	var out []FileEntry
	for _, sh := range shards {
		if !sh.IsTree() {
			continue
		}
		fs, err := s.archivedFiles(sh.Name, sh.Hash)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// GetAny is Get for any task file, one in the archive too (whose trees a
// snapshot does not hold: this reads them).
func (s *Snapshot) GetAny(path string) (plumbing.Hash, bool, error) {
	if !IsArchivePath(path) {
		h, ok := s.Get(path)
		return h, ok, nil
	}
	dir, name := splitPath(path)
	_, shard := splitPath(dir)
	files, err := s.ArchivedIn(shard)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	for _, fe := range files {
		if fe.Path == dir+"/"+name {
			return fe.Blob, true, nil
		}
	}
	return plumbing.ZeroHash, false, nil
}

// loadArchiveDirs reads the archive's trees that changes touch into the
// snapshot, for apply.
func (s *Snapshot) loadArchiveDirs(changes []Change) error {
	for _, c := range changes {
		if !strings.HasPrefix(c.Path, ArchiveDir+"/") {
			continue
		}
		if s.dirs[ArchiveDir] == nil {
			d := &gitrepo.Tree{}
			if h := s.ArchiveTree(); !h.IsZero() {
				ents, err := s.readTree(h)
				if err != nil {
					return err
				}
				d = &gitrepo.Tree{Hash: h, Entries: ents}
			}
			s.dirs[ArchiveDir] = d
		}
		dir, _ := splitPath(c.Path)
		if dir == ArchiveDir || s.dirs[dir] != nil {
			continue
		}
		_, shard := splitPath(dir)
		d := &gitrepo.Tree{}
		if h, ok := childTree(s.dirs[ArchiveDir].Entries, shard); ok && strings.Count(dir, "/") == 1 {
			ents, err := s.readTree(h)
			if err != nil {
				return err
			}
			d = &gitrepo.Tree{Hash: h, Entries: ents}
		}
		s.dirs[dir] = d
	}
	return nil
}

// dropArchiveDirs forgets the archive's trees apply read or wrote; the
// root keeps the archive's new tree id.
func (s *Snapshot) dropArchiveDirs() {
	for d := range s.dirs {
		if d == ArchiveDir || strings.HasPrefix(d, ArchiveDir+"/") {
			delete(s.dirs, d)
		}
	}
}
