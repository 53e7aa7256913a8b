// Command orch turns a git repository into a work queue for coding agents
// and their reviewers. See README.md for its use and docs/design.md for its
// design.
//
// The package is the command line and nothing more: the rules are
// package workflow's, the storage package gitstore's, and this package
// parses flags, opens the engine as the actor, runs one verb and prints its
// answer. Its shape:
//
//   - One file per verb (claim.go, submit.go, ...): an options struct that
//     holds the verb's flags and the global options (claimOptions), newXCmd,
//     which builds the cobra command with its help text (the transition
//     rule in it comes from workflow.TransitionHelp, so help and rules never
//     disagree) and an Example whose invocations the test scripts run, and
//     runX, which calls the engine and returns the printer of the answer.
//   - root.go: the root command, the global flags (-C, --json, --agent,
//     --state-branch), who is acting and the signals it is judged by
//     (docs/design.md §5.1), and Main, which main.go calls.
//   - runner.go: every command declares its kind (read, transition,
//     interactive, remote, long, none), and one runner picks the locking
//     and retry strategy from it.
//   - errors.go: the one place where typed errors become exit codes and
//     stable error codes (docs/design.md §9); hints.go words the next step
//     a workflow error carries (workflow.Next), for every door: the command
//     line, --json, orch mcp and the board.
//   - answers.go, jsonout.go, output.go: the JSON answers, their types (from
//     which docs/schema/ is generated) and --json=FIELDS and --jq.
//   - The generated docs (docs/cli.md, docs/man/, parts of README.md and
//     docs/agents.md) come from the commands themselves: make docs rewrites
//     them, and TestDocsUpToDate fails when they are stale.
//
// Behaviour is tested end to end by the testscript scripts in
// testdata/script/, which run this binary as an agent and a person do.
package main
