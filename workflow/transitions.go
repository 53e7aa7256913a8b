package workflow

import (
	"fmt"
	"strings"

	"github.com/orch-tool/orch/taskfile"
)

// Transition is one row of the state machine. The table below is the only
// place the rules live: the verbs check it, and the help text, the
// generated docs and the error messages are all built from it.
type Transition struct {
	Verb    Action
	From    []taskfile.Queue // nil: any open queue
	To      []taskfile.Queue
	Who     string // who typically runs it
	Summary string
}

// Open queues, in the order the board shows them.
var openQueues = []taskfile.Queue{
	taskfile.Incoming, taskfile.Claimed, taskfile.Provisional, taskfile.Approved, taskfile.Rejected,
	taskfile.NeedsContinuation, taskfile.Blocked, taskfile.Escalated,
}

// Transitions is the state machine of docs/design.md §4.2.
var Transitions = []Transition{
	{Verb: ActionNew, From: []taskfile.Queue{}, To: []taskfile.Queue{taskfile.Incoming}, Who: "human", Summary: "create a task"},
	{Verb: ActionClaim, From: []taskfile.Queue{taskfile.Incoming, taskfile.Rejected, taskfile.NeedsContinuation, taskfile.Claimed}, To: []taskfile.Queue{taskfile.Claimed}, Who: "agent", Summary: "take the next ready task (" + ClaimOrderText() + ")"},
	{Verb: ActionSubmit, From: []taskfile.Queue{taskfile.Claimed}, To: []taskfile.Queue{taskfile.Provisional}, Who: "agent", Summary: "hand in the work on the task's branch for review"},
	{Verb: ActionApprove, From: []taskfile.Queue{taskfile.Provisional}, To: []taskfile.Queue{taskfile.Done, taskfile.Approved}, Who: "reviewer", Summary: "accept the work (with land.mode set, to approved: it lands next)"},
	{Verb: ActionLand, From: []taskfile.Queue{taskfile.Approved}, To: []taskfile.Queue{taskfile.Done, taskfile.Rejected, taskfile.Escalated}, Who: "human", Summary: "land approved work on the base branch through a checked merge (a conflict or a red check sends it back; land.max_failures escalate)"},
	{Verb: ActionCheck, From: []taskfile.Queue{taskfile.Provisional}, To: []taskfile.Queue{taskfile.Provisional, taskfile.Rejected, taskfile.Escalated}, Who: "human", Summary: "run review.check on a submission before review (orch run): red sends it back with the output, without lockout"},
	{Verb: ActionReject, From: []taskfile.Queue{taskfile.Provisional}, To: []taskfile.Queue{taskfile.Rejected, taskfile.Escalated}, Who: "reviewer", Summary: "send the work back with feedback (escalates at review.max_rejections)"},
	{Verb: ActionReview, From: []taskfile.Queue{taskfile.Provisional}, To: []taskfile.Queue{taskfile.Rejected, taskfile.Escalated, taskfile.Done, taskfile.Approved}, Who: "reviewer", Summary: "structured review: blocking issues reject, suggestions only approve with notes"},
	{Verb: ActionPause, From: []taskfile.Queue{taskfile.Claimed}, To: []taskfile.Queue{taskfile.NeedsContinuation}, Who: "agent", Summary: "stop before finishing; the note goes into the next prompt"},
	{Verb: ActionFail, From: nil, To: []taskfile.Queue{taskfile.Failed}, Who: "agent or human", Summary: "give the task up (an agent from claimed; a human from any open queue)"},
	{Verb: ActionRefuse, From: []taskfile.Queue{taskfile.Claimed}, To: []taskfile.Queue{taskfile.Blocked}, Who: "agent", Summary: "refuse with a structured, evidenced reason"},
	{Verb: ActionDecide, From: []taskfile.Queue{taskfile.Blocked}, To: []taskfile.Queue{taskfile.Claimed, taskfile.Incoming, taskfile.Blocked, taskfile.Superseded}, Who: "human", Summary: "answer a refusal: override, accept, defer, decompose, reformulate"},
	{Verb: ActionEscalate, From: []taskfile.Queue{taskfile.Incoming, taskfile.Claimed, taskfile.Provisional, taskfile.Approved, taskfile.Rejected, taskfile.NeedsContinuation, taskfile.Blocked}, To: []taskfile.Queue{taskfile.Escalated}, Who: "anyone", Summary: "ask a human to act"},
	{Verb: ActionRequeue, From: []taskfile.Queue{taskfile.Claimed, taskfile.Provisional, taskfile.Approved, taskfile.Rejected, taskfile.NeedsContinuation, taskfile.Blocked, taskfile.Escalated}, To: []taskfile.Queue{taskfile.Incoming}, Who: "human", Summary: "put the task back in incoming (claim cleared; branch, feedback and counts kept)"},
	{Verb: ActionSweep, From: []taskfile.Queue{taskfile.Claimed}, To: []taskfile.Queue{taskfile.NeedsContinuation}, Who: "human", Summary: "move claims older than claim_timeout to needs_continuation"},
	{Verb: ActionReopen, From: []taskfile.Queue{taskfile.Failed, taskfile.Done, taskfile.Superseded}, To: []taskfile.Queue{taskfile.Incoming}, Who: "human", Summary: "send a finished task back to incoming, from the archive too (branch, feedback and counts kept; the reason is noted in the task)"},
	{Verb: ActionArchive, From: []taskfile.Queue{taskfile.Done, taskfile.Failed, taskfile.Superseded}, To: nil, Who: "human", Summary: "remove a finished task's file from the state branch (history keeps it)"},
}

// agentMay reports whether an agent may use the verb on a task in q: not a
// human's verb, and fail only of a claimed task (its own claim).
func (t *Transition) agentMay(q taskfile.Queue) bool {
	switch t.Who {
	case "human":
		return false
	case "agent or human":
		return q == taskfile.Claimed
	}
	return true
}

// TransitionFor returns the row of a verb.
func TransitionFor(verb Action) *Transition {
	for i := range Transitions {
		if Transitions[i].Verb == verb {
			return &Transitions[i]
		}
	}
	return nil
}

// Allows reports whether the verb may act on a task in q.
func (t *Transition) Allows(q taskfile.Queue) bool {
	if t.From == nil {
		return q.Open()
	}
	for _, f := range t.From {
		if f == q {
			return true
		}
	}
	return false
}

// FromText is the "from" column as text.
func (t *Transition) FromText() string {
	if t.From == nil {
		return "any open queue"
	}
	if len(t.From) == 0 {
		return "(new)"
	}
	return joinQueues(t.From)
}

// ToText is the "to" column as text.
func (t *Transition) ToText() string {
	if len(t.To) == 0 {
		return "(removed)"
	}
	return joinQueues(t.To)
}

func joinQueues(qs []taskfile.Queue) string {
	s := make([]string, len(qs))
	for i, q := range qs {
		s[i] = string(q)
	}
	return strings.Join(s, ", ")
}

// LegalVerbs lists the verbs that may act on a task in q, as a person types
// them.
func LegalVerbs(q taskfile.Queue) []string {
	var out []string
	for _, t := range Transitions {
		if t.From != nil && len(t.From) == 0 {
			continue
		}
		if t.Allows(q) {
			out = append(out, string(t.Verb))
		}
	}
	return out
}

// CheckTransition returns an IllegalTransitionError unless verb may act on
// a task in q.
func CheckTransition(verb Action, id string, q taskfile.Queue) error {
	t := TransitionFor(verb)
	if t == nil {
		return fmt.Errorf("unknown verb %q", verb)
	}
	if !t.Allows(q) {
		return &IllegalTransitionError{Task: id, Queue: q, Verb: string(verb), Legal: LegalVerbs(q)}
	}
	return nil
}

// TransitionTable renders the table as markdown (for docs and help).
func TransitionTable() string {
	var b strings.Builder
	b.WriteString("| verb | from | to | who | what |\n|---|---|---|---|---|\n")
	for _, t := range Transitions {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", t.Verb, t.FromText(), t.ToText(), t.Who, t.Summary)
	}
	return b.String()
}

// TransitionHelp is the one-line rule of a verb, for its help text.
func TransitionHelp(verb Action) string {
	t := TransitionFor(verb)
	if t == nil {
		return ""
	}
	to := t.ToText()
	if i := strings.LastIndex(to, ", "); i >= 0 {
		to = to[:i] + " or " + to[i+2:] // one of them: the rules pick
	}
	return fmt.Sprintf("Moves a task from %s to %s.", t.FromText(), to)
}
