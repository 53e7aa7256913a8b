package gitrepo

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Revisions. orch resolves the commit-ish a person or an agent types (orch
// respond --commit HEAD, abc1234, task/T-x~1) itself, on go-git's object
// storage and orch's own ref reading. go-git's Repository.ResolveRevision
// would do it, but its package pulls in go-git's transports and OpenPGP,
// which make the binary much larger and every orch process start later,
// by a large share of docs/design.md §11's budget for a verb. Its revision parser is
// internal to go-git. So the forms git rev-parse takes for a commit are read
// here, and the rest are refused by name.

// ErrRevisionNotFound is a revision that names no commit here.
type ErrRevisionNotFound struct{ Rev string }

func (e *ErrRevisionNotFound) Error() string {
	return fmt.Sprintf("%s names no commit in this repository", e.Rev)
}

// ErrAmbiguousRevision is a short hash that more than one commit starts
// with.
type ErrAmbiguousRevision struct {
	Rev     string
	Commits []plumbing.Hash
}

func (e *ErrAmbiguousRevision) Error() string {
	return fmt.Sprintf("the short hash %s is ambiguous: %d commits start with it", e.Rev, len(e.Commits))
}

// ErrUnsupportedRevision is revision syntax orch does not read.
type ErrUnsupportedRevision struct{ Rev string }

func (e *ErrUnsupportedRevision) Error() string {
	return fmt.Sprintf("%s is not a revision orch reads: use a commit hash (4+ hex digits), HEAD, a branch or a tag, optionally followed by ~N or ^N", e.Rev)
}

// ResolveRevision returns the commit a revision names, as git rev-parse
// does from this worktree, for these forms: HEAD or @ (this worktree's own
// HEAD, in a linked worktree too), ORIG_HEAD and the like; a full ref name,
// a branch, a tag or a remote-tracking branch (looked up in git's order:
// refs/, refs/tags/, refs/heads/, refs/remotes/); a full or short hash (4+
// hex digits, unique among commits); each followed by any number of ~N and
// ^N (N defaults to 1, ^0 is the commit itself). Annotated tags are peeled
// to their commit. A name that is both a ref and a short hash is the ref,
// as in git.
func (r *Repo) ResolveRevision(rev string) (plumbing.Hash, error) {
	base, steps, ok := splitRevision(rev)
	if !ok {
		return plumbing.ZeroHash, &ErrUnsupportedRevision{Rev: rev}
	}
	objs := NewObjectStore(r.CommonDir)
	h, err := r.revisionBase(objs, base)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if h.IsZero() {
		return plumbing.ZeroHash, &ErrRevisionNotFound{Rev: rev}
	}
	if h, err = peelToCommit(objs, h); err != nil {
		return plumbing.ZeroHash, err
	}
	if h.IsZero() {
		return plumbing.ZeroHash, &ErrRevisionNotFound{Rev: rev}
	}
	for _, s := range steps {
		if s.caret && s.n == 0 {
			continue // ^0: the commit itself
		}
		times, nth := s.n, 0 // ~N: the first parent, N times
		if s.caret {
			times, nth = 1, s.n-1 // ^N: the Nth parent
		}
		for i := 0; i < times; i++ {
			parents, err := commitParents(objs, h)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if nth >= len(parents) {
				return plumbing.ZeroHash, &ErrRevisionNotFound{Rev: rev}
			}
			h = parents[nth]
		}
	}
	return h, nil
}

type revStep struct {
	caret bool // ^N (the Nth parent) rather than ~N (N first parents)
	n     int
}

// splitRevision splits "base~2^2" into its base and parent steps.
func splitRevision(rev string) (string, []revStep, bool) {
	i := strings.IndexAny(rev, "~^")
	if i < 0 {
		i = len(rev)
	}
	base, rest := rev[:i], rev[i:]
	if strings.ContainsAny(base, ":{} \t\n\\") || strings.Contains(base, "@{") || strings.Contains(base, "..") {
		return "", nil, false
	}
	var steps []revStep
	for rest != "" {
		s := revStep{caret: rest[0] == '^'}
		rest = rest[1:]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		s.n = 1
		if j > 0 {
			n, err := strconv.Atoi(rest[:j])
			if err != nil || n > 1_000_000 {
				return "", nil, false
			}
			s.n = n
		}
		rest = rest[j:]
		if rest != "" && rest[0] != '~' && rest[0] != '^' {
			return "", nil, false
		}
		steps = append(steps, s)
	}
	return base, steps, true
}

var specialHeads = map[string]bool{"HEAD": true, "ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true, "CHERRY_PICK_HEAD": true, "REVERT_HEAD": true}

// revisionBase resolves the part before the ~ and ^ steps (ZeroHash:
// nothing by that name).
func (r *Repo) revisionBase(objs *ObjectStore, base string) (plumbing.Hash, error) {
	if base == "" || base == "@" {
		base = "HEAD"
	}
	if specialHeads[base] {
		return r.readHeadFile(base)
	}
	if len(base) == 2*len(plumbing.ZeroHash) && isHex(base) {
		h := plumbing.NewHash(strings.ToLower(base))
		if !objs.Has(h) {
			return plumbing.ZeroHash, nil
		}
		return h, nil
	}
	for _, name := range []string{base, "refs/" + base, "refs/tags/" + base, "refs/heads/" + base, "refs/remotes/" + base, "refs/remotes/" + base + "/HEAD"} {
		if !strings.HasPrefix(name, "refs/") || !ValidRefName(name) {
			continue
		}
		if h, err := r.ReadRef(name); err == nil && !h.IsZero() {
			return h, nil
		}
	}
	if len(base) >= 4 && isHex(base) {
		commits := commitsWithPrefix(objs, strings.ToLower(base))
		switch len(commits) {
		case 0:
			return plumbing.ZeroHash, nil
		case 1:
			return commits[0], nil
		}
		return plumbing.ZeroHash, &ErrAmbiguousRevision{Rev: base, Commits: commits}
	}
	return plumbing.ZeroHash, nil
}

// readHeadFile reads HEAD and its kin from this worktree's git dir: a
// symbolic ref is followed, a hash taken as it is.
func (r *Repo) readHeadFile(name string) (plumbing.Hash, error) {
	b, err := os.ReadFile(filepath.Join(r.GitDir, name))
	if errors.Is(err, os.ErrNotExist) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if target, ok := strings.CutPrefix(line, "ref: "); ok {
		return r.ReadRef(strings.TrimSpace(target))
	}
	if len(line) >= 40 && plumbing.IsHash(line[:40]) {
		return plumbing.NewHash(line[:40]), nil
	}
	return plumbing.ZeroHash, nil
}

// objectType returns the type of an object (loose or packed).
func objectType(objs *ObjectStore, h plumbing.Hash) (plumbing.ObjectType, error) {
	obj, err := objs.gogit().EncodedObject(plumbing.AnyObject, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return plumbing.InvalidObject, &ErrObjectMissing{Hash: h}
	}
	if err != nil {
		return plumbing.InvalidObject, err
	}
	return obj.Type(), nil
}

// peelToCommit follows annotated tags to the commit they name; ZeroHash
// when h is another kind of object.
func peelToCommit(objs *ObjectStore, h plumbing.Hash) (plumbing.Hash, error) {
	for depth := 0; depth < 16; depth++ {
		t, err := objectType(objs, h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch t {
		case plumbing.CommitObject:
			return h, nil
		case plumbing.TagObject:
			raw, err := objs.Read(plumbing.TagObject, h)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			first, _, _ := bytes.Cut(raw, []byte("\n"))
			target, ok := bytes.CutPrefix(first, []byte("object "))
			if !ok || !plumbing.IsHash(string(target)) {
				return plumbing.ZeroHash, fmt.Errorf("tag %s names no object", h)
			}
			h = plumbing.NewHash(string(target))
		default:
			return plumbing.ZeroHash, nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("tag %s: too many levels of tags", h)
}

func commitParents(objs *ObjectStore, h plumbing.Hash) ([]plumbing.Hash, error) {
	raw, err := objs.Read(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	c, err := ParseCommit(raw)
	if err != nil {
		return nil, err
	}
	return c.Parents, nil
}

// commitsWithPrefix lists the commits (and tags of commits) whose hash
// starts with the hex prefix, through go-git's index of loose and packed
// objects.
func commitsWithPrefix(objs *ObjectStore, prefix string) []plumbing.Hash {
	b, err := hex.DecodeString(prefix[:len(prefix)&^1])
	if err != nil {
		return nil
	}
	hashes, err := objs.gogit().HashesWithPrefix(b)
	if err != nil {
		return nil
	}
	var out []plumbing.Hash
	for _, h := range hashes {
		if !strings.HasPrefix(h.String(), prefix) {
			continue
		}
		if c, err := peelToCommit(objs, h); err == nil && !c.IsZero() {
			out = append(out, h)
		}
	}
	return out
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
