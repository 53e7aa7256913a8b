// Package gitstore keeps orch's state on a git branch, the state branch,
// and mirrors it in the view directory (.orchestrator/ in the main
// worktree) for people to read and edit by hand.
//
// The Store opens the repository and its private state (open.go),
// serialises orch processes with a lock in the git common dir (lock.go),
// loads the branch as a Snapshot (snapshot.go) with the index of every
// task's summary (index.go), commits by tree surgery, never touching an
// index or a worktree, and moves the branch with compare-and-swap
// (commit.go). On every command it reconciles the view with the branch: it
// scans the view (scan.go), walks docs/design.md §1.2's reconcile table
// (reconcile.go), commits hand edits and hand-made tasks (handedit.go),
// merges what both sides changed or marks the conflict (merge.go), and
// writes out what the branch changed (view.go) without losing a save that
// races it (viewwrite.go). It answers the workflow's
// questions about tasks from their summaries, and walks the branch's
// history (history.go). trailers.go spells the trailers that end orch's
// commit messages, and writes and reads them. orch doctor (package doctor)
// reads all of it outside the normal open; the store lends it only what is
// its own: DoctorLock (lock.go), its temp files (temps.go), and small looks
// at the view and the sync index (ViewFiles, ViewStat, ReadViewFile).
//
// It stands on three packages, which it calls and which never call it:
// gitrepo, the git plumbing (the repository, objects, refs, remotes,
// revisions); statecache, the cache of the branch's trees, the task
// summaries and the view's sync index; privfile, the files of the private
// state in <git common dir>/orch/. Callers use gitrepo's types by their
// own name (gitrepo.Repo, gitrepo.Signature, gitrepo.ErrRefMoved); task
// summaries are the store's (Summary and SummaryHeader are statecache's
// types under the store's names).
//
// The view stays here, with the Store. The reconcile commits hand edits
// through Store.Commit, and Commit writes what it committed into the view;
// both work on the same snapshot, sync index (in the state cache) and notes
// for the command to print. Apart, the view would need the Store's
// internals exported wholesale, or the two would call each other across
// packages.
package gitstore
