// Package workflow is orch's domain: the queues and the transitions between
// them, and the rules every verb applies on the state branch (docs/design.md §4, §5,
// §6). It never prints, exits or parses flags; it returns typed errors that
// cmd/orch maps to exit codes and hints. Storage is gitstore's; the task
// file's format is taskfile's; config.yaml is package config; the refusal
// record and its validator are package refusal; orch doctor is package
// doctor; orch run's process supervision is package coordinator.
//
// Where each rule lives:
//
//	the transition table (data)         transitions.go
//	running a verb: a change, one commit  apply.go (transition, step, the fence check)
//	the engine: open, reconcile, find   engine.go; taskindex.go (what rules read)
//	claim: eligibility, the claim       claim.go
//	claim order                         claimorder.go
//	the task's branch                   branch.go
//	leases, heartbeat, sweep            lease.go; claims across clones: claimrefs.go
//	submit, approve, pause, fail,       lifecycle.go
//	  reopen, requeue, archive
//	reject, lockout, unlock             reject.go
//	escalation: all its triggers        escalation.go (max_rejections, deadlock,
//	                                      no progress; orch run's crashes)
//	authority: kinds of actor, human    authority.go (who may act, review
//	  verbs, claimants, reviewers         authority and scope)
//	the structured review loop, respond review.go
//	refusal, and decisions on it        refuse.go, decide.go
//	orch run: review claims, fencing,   run.go
//	  a run that ended without a transition
//	hand edits: orch-owned fields       handedit.go
//	new, list, edit, check, log, init   new.go, list.go, edit.go, check.go, log.go, init.go
//	inbox, stats, prime, prompt         inbox.go, stats.go, prime.go, prompt.go
//	events (typed) and their data       events.go, eventdata.go
//	the one limit on text               text.go
//	GitHub reviews (pr poll, import)    pr.go
//	worktrees                           worktree.go
//	sync, --sync steps                  sync.go, syncrun.go, stepsync.go
//	task fields (custom keys)           fields.go
//	errors                              errors.go
//	what a refused caller can do next   next.go (Next: an Advice and its facts;
//	                                      cmd/orch/hints.go words it)
package workflow
