// Package config is config.yaml, orch's settings on the state branch: its
// model (Config and the policies it holds: review limits, the reviewers and
// the scope of each, the agent roster, the people, claim_arbiter), the text
// orch init writes (DefaultYAML), and the strict parser that refuses
// unknown keys and bad values with the line they are on (Parse).
//
// It reads and describes the file, nothing more. It does not find, load or
// commit config.yaml (workflow does, from the state branch), and it does
// not apply the rules the settings feed: judging an actor an agent or a
// human, refusing a reviewer outside its scope and arbitrating claims are
// workflow's.
package config
