package gitstore

import "strings"

// Every commit orch makes on the state branch ends with trailers, git's
// "Key: value" lines, which orch log, claim refs and anyone with git log
// read (docs/design.md §3.3). This file is the one place their keys are spelled, and
// the one encoder and decoder of the message around them.

// The trailer keys.
const (
	TrailerTask   = "Orch-Task"   // the task the commit changes
	TrailerAction = "Orch-Action" // the verb (workflow.Action) or what else made the commit: init, edit, sync
	TrailerFrom   = "Orch-From"   // the queue the task left
	TrailerTo     = "Orch-To"     // the queue the task went to
	TrailerActor  = "Orch-Actor"  // who acted
	// What a verb adds.
	TrailerAttempt    = "Orch-Attempt"     // claim, heartbeat: the claim's attempt
	TrailerLeaseUntil = "Orch-Lease-Until" // claim, heartbeat: when the lease ends
	TrailerClaimedAt  = "Orch-Claimed-At"  // claim, heartbeat: when the claim was made (with the actor and the attempt, it names the claim)
	TrailerVerdict    = "Orch-Verdict"     // approve, review
	TrailerRound      = "Orch-Round"       // reject, review: the feedback round
	TrailerLockedOut  = "Orch-Locked-Out"  // reject, review: the author the rejection locked out
	TrailerUnlocked   = "Orch-Unlocked"    // unlock, approve, review: whom it let back in
	TrailerGround     = "Orch-Ground"      // a scoped reviewer's review: what put the task in its scope
	TrailerIssue      = "Orch-Issue"       // respond: the issue answered
	TrailerReason     = "Orch-Reason"      // refuse, decide: the refusal's reason
	TrailerDecision   = "Orch-Decision"    // decide
	TrailerCreated    = "Orch-Created"     // decide: the tasks it created, space-separated
	TrailerArchived   = "Orch-Archived"    // archive_after: the tasks a batch moved to the archive, space-separated
	TrailerTasks      = "Orch-Tasks"       // a verb on several tasks at once (Engine.Batch): the tasks, space-separated
	TrailerVerb       = "Orch-Verb"        // authority.refused: the verb refused
	TrailerRemote     = "Orch-Remote"      // sync: the remote merged
	TrailerVia        = "Orch-Via"         // orch run: a step the coordinator took for an agent's run
	TrailerRunEnd     = "Orch-Run-End"     // orch run: how the agent's run ended (crash, timeout, ...)
)

// The actions of the commits the store makes itself, for hand edits in the
// view: a task a person created, and an edit. workflow.Action names them
// too (ActionNew, ActionEdit).
const (
	ActionNew  = "new"
	ActionEdit = "edit"
)

// Trailer is one "Key: value" line.
type Trailer struct {
	Key, Value string
}

// Trailers are a commit's trailer lines, in the order they are written.
type Trailers []Trailer

// Add appends a trailer.
func (t *Trailers) Add(key, value string) {
	*t = append(*t, Trailer{key, value})
}

// Get returns the value of key: the last one when it is repeated (git's
// reading), "" when it is absent.
func (t Trailers) Get(key string) string {
	for i := len(t) - 1; i >= 0; i-- {
		if t[i].Key == key {
			return t[i].Value
		}
	}
	return ""
}

// Message is a commit message: the subject, the body unless it is blank,
// and the trailers, each paragraph ending in a blank line but the last. A
// line break in a value would end its trailer, so it is written as a space.
func (t Trailers) Message(subject, body string) string {
	var b strings.Builder
	b.WriteString(subject + "\n\n")
	if body = strings.TrimSpace(body); body != "" {
		b.WriteString(body + "\n\n")
	}
	for _, tr := range t {
		b.WriteString(tr.Key + ": " + lineBreaks.Replace(tr.Value) + "\n")
	}
	return b.String()
}

var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// ParseTrailers reads the trailers of a commit message: the lines of its
// last paragraph, when every one of them is a "Key: value" line (nil
// otherwise, as for a commit someone made by hand).
func ParseTrailers(msg string) Trailers {
	msg = strings.TrimRight(msg, "\n ")
	i := strings.LastIndex(msg, "\n\n")
	if i < 0 {
		return nil
	}
	var out Trailers
	for _, line := range strings.Split(msg[i+2:], "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || strings.ContainsAny(k, " \t") {
			return nil
		}
		out.Add(k, strings.TrimSpace(v))
	}
	return out
}
