// Package coordinator is the process side of orch run (docs/design.md §7):
// it keeps the slots of config.yaml's run: section busy, starts each agent
// or reviewer in its task's worktree under a supervisor, watches it, and
// records how its run ended. The rules it needs are the verbs' own: it
// reaches orch's state only through its Queue, whose implementation
// (engineQueue, engine.go) opens workflow's Engine for each call, as the
// slot's agent for the agent's claim and lease and as the lead for what
// the coordinator does about a run its agent left. It never holds the
// store's lock while an agent runs.
//
// Where each part lives:
//
//	the slots, resolved from run: (presets, patterns) config.go, run.go
//	the loop: recover, run, drain, stop               coordinator.go
//	a slot's turn: fill, start, watch, finish, kill   slots.go
//	the coordinator's own work: review.check, landing house.go
//	how a run that ended without a transition is      endings.go (with package
//	  read: crash, timeout, limit, broken setup       harness: the CLI's own output)
//	the Queue over workflow's Engine                  engine.go
//	starting an agent, its output, its capped log     proc.go, proc_linux.go, proc_other.go
//	the supervisor (orch __supervise): process        shim.go
//	  group, parent death, subreaper on Linux
//	this coordinator's state file; a dead one's       runstate.go
//	  runs given back at the next start
//	the logs of a task's runs (orch logs)             logs.go
//	the events' kinds and the keys each fills; the    events.go
//	  end-of-run summary
//	run.notify: the lead's command on what needs a    notify.go
//	  person (escalated, slot stopped, idle)
//
// Package harness (coordinator/harness) reads the structured output of the
// coding-agent CLIs (Claude Code's stream-json, codex exec --json) and
// plain text: what the log shows of each line, and what ended a run.
//
// Most of the package builds on unix only: it relies on process groups and
// signals.
package coordinator
