package workflow

// Orch-owned fields change only through verbs (docs/design.md §1.3). A hand edit (in
// the view, with orch edit, with orch edit --from) that changes one is
// never committed as a plain edit: in the view the field keeps the branch's
// value and the person's other edits are committed, with a note naming the
// verb that makes the change; orch edit refuses it (exit 4) and keeps the
// typed text. Otherwise an agent could finish its own task by writing
// queue: done, or a stale copy could undo a claim.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/taskfile"
)

// protectedFields are the orch-owned fields the actor may not change by
// hand. A human may still set branch and pr_number (fixing a bad branch
// name, pointing a task at its pull request).
func (e *Engine) protectedFields() []string {
	if !e.IsHuman() {
		return taskfile.OrchOwned
	}
	return slices.DeleteFunc(slices.Clone(taskfile.OrchOwned), func(k string) bool {
		return k == taskfile.KeyBranch || k == taskfile.KeyPRNumber
	})
}

// handChangedFields lists the protected fields edited changes against cur.
func (e *Engine) handChangedFields(edited, cur *taskfile.File) []string {
	var out []string
	for _, k := range e.protectedFields() {
		if !taskfile.SameField(edited, cur, k) {
			out = append(out, k)
		}
	}
	return out
}

// stepsFor says which verbs make the changes a hand edit tried (to an
// agent, none of a human's: it is told to ask one), one step each.
func (e *Engine) stepsFor(fields []string, edited *taskfile.File, id string) []Next {
	var out []Next
	add := func(n Next) {
		if !slices.ContainsFunc(out, func(o Next) bool { return o.Advice == n.Advice && o.Queue == n.Queue }) {
			out = append(out, n)
		}
	}
	for _, k := range fields {
		switch k {
		case taskfile.KeyQueue:
			q := taskfile.Queue(edited.Task.Queue)
			var verb Action
			for _, t := range Transitions {
				if slices.Contains(t.To, q) && (verb == "" || t.Verb == ActionApprove || t.Verb == ActionRequeue) {
					verb = t.Verb
				}
			}
			switch t := TransitionFor(verb); {
			case t == nil:
			case !e.IsHuman() && (t.Who == "reviewer" || !t.agentMay(taskfile.Claimed)):
				add(Next{Advice: AdviseStepAskToMove, Task: id, Queue: q})
			default:
				add(Next{Advice: AdviseStepMove, Task: id, Verb: verb, Queue: q})
			}
		case taskfile.KeyClaimedBy, taskfile.KeyClaimedAt:
			add(Next{Advice: AdviseStepClaim, Task: id})
		case taskfile.KeyHeartbeatAt:
			add(Next{Advice: AdviseStepHeartbeat, Task: id})
		case taskfile.KeyLockedOut:
			add(Next{Advice: AdviseStepLockout})
		case taskfile.KeyPRNumber:
			add(Next{Advice: AdviseStepPR, Task: id})
		}
	}
	return out
}

// stepsText words steps for the note a reconcile leaves when it keeps a
// hand edit of orch-owned fields out: content, like every note. An error's
// hint says the same through cmd/orch's words for AdviseOwnedFields.
func stepsText(steps []Next) string {
	if len(steps) == 0 {
		return "orch keeps them itself"
	}
	out := make([]string, len(steps))
	for i, n := range steps {
		switch n.Advice {
		case AdviseStepAskToMove:
			out[i] = "a reviewer or a human moves it to " + string(n.Queue) + " (orch escalate " + n.Task + " -m \"...\" asks one)"
		case AdviseStepMove:
			out[i] = fmt.Sprintf("orch %s %s moves it to %s", n.Verb, n.Task, n.Queue)
		case AdviseStepClaim:
			out[i] = "orch claim --task " + n.Task + " claims it"
		case AdviseStepHeartbeat:
			out[i] = "orch heartbeat " + n.Task + " renews the claimant's lease"
		case AdviseStepLockout:
			out[i] = "a human lifts a lockout"
		case AdviseStepPR:
			out[i] = "orch submit " + n.Task + " --pr N records its pull request"
		}
	}
	return strings.Join(out, "; ")
}

// keepOrchFields is the reconcile's rule for a hand edit of a task in the
// view: result (what would be committed) with the protected fields as the
// branch has them, and a note saying what was kept out and why.
func (e *Engine) keepOrchFields(path string, result, branch []byte) ([]byte, string, error) {
	rf, err := taskfile.Parse(path, result)
	if err != nil {
		return result, "", nil
	}
	bf, err := taskfile.Parse(path, branch)
	if err != nil {
		return result, "", nil
	}
	changed := e.handChangedFields(rf, bf)
	if len(changed) == 0 {
		return result, "", nil
	}
	out := rf
	for _, k := range changed {
		if out, err = taskfile.TakeField(out, bf, k); err != nil {
			return nil, "", err
		}
	}
	id := bf.Task.ID
	return out.Src, fmt.Sprintf("%s: your edit of %s was not applied (orch-owned fields change only through verbs: %s); your other edits are committed",
		path, strings.Join(changed, ", "), stepsText(e.stepsFor(changed, rf, id))), nil
}

// editBase finds the version of a task file a copy was made from (orch edit
// --from): the newest version in the path's recent history whose orch-owned
// fields are the copy's. nil when none is (the copy is then merged from the
// current version, and any orch-owned field it changes is refused).
func (e *Engine) editBase(path string, copy *taskfile.File) *taskfile.File {
	var found *taskfile.File
	_ = e.Store.PathHistory(path, 500, func(blob plumbing.Hash) bool {
		data, err := e.Store.Snapshot().ReadBlob(blob)
		if err != nil {
			return true
		}
		f, err := taskfile.Parse(copy.Path, data)
		if err != nil {
			return true
		}
		for _, k := range taskfile.OrchOwned {
			if !taskfile.SameField(f, copy, k) {
				return true
			}
		}
		found = f
		return false
	})
	return found
}
