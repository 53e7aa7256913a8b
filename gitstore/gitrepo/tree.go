package gitrepo

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
)

// File modes of tree entries.
const (
	ModeFile    = 0o100644
	ModeExec    = 0o100755
	ModeTree    = 0o040000
	ModeSymlink = 0o120000
)

// TreeEntry is one entry of a git tree object.
type TreeEntry struct {
	Name string
	Mode uint32
	Hash plumbing.Hash
}

// IsTree reports whether the entry is a directory.
func (e TreeEntry) IsTree() bool { return e.Mode == ModeTree }

// Tree is one tree object: its id and its entries in git order. A Tree is
// never changed once made (a changed directory is a new Tree), so that its
// entries can be shared by whoever read it.
type Tree struct {
	Hash    plumbing.Hash
	Entries []TreeEntry
}

// GitLess orders tree entries as git does: by name, with a tree's name
// compared as if it ended in '/'.
func GitLess(a string, aTree bool, b string, bTree bool) bool {
	if aTree {
		a += "/"
	}
	if bTree {
		b += "/"
	}
	return a < b
}

// CompareEntries orders tree entries as git does.
func CompareEntries(a, b *TreeEntry) int {
	switch {
	case GitLess(a.Name, a.IsTree(), b.Name, b.IsTree()):
		return -1
	case GitLess(b.Name, b.IsTree(), a.Name, a.IsTree()):
		return 1
	}
	return 0
}

// ParseTree decodes a tree object's entries.
func ParseTree(data []byte) ([]TreeEntry, error) {
	var out []TreeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("corrupt tree")
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("corrupt tree mode")
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+21 {
			return nil, fmt.Errorf("corrupt tree")
		}
		var h plumbing.Hash
		copy(h[:], data[nul+1:nul+21])
		out = append(out, TreeEntry{Name: string(data[:nul]), Mode: uint32(mode), Hash: h})
		data = data[nul+21:]
	}
	return out, nil
}

// EncodeTree encodes entries, in git order, as a tree object.
func EncodeTree(entries []TreeEntry) []byte {
	n := 0
	for _, e := range entries {
		n += len(e.Name) + 28
	}
	buf := make([]byte, 0, n)
	for _, e := range entries {
		buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
		buf = append(buf, ' ')
		buf = append(buf, e.Name...)
		buf = append(buf, 0)
		buf = append(buf, e.Hash[:]...)
	}
	return buf
}
