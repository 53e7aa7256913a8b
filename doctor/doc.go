// Package doctor is orch doctor: what can go wrong with orch's state in a
// repository, found without the normal open path (which takes the lock,
// trusts the cache and reconciles the view), and, when asked, repaired.
// Looking changes nothing. Repairing removes what a killed process left
// behind, rebuilds a cache that cannot be trusted, creates a missing state
// branch from a remote, and then runs the normal open (lock, load,
// reconcile); it never picks a side in a conflict and never touches
// anyone's worktree. A state branch that moved backwards is put back or
// accepted only when a person asks (Options.RestoreTip, AcceptRewind).
//
// Run and the repairs are in doctor.go, the checks in checks.go, and what
// they read of the store in checkup.go: the ref locks, the tip's trees from
// the objects, the state cache as it lies on disk (statecache), the view
// file by file. gitstore lends only what is the store's own (its lock, its
// temp files, the view's stat data and reads).
//
// It is not a rule of the work queue: it repairs through workflow's normal
// open (workflow.Open), and it holds no policy of its own. Choosing claim refs as the arbiter (orch
// doctor --migrate-claims) changes config.yaml and is workflow's
// (Engine.MigrateClaims).
package doctor
