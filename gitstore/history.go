package gitstore

import (
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
)

// ReadCommit reads and parses one commit.
func (st *Store) ReadCommit(h plumbing.Hash) (*gitrepo.CommitInfo, error) {
	raw, err := st.objs.Read(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	c, err := gitrepo.ParseCommit(raw)
	if err != nil {
		return nil, err
	}
	c.Hash = h
	return c, nil
}

// Walk visits the state branch's commits from the tip along first parents,
// newest first, until fn returns false.
func (st *Store) Walk(fn func(*gitrepo.CommitInfo) bool) error {
	h := st.snap.Tip
	for n := 0; !h.IsZero() && n < 10_000_000; n++ {
		c, err := st.ReadCommit(h)
		if err != nil {
			return err
		}
		if !fn(c) {
			return nil
		}
		if len(c.Parents) == 0 {
			return nil
		}
		h = c.Parents[0]
	}
	return nil
}

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
	err := st.Walk(func(c *gitrepo.CommitInfo) bool {
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
		data, err := st.objs.Read(plumbing.TreeObject, h)
		if err != nil {
			return plumbing.ZeroHash
		}
		entries, err := gitrepo.ParseTree(data)
		if err != nil {
			return plumbing.ZeroHash
		}
		found := false
		for _, e := range entries {
			if e.Name == name && (i == len(parts)-1) != e.IsTree() {
				h, found = e.Hash, true
				break
			}
		}
		if !found {
			return plumbing.ZeroHash
		}
	}
	return h
}

// ErrMovedBackwards: a state branch no longer contains a tip orch saw (a
// reset, git branch -f, a force-push fetched by sync). History only moves
// forward (docs/design.md §1.4): orch writes nothing until a person restores the
// lost tip or accepts the rewind.
type ErrMovedBackwards struct {
	Ref     string
	Seen    plumbing.Hash         // the tip orch saw last
	Now     plumbing.Hash         // where the branch is
	Dropped []*gitrepo.CommitInfo // commits of Seen's first-parent line Now lacks, newest first
	More    int                   // further dropped commits not listed
	// Diverged: Now has commits of its own (Seen is not a descendant of
	// Now), so restoring Seen would drop those.
	Diverged bool
}

func (e *ErrMovedBackwards) Error() string {
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(e.Ref, "refs/heads/") + " moved backwards: it is at " + short7(e.Now) + ", which does not contain " + short7(e.Seen) + ", the tip orch saw last")
	if n := len(e.Dropped) + e.More; n > 0 {
		b.WriteString("; dropped: ")
		for i, c := range e.Dropped {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(short7(c.Hash) + " " + c.Subject())
		}
		if e.More > 0 {
			b.WriteString(", and more")
		}
	}
	b.WriteString("; nothing was written")
	return b.String()
}

func short7(h plumbing.Hash) string { return h.String()[:7] }

// maxAncestry bounds the walks that decide whether one commit contains
// another (a repository's whole history, in practice).
const maxAncestry = 2_000_000

// Contains reports whether commit old is tip or one of its ancestors.
func (st *Store) Contains(tip, old plumbing.Hash) bool {
	return st.ContainsWithin(tip, old, maxAncestry)
}

// ContainsWithin is Contains looking at no more than limit commits: false
// may then mean "not within limit".
func (st *Store) ContainsWithin(tip, old plumbing.Hash, limit int) bool {
	if old.IsZero() || tip == old {
		return true
	}
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{tip}
	for len(queue) > 0 && len(seen) < limit {
		h := queue[0]
		queue = queue[1:]
		if h == old {
			return true
		}
		if seen[h] || h.IsZero() {
			continue
		}
		seen[h] = true
		c, err := st.ReadCommit(h)
		if err != nil {
			continue
		}
		queue = append(queue, c.Parents...)
	}
	return false
}

// MovedBackwards describes a branch now at now that lost seen.
func (st *Store) MovedBackwards(ref string, seen, now plumbing.Hash) *ErrMovedBackwards {
	e := &ErrMovedBackwards{Ref: ref, Seen: seen, Now: now, Diverged: !st.Contains(seen, now)}
	h := seen
	for !h.IsZero() && !st.Contains(now, h) {
		c, err := st.ReadCommit(h)
		if err != nil {
			break
		}
		if len(e.Dropped) < 20 {
			e.Dropped = append(e.Dropped, c)
		} else {
			e.More++
		}
		if len(c.Parents) == 0 || e.More > 1000 {
			break
		}
		h = c.Parents[0]
	}
	return e
}

// ReadAtTip reads path at the state branch's tip without the lock or the
// cache (for a command that needs one file before it locks, such as the
// config before a fetch). ErrNotExist when there is no branch or no file.
func (st *Store) ReadAtTip(path string) ([]byte, error) {
	tip, err := st.Repo.ReadRef(st.Ref)
	if err != nil {
		return nil, err
	}
	if tip.IsZero() {
		return nil, os.ErrNotExist
	}
	c, err := st.ReadCommit(tip)
	if err != nil {
		return nil, err
	}
	blob := st.blobAt(c.Tree, path)
	if blob.IsZero() {
		return nil, os.ErrNotExist
	}
	return st.objs.Read(plumbing.BlobObject, blob)
}
