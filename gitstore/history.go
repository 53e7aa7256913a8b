package gitstore

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// PathHistory calls fn with each version of path on the state branch,
// newest first, walking at most maxCommits commits along first parents,
// until fn returns false. Each blob is given once (a version that comes
// back is not repeated). It is how a copy of a file made some time ago
// finds the version it was made from (orch edit --from).
func (st *Store) PathHistory(path string, maxCommits int, fn func(blob plumbing.Hash) bool) error {
	seen := map[plumbing.Hash]bool{}
	memo := map[plumbing.Hash]plumbing.Hash{} // root tree -> blob of path
	n := 0
	going := true
	err := st.Walk(func(c *CommitInfo) bool {
		if n++; n > maxCommits {
			return false
		}
		blob, ok := memo[c.Tree]
		if !ok {
			blob = st.blobAt(c.Tree, path)
			memo[c.Tree] = blob
		}
		if !blob.IsZero() && !seen[blob] {
			seen[blob] = true
			going = fn(blob)
		}
		return going
	})
	return err
}

// blobAt resolves path in the tree root (ZeroHash when it is not there).
func (st *Store) blobAt(root plumbing.Hash, path string) plumbing.Hash {
	h := root
	parts := strings.Split(path, "/")
	for i, name := range parts {
		data, err := st.objs.read(plumbing.TreeObject, h)
		if err != nil {
			return plumbing.ZeroHash
		}
		entries, err := parseTree(data)
		if err != nil {
			return plumbing.ZeroHash
		}
		found := false
		for _, e := range entries {
			if e.name == name && (i == len(parts)-1) != e.isTree() {
				h, found = e.hash, true
				break
			}
		}
		if !found {
			return plumbing.ZeroHash
		}
	}
	return h
}
