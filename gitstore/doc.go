// Package gitstore keeps orch's state on a git branch. It finds the
// repository from any worktree, serialises orch processes with a lock in the
// git common dir, commits by tree surgery (never touching an index or a
// worktree), moves the branch with git's own lockfile protocol and
// compare-and-swap, and keeps the view directory in step with the branch.
package gitstore
