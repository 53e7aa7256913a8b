package gitstore

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
)

// Snapshot is the tree of one commit of the state branch, flattened into its
// directories. Tree surgery rewrites only the directories on the path of a
// changed file; every other tree is reused by id.
type Snapshot struct {
	Tip  plumbing.Hash // commit (ZeroHash: the branch does not exist yet)
	Root plumbing.Hash // root tree
	dirs map[string]*gitrepo.Tree
	objs *gitrepo.ObjectStore
	view func(path string, h plumbing.Hash) ([]byte, bool) // read from the view when it holds h
	arch archiveTrees                                      // the archive's trees read so far (archive.go)
}

func emptySnapshot(objs *gitrepo.ObjectStore) *Snapshot {
	return &Snapshot{dirs: map[string]*gitrepo.Tree{"": {}}, objs: objs}
}

// Trees are the directories read, by path ("" is the root): for orch
// doctor to compare with the state cache's. Callers must not change them.
func (s *Snapshot) Trees() map[string]*gitrepo.Tree { return s.dirs }

// Get returns the blob id at path.
func (s *Snapshot) Get(path string) (plumbing.Hash, bool) {
	dir, name := splitPath(path)
	d := s.dirs[dir]
	if d == nil {
		return plumbing.ZeroHash, false
	}
	ents := d.Entries
	i := sort.Search(len(ents), func(i int) bool { return !gitrepo.GitLess(ents[i].Name, ents[i].IsTree(), name, false) })
	if i < len(ents) && ents[i].Name == name && !ents[i].IsTree() {
		return ents[i].Hash, true
	}
	return plumbing.ZeroHash, false
}

// Has reports whether path is a file at this snapshot.
func (s *Snapshot) Has(path string) bool {
	_, ok := s.Get(path)
	return ok
}

// Read returns the content at path.
func (s *Snapshot) Read(path string) ([]byte, error) {
	h, ok := s.Get(path)
	if !ok {
		return nil, fmt.Errorf("%s: not on the state branch", path)
	}
	return s.ReadAt(path, h)
}

// ReadAt returns blob h, which is the content of path: from the view file
// when it holds exactly that blob (one small read instead of a trip through
// the object store and its pack index), else from the object store.
func (s *Snapshot) ReadAt(path string, h plumbing.Hash) ([]byte, error) {
	if s.view != nil {
		if data, ok := s.view(path, h); ok {
			return data, nil
		}
	}
	return s.objs.Read(plumbing.BlobObject, h)
}

// ReadBlob returns a blob by id.
func (s *Snapshot) ReadBlob(h plumbing.Hash) ([]byte, error) {
	return s.objs.Read(plumbing.BlobObject, h)
}

// Files lists the regular files directly in dir (sorted), with their blobs.
func (s *Snapshot) Files(dir string) []FileEntry {
	d := s.dirs[dir]
	if d == nil {
		return nil
	}
	out := make([]FileEntry, 0, len(d.Entries))
	for _, e := range d.Entries {
		if e.Mode == gitrepo.ModeFile || e.Mode == gitrepo.ModeExec {
			p := e.Name
			if dir != "" {
				p = dir + "/" + e.Name
			}
			out = append(out, FileEntry{Path: p, Blob: e.Hash})
		}
	}
	return out
}

// AllFiles lists every regular file of the snapshot.
func (s *Snapshot) AllFiles() []FileEntry {
	dirs := make([]string, 0, len(s.dirs))
	for d := range s.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var out []FileEntry
	for _, d := range dirs {
		out = append(out, s.Files(d)...)
	}
	return out
}

// FileEntry is a file of a snapshot.
type FileEntry struct {
	Path string
	Blob plumbing.Hash
}

func splitPath(p string) (string, string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// maxTreeDepth and maxTreeEntries bound what a hostile state branch can make
// orch load.
const (
	maxTreeDepth   = 4
	maxTreeEntries = 2_000_000
)

// loadSnapshot reads the tree of commit tip. Directories whose tree id is in
// reuse are taken from there instead of being read again.
func loadSnapshot(objs *gitrepo.ObjectStore, tip plumbing.Hash, reuse map[string]*gitrepo.Tree) (*Snapshot, error) {
	if tip.IsZero() {
		return emptySnapshot(objs), nil
	}
	raw, err := objs.Read(plumbing.CommitObject, tip)
	if err != nil {
		return nil, fmt.Errorf("reading state commit %s: %w", tip, err)
	}
	c, err := gitrepo.ParseCommit(raw)
	if err != nil {
		return nil, fmt.Errorf("state commit %s: %w", tip, err)
	}
	s := &Snapshot{Tip: tip, Root: c.Tree, dirs: map[string]*gitrepo.Tree{}, objs: objs}
	total := 0
	var load func(dir string, h plumbing.Hash, depth int) error
	load = func(dir string, h plumbing.Hash, depth int) error {
		if depth > maxTreeDepth {
			return nil // deeper trees are preserved by id, never read
		}
		var d *gitrepo.Tree
		if r := reuse[dir]; r != nil && r.Hash == h {
			d = r
		} else {
			data, err := objs.Read(plumbing.TreeObject, h)
			if err != nil {
				return err
			}
			ents, err := gitrepo.ParseTree(data)
			if err != nil {
				return fmt.Errorf("tree %s: %w", h, err)
			}
			d = &gitrepo.Tree{Hash: h, Entries: ents}
		}
		total += len(d.Entries)
		if total > maxTreeEntries {
			return fmt.Errorf("state branch has more than %d entries", maxTreeEntries)
		}
		s.dirs[dir] = d
		for _, e := range d.Entries {
			if e.IsTree() && !(dir == "" && e.Name == ArchiveDir) {
				sub := e.Name
				if dir != "" {
					sub = dir + "/" + e.Name
				}
				if err := load(sub, e.Hash, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := load("", c.Tree, 0); err != nil {
		return nil, err
	}
	return s, nil
}

// Change is one file written or deleted by a commit.
type Change struct {
	Path   string
	Data   []byte
	Delete bool
}

// apply returns a new snapshot with the changes made, writing the new blobs
// and the trees on the path of each change. Unchanged directories keep
// their tree ids.
func (s *Snapshot) apply(changes []Change, b *gitrepo.Batch) (*Snapshot, error) {
	out := &Snapshot{Tip: s.Tip, dirs: make(map[string]*gitrepo.Tree, len(s.dirs)), objs: s.objs}
	for k, v := range s.dirs {
		out.dirs[k] = v
	}
	// The archive's trees are read only for the changes that need them,
	// and dropped again once written: a snapshot never holds them.
	if err := out.loadArchiveDirs(changes); err != nil {
		return nil, err
	}
	defer out.dropArchiveDirs()
	dirty := map[string]bool{}
	own := map[string]bool{} // directories whose entries this apply copied
	for _, c := range changes {
		if err := checkTreePath(c.Path); err != nil {
			return nil, err
		}
		dir, name := splitPath(c.Path)
		if !c.Delete {
			// A tree may not hold a file and a directory of one name:
			// git fsck rejects such a tree (duplicateEntries).
			if d := out.dirs[c.Path]; d != nil && len(d.Entries) > 0 {
				return nil, fmt.Errorf("invalid path %q: a directory of the state branch has that name", c.Path)
			}
			for p := dir; p != ""; p, _ = splitPath(p) {
				if _, isFile := out.Get(p); isFile {
					return nil, fmt.Errorf("invalid path %q: %s is a file on the state branch", c.Path, p)
				}
			}
		}
		d := out.dirs[dir]
		var ents []gitrepo.TreeEntry
		switch {
		case d != nil && own[dir]:
			ents = d.Entries // this apply's own copy: change it in place
		case d != nil:
			// The snapshot's entries are shared (the cache, other
			// snapshots): copy once per directory, not once per change
			// (a batch of moves copied the directory once per task).
			ents = append(make([]gitrepo.TreeEntry, 0, len(d.Entries)+len(changes)), d.Entries...)
		}
		i := sort.Search(len(ents), func(i int) bool { return !gitrepo.GitLess(ents[i].Name, ents[i].IsTree(), name, false) })
		exists := i < len(ents) && ents[i].Name == name && !ents[i].IsTree()
		if c.Delete {
			if !exists {
				continue
			}
			ents = append(ents[:i], ents[i+1:]...)
		} else {
			h := b.Add(plumbing.BlobObject, c.Data)
			mode := uint32(gitrepo.ModeFile)
			if exists {
				if ents[i].Mode == gitrepo.ModeExec {
					mode = gitrepo.ModeExec
				}
				ents[i] = gitrepo.TreeEntry{Name: name, Mode: mode, Hash: h}
			} else {
				ents = append(ents, gitrepo.TreeEntry{})
				copy(ents[i+1:], ents[i:])
				ents[i] = gitrepo.TreeEntry{Name: name, Mode: mode, Hash: h}
			}
		}
		out.dirs[dir] = &gitrepo.Tree{Entries: ents}
		own[dir] = true
		for p := dir; ; {
			dirty[p] = true
			if p == "" {
				break
			}
			p, _ = splitPath(p)
		}
	}
	// Write dirty trees deepest first, linking each into its parent.
	order := make([]string, 0, len(dirty))
	for d := range dirty {
		order = append(order, d)
	}
	depth := func(d string) int {
		if d == "" {
			return 0
		}
		return strings.Count(d, "/") + 1
	}
	sort.Slice(order, func(i, j int) bool { return depth(order[i]) > depth(order[j]) })
	for _, dir := range order {
		d := out.dirs[dir]
		if d == nil {
			d = &gitrepo.Tree{}
		}
		if len(d.Entries) == 0 && dir != "" {
			delete(out.dirs, dir)
			if err := out.setChild(dir, plumbing.ZeroHash); err != nil {
				return nil, err
			}
			continue
		}
		h := b.Add(plumbing.TreeObject, gitrepo.EncodeTree(d.Entries))
		out.dirs[dir] = &gitrepo.Tree{Hash: h, Entries: d.Entries}
		if dir == "" {
			out.Root = h
		} else if err := out.setChild(dir, h); err != nil {
			return nil, err
		}
	}
	if len(dirty) == 0 {
		out.Root = s.Root
		if out.Root.IsZero() {
			h := b.Add(plumbing.TreeObject, nil)
			out.Root = h
		}
	}
	return out, nil
}

// setChild points the entry for dir in its parent at tree h (or removes it
// when h is zero).
func (s *Snapshot) setChild(dir string, h plumbing.Hash) error {
	parent, name := splitPath(dir)
	p := s.dirs[parent]
	var ents []gitrepo.TreeEntry
	if p != nil {
		ents = append([]gitrepo.TreeEntry(nil), p.Entries...)
	}
	i := sort.Search(len(ents), func(i int) bool { return !gitrepo.GitLess(ents[i].Name, ents[i].IsTree(), name, true) })
	exists := i < len(ents) && ents[i].Name == name && ents[i].IsTree()
	switch {
	case h.IsZero() && exists:
		ents = append(ents[:i], ents[i+1:]...)
	case h.IsZero():
	case exists:
		ents[i].Hash = h
	default:
		ents = append(ents, gitrepo.TreeEntry{})
		copy(ents[i+1:], ents[i:])
		ents[i] = gitrepo.TreeEntry{Name: name, Mode: gitrepo.ModeTree, Hash: h}
	}
	s.dirs[parent] = &gitrepo.Tree{Entries: ents}
	return nil
}

// checkTreePath refuses paths that are not plain relative paths.
func checkTreePath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.ContainsRune(p, 0) || strings.Contains(p, "\\") {
		return fmt.Errorf("invalid path %q", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return fmt.Errorf("invalid path %q", p)
		}
	}
	return nil
}
