package gitstore

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
)

// ArchiveDir holds finished tasks that left the hot path:
// archive/<queue>/<shard>/<the file's name>, the queue being done, failed
// or superseded. A snapshot never loads it, the view does not mirror it
// and no scan stats it, so a command's cost does not grow with the
// finished work a project accumulates; the few commands that read it read
// the trees they need (a snapshot keeps those it read: it never changes).
//
// The queue is in the path so that a dependency (is T-x done?) is answered
// from trees alone, without reading a task file. The shard is the first
// character of the ID's random part, so an ID, or the random part's prefix
// a person types, names one tree per queue, and the dependencies of many
// open tasks on archived ones read few trees (with two characters, orch
// list read a tree per dependency); moving a batch rewrites the shards it
// touches, never one tree of every archived task. Every archived file's
// name starts with its task's ID (ArchivePath), so a look-up by ID is a
// look-up by name.
const ArchiveDir = "archive"

// ArchiveQueues are the queues of the archive, its first level.
var ArchiveQueues = []taskfile.Queue{taskfile.Done, taskfile.Failed, taskfile.Superseded}

// ArchiveShard is the shard of the archive that holds task id.
func ArchiveShard(id string) string {
	_, rnd, ok := strings.Cut(strings.ToLower(id), "-")
	if !ok {
		rnd = strings.ToLower(id)
	}
	if len(rnd) > 1 {
		rnd = rnd[:1]
	}
	if rnd == "" {
		rnd = "_"
	}
	return rnd
}

// ArchivePath is where the file at taskPath (tasks/<name>) of task id, in
// queue q, goes in the archive: its name, which orch starts with the ID; a
// name a person chose gets the ID in front.
func ArchivePath(id string, q taskfile.Queue, taskPath string) string {
	_, name := splitPath(taskPath)
	if ArchivedNameID(name) != strings.ToLower(id) {
		name = id + "-" + name
	}
	return ArchiveDir + "/" + string(q) + "/" + ArchiveShard(id) + "/" + name
}

// ArchivedNameID is the task ID (lower case) an archived file's name, or
// path, starts with: "t-4k9x2m" of T-4k9x2m-fix-it.md.
func ArchivedNameID(p string) string {
	return strings.ToLower(archivedNameID(p))
}

// archivedNameID is ArchivedNameID as the name spells it.
func archivedNameID(p string) string {
	name := strings.TrimSuffix(p[strings.LastIndexByte(p, '/')+1:], ".md")
	prefix, rest, ok := strings.Cut(name, "-")
	if !ok {
		return name
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		rest = rest[:i]
	}
	return prefix + "-" + rest
}

// UnarchivedPath is where an archived task file goes back to among the
// tasks.
func UnarchivedPath(archivePath string) string {
	_, name := splitPath(archivePath)
	return TasksDir + "/" + name
}

// IsArchivePath reports whether p is a task file in the archive.
func IsArchivePath(p string) bool {
	return strings.HasPrefix(p, ArchiveDir+"/") && strings.HasSuffix(p, ".md") && strings.Count(p, "/") == 3
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

// archiveTrees are the archive's trees a snapshot has read, by directory.
type archiveTrees struct {
	mu   sync.Mutex
	dirs map[string][]gitrepo.TreeEntry
	raw  map[string][]byte // shard trees as stored, for ArchivedHas
}

// ArchiveTree is the id of the archive's tree (zero: nothing archived).
func (s *Snapshot) ArchiveTree() plumbing.Hash {
	if root := s.dirs[""]; root != nil {
		h, _ := childTree(root.Entries, ArchiveDir)
		return h
	}
	return plumbing.ZeroHash
}

// ArchivedQueueTree is the id of the tree archive/<q> (zero: none).
func (s *Snapshot) ArchivedQueueTree(q taskfile.Queue) (plumbing.Hash, error) {
	if s.ArchiveTree().IsZero() {
		return plumbing.ZeroHash, nil
	}
	ents, err := s.archiveDir(ArchiveDir)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h, _ := childTree(ents, string(q))
	return h, nil
}

// ArchivedIDs lists the IDs of the task files archived in queue q, as
// their names spell them (every shard's tree is read).
func (s *Snapshot) ArchivedIDs(q taskfile.Queue) ([]string, error) {
	files, err := s.archivedInQueue(q)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(files))
	for i, fe := range files {
		ids[i] = archivedNameID(fe.Path)
	}
	return ids, nil
}

// archiveDir lists the entries of an archive directory ("archive",
// "archive/done", "archive/done/4k"), nil when it does not exist. Each is
// read once per snapshot.
func (s *Snapshot) archiveDir(dir string) ([]gitrepo.TreeEntry, error) {
	s.arch.mu.Lock()
	ents, ok := s.arch.dirs[dir]
	s.arch.mu.Unlock()
	if ok {
		return ents, nil
	}
	var h plumbing.Hash
	if dir == ArchiveDir {
		h = s.ArchiveTree()
	} else {
		parent, name := splitPath(dir)
		pents, err := s.archiveDir(parent)
		if err != nil {
			return nil, err
		}
		h, _ = childTree(pents, name)
	}
	if !h.IsZero() {
		var err error
		if ents, err = s.readTree(h); err != nil {
			return nil, err
		}
	}
	s.arch.mu.Lock()
	if s.arch.dirs == nil {
		s.arch.dirs = map[string][]gitrepo.TreeEntry{}
	}
	s.arch.dirs[dir] = ents
	s.arch.mu.Unlock()
	return ents, nil
}

// archivedFiles lists the task files of one archive directory.
func (s *Snapshot) archivedFiles(dir string) ([]FileEntry, error) {
	ents, err := s.archiveDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]FileEntry, 0, len(ents))
	for _, e := range ents {
		if (e.Mode == gitrepo.ModeFile || e.Mode == gitrepo.ModeExec) && strings.HasSuffix(e.Name, ".md") {
			out = append(out, FileEntry{Path: dir + "/" + e.Name, Blob: e.Hash})
		}
	}
	return out, nil
}

// ArchivedIn lists the task files of one shard of the archive, in every
// queue or (q set) in q's.
func (s *Snapshot) ArchivedIn(shard string, q taskfile.Queue) ([]FileEntry, error) {
	var out []FileEntry
	for _, aq := range ArchiveQueues {
		if q != "" && aq != q {
			continue
		}
		fs, err := s.archivedFiles(ArchiveDir + "/" + string(aq) + "/" + shard)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// Archived lists every task file in the archive.
func (s *Snapshot) Archived() ([]FileEntry, error) {
	var out []FileEntry
	for _, q := range ArchiveQueues {
		fs, err := s.archivedInQueue(q)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// archivedInQueue lists the task files archived in queue q, shard by
// shard.
func (s *Snapshot) archivedInQueue(q taskfile.Queue) ([]FileEntry, error) {
	dir := ArchiveDir + "/" + string(q)
	shards, err := s.archiveDir(dir)
	if err != nil {
		return nil, err
	}
	var out []FileEntry
	for _, sh := range shards {
		if !sh.IsTree() {
			continue
		}
		fs, err := s.archivedFiles(dir + "/" + sh.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// GetAny is Get for any task file, one in the archive too.
func (s *Snapshot) GetAny(path string) (plumbing.Hash, bool, error) {
	if !IsArchivePath(path) {
		h, ok := s.Get(path)
		return h, ok, nil
	}
	dir, _ := splitPath(path)
	files, err := s.archivedFiles(dir)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	for _, fe := range files {
		if fe.Path == path {
			return fe.Blob, true, nil
		}
	}
	return plumbing.ZeroHash, false, nil
}

// loadArchiveDirs reads the archive's trees that changes touch into the
// snapshot's directories, for apply.
func (s *Snapshot) loadArchiveDirs(changes []Change) error {
	for _, c := range changes {
		if !strings.HasPrefix(c.Path, ArchiveDir+"/") {
			continue
		}
		dir, _ := splitPath(c.Path)
		var chain []string
		for d := dir; d != ""; d, _ = splitPath(d) {
			chain = append(chain, d)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			d := chain[i]
			if s.dirs[d] != nil {
				continue
			}
			ents, err := s.archiveDir(d)
			if err != nil {
				return err
			}
			s.dirs[d] = &gitrepo.Tree{Entries: ents}
		}
	}
	return nil
}

// dropArchiveDirs forgets the archive's trees apply read or wrote; the
// root keeps the archive's new tree id.
func (s *Snapshot) dropArchiveDirs() {
	s.arch.mu.Lock()
	s.arch.dirs, s.arch.raw = nil, nil // read before the changes: not this snapshot's
	s.arch.mu.Unlock()
	for d := range s.dirs {
		if d == ArchiveDir || strings.HasPrefix(d, ArchiveDir+"/") {
			delete(s.dirs, d)
		}
	}
}

// ArchivedHas reports whether the archive holds task id's file in queue q
// (any queue when q is ""), by its name in the shard's tree. orch list asks
// this for every dependency of every open task, and at 19,000 archived
// tasks parsing the trees (every shard, 32 per queue) cost more than the
// rest of the listing: the shard's tree is scanned as it is stored, its
// entries never made.
func (s *Snapshot) ArchivedHas(id string, q taskfile.Queue) (bool, error) {
	if s.ArchiveTree().IsZero() {
		return false, nil
	}
	shard := ArchiveShard(id)
	for _, aq := range ArchiveQueues {
		if q != "" && aq != q {
			continue
		}
		raw, err := s.archiveRaw(string(aq), shard)
		if err != nil {
			return false, err
		}
		if treeHasTaskFile(raw, id) {
			return true, nil
		}
	}
	return false, nil
}

// archiveRaw is the stored form of the tree archive/<queue>/<shard> (nil
// when it does not exist), read once per snapshot.
func (s *Snapshot) archiveRaw(queue, shard string) ([]byte, error) {
	dir := ArchiveDir + "/" + queue + "/" + shard
	s.arch.mu.Lock()
	raw, ok := s.arch.raw[dir]
	s.arch.mu.Unlock()
	if ok {
		return raw, nil
	}
	ents, err := s.archiveDir(ArchiveDir + "/" + queue)
	if err != nil {
		return nil, err
	}
	if h, ok := childTree(ents, shard); ok {
		if raw, err = s.objs.Read(plumbing.TreeObject, h); err != nil {
			return nil, err
		}
	}
	s.arch.mu.Lock()
	if s.arch.raw == nil {
		s.arch.raw = map[string][]byte{}
	}
	s.arch.raw[dir] = raw
	s.arch.mu.Unlock()
	return raw, nil
}

// treeHasTaskFile reports whether a stored tree ("<mode> <name>\0<20-byte
// id>" entries) holds a file named <id>.md or <id>-....
func treeHasTaskFile(raw []byte, id string) bool {
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		nul := bytes.IndexByte(raw, 0)
		if sp < 0 || nul < sp || len(raw) < nul+21 {
			return false
		}
		name := raw[sp+1 : nul]
		if len(name) > len(id) && string(name[:len(id)]) == id && raw[0] != '4' { // 40000: a tree
			if rest := name[len(id):]; string(rest) == ".md" || rest[0] == '-' {
				return true
			}
		}
		raw = raw[nul+21:]
	}
	return false
}

// ArchivedDone reports whether task id is in the archive as done: a
// dependency on it is met. orch list asks it for every dependency of every
// open task, so the archived done tasks' IDs come from a cache of their own
// (statecache.LoadArchivedIDs), keyed by the tree archive/done: a commit
// that changes archive/done makes a new tree, and the first look-up after
// it rebuilds the cache, so it is never stale.
func (st *Store) ArchivedDone(id string) bool {
	snap := st.Snapshot()
	tree, err := snap.ArchivedQueueTree(taskfile.Done)
	if err != nil || tree.IsZero() {
		return false
	}
	if st.doneIDs == nil || st.doneIDs.Tree != tree {
		st.doneIDs = statecache.LoadArchivedIDs(filepath.Join(st.priv, statecache.ArchivedDoneName), tree, func() ([]string, error) {
			return snap.ArchivedIDs(taskfile.Done)
		})
	}
	if st.doneIDs == nil { // the archive could not be read: ask its tree
		ok, err := snap.ArchivedHas(id, taskfile.Done)
		return err == nil && ok
	}
	return st.doneIDs.Has(id)
}

// ArchivedSummaries is the summary of every archived task file, in the
// archive's order. They come from a cache of their own, keyed by file and
// blob: never stale, only incomplete; read summarises a file it lacks, and
// it is written again for the archive as it is. Parsing every archived
// file made orch list --all cost seconds.
func (st *Store) ArchivedSummaries(read func(FileEntry) (*Summary, error)) ([]*Summary, error) {
	files, err := st.Snapshot().Archived()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(st.priv, statecache.ArchivedSummariesName)
	cached := map[FileEntry]*Summary{}
	for _, s := range statecache.ReadArchivedSummaries(path) {
		cached[FileEntry{Path: s.Path, Blob: s.Blob}] = s
	}
	all := make([]*Summary, len(files))
	parsed := 0
	for i, fe := range files {
		if all[i] = cached[fe]; all[i] == nil {
			if all[i], err = read(fe); err != nil {
				return nil, err
			}
			parsed++
		}
	}
	if parsed > 0 || len(cached) != len(files) {
		statecache.WriteArchivedSummaries(path, all)
	}
	return all, nil
}
