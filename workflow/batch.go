package workflow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/orch-tool/orch/gitstore"
)

// Batch makes one verb's change to several tasks in one commit of the
// state branch: all of them or none. do runs the verb on one task, as it
// would alone (its checks of who acts and of its text run then); the
// changes it would commit are gathered instead, and each is then built
// through the same rules (step), on the tip as the tasks before it in the
// batch leave it. The first that a rule refuses refuses the batch, as a
// *BatchError naming it, and nothing is committed. With dryRun, every rule
// runs and nothing is committed either: the results say what would happen
// (their Commit is zero).
func (e *Engine) Batch(verb Action, ids []string, dryRun bool, do func(id string) (*Result, error)) ([]*Result, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	if e.batching != nil {
		return nil, errors.New("internal error: a batch inside a batch")
	}
	seen := map[string]bool{}
	var uniq []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	var pending []pendingChange
	e.batching = &pending
	for i, id := range uniq {
		_, err := do(id)
		if err != nil {
			e.batching = nil
			return nil, &BatchError{Task: id, N: i + 1, Of: len(uniq), Verb: verb, Err: err}
		}
	}
	e.batching = nil
	results := make([]*Result, len(pending))
	h, err := e.Store.Update(func(snap *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		var changes []gitstore.Change
		var lines, done []string
		bodies := make([]string, len(pending))
		var trailers gitstore.Trailers
		var before []func() error
		for i, p := range pending {
			built, err := e.build(snap, changes, p)
			if err != nil {
				return nil, &BatchError{Task: p.id, N: i + 1, Of: len(pending), Verb: verb, Err: err}
			}
			if built == nil {
				results[i] = nil // nothing to do for this one
				continue
			}
			changes = built.changes
			results[i] = &Result{From: built.from, To: built.to}
			bodies[i] = built.c.body
			line := p.id + ": " + string(p.verb)
			if built.from != built.to {
				line = fmt.Sprintf("%s: %s -> %s", p.id, built.from, built.to)
			}
			if b := strings.TrimSpace(built.c.body); b != "" {
				line += ". " + firstSentence(b)
			}
			lines = append(lines, line)
			done = append(done, p.id)
			for _, t := range built.c.trailers {
				if !containsTrailer(trailers, t) {
					trailers = append(trailers, t)
				}
			}
			if built.c.beforeRef != nil {
				before = append(before, built.c.beforeRef)
			}
		}
		if dryRun || len(done) == 0 {
			return nil, nil
		}
		var msg string
		if len(done) == 1 {
			// One task: the commit a verb on it alone makes.
			for i, r := range results {
				if r != nil {
					from, to := r.From, r.To
					if from == to {
						from, to = "", ""
					}
					msg = commitMessage(pending[i].id, pending[i].verb, from, to, e.Actor, bodies[i], trailers)
				}
			}
		} else {
			tr := gitstore.Trailers{{Key: gitstore.TrailerAction, Value: string(verb)}, {Key: gitstore.TrailerTasks, Value: strings.Join(done, " ")},
				{Key: gitstore.TrailerActor, Value: e.Actor}}
			tr = append(tr, trailers...)
			msg = tr.Message(fmt.Sprintf("orch: %s %s", verb, plural(len(done), "task")), strings.Join(lines, "\n"))
		}
		req := &gitstore.CommitRequest{Changes: changes, Message: msg, Author: e.Signature()}
		if len(before) > 0 {
			req.BeforeRef = func() error {
				for _, f := range before {
					if err := f(); err != nil {
						return err
					}
				}
				return nil
			}
		}
		return req, nil
	})
	if err != nil {
		return nil, err
	}
	var out []*Result
	for i, r := range results {
		if r == nil {
			continue
		}
		r.Commit = h
		r.Task = e.Store.SummaryByID(pending[i].id)
		if r.Task == nil {
			r.Task, _ = e.ArchivedByID(pending[i].id) // archive moved it there
		}
		out = append(out, r)
	}
	return out, nil
}

func containsTrailer(tr gitstore.Trailers, t gitstore.Trailer) bool {
	for _, x := range tr {
		if x == t {
			return true
		}
	}
	return false
}

// plural is "1 task", "3 tasks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// BatchError is the refusal of one task of a batch (Engine.Batch), which
// refuses the whole batch: nothing changed. Its Err is what the verb on
// that task alone would have answered (and decides the exit code).
type BatchError struct {
	Task  string
	N, Of int // the task's place in the batch
	Verb  Action
	Err   error
}

func (b *BatchError) Error() string {
	return fmt.Sprintf("%s (%d of %d): %v; nothing was changed: %s is all the tasks or none", b.Task, b.N, b.Of, b.Err, b.Verb)
}

func (b *BatchError) Unwrap() error { return b.Err }
