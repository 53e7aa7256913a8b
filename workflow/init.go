package workflow

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// InitResult reports what init did.
type InitResult struct {
	Created      bool     // the state branch was created
	Added        []string // files added to the branch
	Commit       plumbing.Hash
	ExcludeAdded bool
	View         string
	BaseBranch   string // the base_branch written into a new config.yaml ("" when none was written)
}

// InitOptions are orch init's choices.
type InitOptions struct {
	// Example adds the files of the embedded example the branch lacks.
	Example fs.FS
	// BaseBranch is the base_branch of a new config.yaml; "" takes the
	// branch checked out here (a repository whose branch is master gets
	// base_branch: master), else main.
	BaseBranch string
}

// Init creates the state branch (idempotent). With opts.Example, the files
// of the embedded example that the branch lacks are added.
func (e *Engine) Init(opts InitOptions) (*InitResult, error) {
	example := opts.Example
	res := &InitResult{View: e.Store.View}
	base := opts.BaseBranch
	if base == "" {
		if base = e.Store.Repo.HeadBranch(); base == "" || base == strings.TrimPrefix(e.Store.Ref, "refs/heads/") {
			base = config.Default().BaseBranch
		}
	}
	if !gitrepo.ValidRefName("refs/heads/" + base) {
		return nil, &UsageError{Msg: fmt.Sprintf("--base %q is not a valid branch name", printable(base)), Next: Next{Advice: AdviseInitBase}}
	}
	// The base branch goes into the config orch writes (the default one,
	// or the example's): every task branch starts there.
	withBase := func(cfg []byte) []byte {
		res.BaseBranch = base
		return []byte(strings.Replace(string(cfg), "base_branch: main", "base_branch: "+base, 1))
	}
	snap := e.Store.Snapshot()
	var changes []gitstore.Change
	if _, ok := snap.Get(gitstore.ConfigFile); !ok && !e.Store.Exists() {
		changes = append(changes, gitstore.Change{Path: gitstore.ConfigFile, Data: withBase([]byte(config.DefaultYAML))})
	}
	if example != nil {
		err := fs.WalkDir(example, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if p != gitstore.ConfigFile && !gitstore.Mirrored(p) {
				return nil // not state (the example's scripted agents, agents/)
			}
			if _, ok := snap.Get(p); ok {
				return nil
			}
			if p == gitstore.ConfigFile && e.Store.Exists() {
				return nil
			}
			data, err := fs.ReadFile(example, p)
			if err != nil {
				return err
			}
			if p == gitstore.ConfigFile {
				data = withBase(data)
			}
			for i := range changes {
				if changes[i].Path == p {
					changes[i].Data = data
					return nil
				}
			}
			changes = append(changes, gitstore.Change{Path: p, Data: data})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	res.Created = !e.Store.Exists()
	if len(changes) > 0 {
		tr := gitstore.Trailers{{Key: gitstore.TrailerAction, Value: string(ActionInit)}, {Key: gitstore.TrailerActor, Value: e.Actor}}
		msg := tr.Message("orch: init", "Create the orch state branch.")
		if !res.Created {
			msg = tr.Message("orch: add example", "Add the example tasks.")
		}
		h, err := e.Store.Update(func(*gitstore.Snapshot) (*gitstore.CommitRequest, error) {
			return &gitstore.CommitRequest{Changes: changes, Message: msg, Author: e.Signature()}, nil
		})
		if err != nil {
			return nil, err
		}
		res.Commit = h
		for _, c := range changes {
			res.Added = append(res.Added, c.Path)
		}
		sort.Strings(res.Added)
	}
	e.loadConfig()
	if example != nil {
		if err := e.exampleBranches(base); err != nil {
			return nil, err
		}
	}
	if e.Store.View != "" {
		added, err := e.Store.ExcludeView()
		if err != nil {
			return nil, err
		}
		res.ExcludeAdded = added
		if _, err := e.Store.Reconcile(e.policy()); err != nil {
			return nil, err
		}
		// An empty tasks/ is where a person creates a task by hand.
		_ = e.Store.MakeViewDir(gitstore.TasksDir)
	}
	return res, nil
}

// exampleBranches gives each example task that names a branch one commit
// of work on it, from the base's tip (a file EXAMPLE-<id>.md), so that the
// example's submitted work has something to review, diff and land. A
// branch that exists is left alone; with no base commit there is nothing
// to start from.
func (e *Engine) exampleBranches(base string) error {
	repo := e.Store.Repo
	tip, err := repo.ReadRef("refs/heads/" + base)
	if err != nil || tip.IsZero() {
		return err
	}
	objs := gitrepo.NewObjectStore(repo.CommonDir)
	raw, err := objs.Read(plumbing.CommitObject, tip)
	if err != nil {
		return err
	}
	c, err := gitrepo.ParseCommit(raw)
	if err != nil {
		return err
	}
	rawTree, err := objs.Read(plumbing.TreeObject, c.Tree)
	if err != nil {
		return err
	}
	var made []string
	e.Store.EachSummaryIn(nil, func(s *gitstore.Summary) {
		if s.Task.Branch != "" && taskfile.ValidBranch(s.Task.Branch) && !finishedQueues[s.Task.Queue] {
			made = append(made, s.Task.ID+"\x00"+s.Task.Branch+"\x00"+s.Task.Title)
		}
	})
	sort.Strings(made)
	for _, m := range made {
		parts := strings.SplitN(m, "\x00", 3)
		id, branch, title := parts[0], parts[1], parts[2]
		ref := "refs/heads/" + branch
		if h, err := repo.ReadRef(ref); err != nil || !h.IsZero() {
			continue
		}
		entries, err := gitrepo.ParseTree(rawTree)
		if err != nil {
			return err
		}
		blob, err := objs.Write(plumbing.BlobObject, []byte("# "+title+"\n\nThe example's work on "+id+".\n"))
		if err != nil {
			return err
		}
		entries = append(entries, gitrepo.TreeEntry{Name: "EXAMPLE-" + id + ".md", Mode: gitrepo.ModeFile, Hash: blob})
		sort.Slice(entries, func(i, j int) bool { return gitrepo.CompareEntries(&entries[i], &entries[j]) < 0 })
		tree, err := objs.Write(plumbing.TreeObject, gitrepo.EncodeTree(entries))
		if err != nil {
			return err
		}
		sig := e.Signature()
		commit, err := objs.Write(plumbing.CommitObject, gitrepo.EncodeCommit(tree, []plumbing.Hash{tip}, sig, sig, id+": the example's work\n"))
		if err != nil {
			return err
		}
		if err := repo.UpdateRef(gitrepo.RefUpdate{Name: ref, New: commit, Who: e.Actor, Message: "orch init --example"}); err != nil {
			return err
		}
	}
	return nil
}
