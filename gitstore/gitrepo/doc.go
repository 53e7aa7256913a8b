// Package gitrepo is orch's git plumbing. It finds a repository from any of
// its worktrees the way git does (Discover), and refuses one whose format
// orch cannot write before anything is written (format.go). It reads objects
// through go-git, loose and packed, and writes loose objects made durable
// with fsync, a commit's objects in one batch (ObjectStore). It moves refs
// with git's own lockfile protocol and compare-and-swap, keeping the reflog
// (refs.go), reaches remotes and worktrees through the git CLI (remote.go,
// worktree.go), resolves the revisions a person types as git rev-parse does
// (revision.go), and encodes and decodes tree and commit objects.
//
// It knows nothing of what orch keeps in git: no tasks, no state branch, no
// view, no state cache (those are package gitstore's). The one trace of orch
// here is the note beside a ref's .lock file naming the orch process that
// holds it (Repo.LockOwnerFile), which lets the next orch take over a lock a
// killed one left instead of waiting for it to grow stale.
package gitrepo
