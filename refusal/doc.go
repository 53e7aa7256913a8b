// Package refusal is the Agent Rejection Protocol
// (protocols/agent-refusal-protocol.md) as orch implements it: the record an
// agent files to refuse a task (Record), its strict reader (Parse), the
// protocol's validator (Validate), and the director's default decision per
// reason (DefaultDecision).
//
// It is pure: no git, no CLI, no task state. It does not decide whether an
// agent may refuse a given task, check the record against the command that
// files it, apply the limit on the texts orch writes down, record the
// refusal or act on a decision: those are workflow's (Engine.Refuse,
// Engine.CheckRefusalIdentity, Engine.Decide).
package refusal
