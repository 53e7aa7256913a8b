// Package e2e holds orch's multi-process tests: the orch binary, built once
// by TestMain, run as many real processes at once from linked worktrees of
// real repositories, beside git CLI processes that commit, pack refs, gc and
// update refs. The tests check the invariants of docs/design.md §1.5 and §11: no lost
// commit, no duplicate, one linear state branch, `git fsck` clean, no
// worktree or index touched.
//
// `go test ./e2e` runs the races small (the same checks over fewer
// processes and tasks); `ORCH_E2E_FULL=1 go test ./e2e`, which make test and
// so CI run, runs them at full size. The reusable parts (repositories, worktrees, running N
// processes at once, background git loops, fsck and status checks) are in
// helpers_test.go.
package e2e
