package workflow

// Orch-owned fields change only through verbs (DESIGN §2). A hand edit (in
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

// verbsFor says which verbs make the changes a hand edit tried (to an
// agent, none of a human's: it is told to ask one).
func (e *Engine) verbsFor(fields []string, edited *taskfile.File, id string) string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
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
				add("a reviewer or a human moves it to " + string(q) + " (orch escalate " + id + " -m \"...\" asks one)")
			default:
				add(fmt.Sprintf("orch %s %s moves it to %s", verb, id, q))
			}
		case taskfile.KeyClaimedBy, taskfile.KeyClaimedAt:
			add("orch claim --task " + id + " claims it")
		case taskfile.KeyHeartbeatAt:
			add("orch heartbeat " + id + " renews the claimant's lease")
		case taskfile.KeyLockedOut:
			add("a human lifts a lockout")
		case taskfile.KeyPRNumber:
			add("orch submit " + id + " --pr N records its pull request")
		}
	}
	if len(out) == 0 {
		return "orch keeps them itself"
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
		path, strings.Join(changed, ", "), e.verbsFor(changed, rf, id)), nil
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
