package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// The verbs a person uses to clear up after a bad night (requeue, unlock,
// fail, escalate, archive, reopen) take several IDs, or a selection
// (--queue, --label), and make every change in one commit of the state
// branch (workflow.Engine.Batch): all of them or, when a rule refuses one,
// none. --dry-run runs every rule and commits nothing. Their answer is one
// shape whatever the number of tasks: a list of results.

// bulkOptions are the flags every bulk verb takes.
type bulkOptions struct {
	Queues []string
	Labels []string
	DryRun bool
}

func addBulkFlags(cmd *cobra.Command, b *bulkOptions) {
	cmd.Flags().StringArrayVarP(&b.Queues, "queue", "q", nil, "also every task in this queue (repeatable)")
	cmd.Flags().StringArrayVar(&b.Labels, "label", nil, "only tasks with this label (repeatable: every one)")
	cmd.Flags().BoolVar(&b.DryRun, "dry-run", false, "check every rule, say what would change, and commit nothing")
}

// bulkAnswer is the JSON answer of a bulk verb: whether it was a dry run,
// the one commit (empty for a dry run), and each task's result.
type bulkAnswer struct {
	DryRun  bool             `json:"dry_run"`
	Commit  string           `json:"commit"`
	Results []transitionJSON `json:"results"`
}

// bulkVerb runs verb on the tasks refs and the selection name, in one
// commit. keep narrows a selection (not the IDs given) to the tasks the
// verb applies to; archived lets IDs name archived tasks (reopen).
func (g *globalOptions) bulkVerb(verb string, refs []string, b *bulkOptions, archived bool, keep func(*gitstore.Summary) bool,
	do func(e *workflow.Engine, id string) (*workflow.Result, error)) error {
	if len(refs) == 0 && len(b.Queues)+len(b.Labels) == 0 {
		return &workflow.UsageError{Msg: "name the tasks: one or more IDs, or --queue Q / --label L", Hint: "orch " + verb + " --help shows the forms"}
	}
	qs, err := parseQueues(b.Queues)
	if err != nil {
		return err
	}
	g.dryRun = b.DryRun
	return g.run(func(e *workflow.Engine) (printer, error) {
		var ids []string
		for _, ref := range refs {
			var s *gitstore.Summary
			var err error
			if archived {
				s, _, err = e.LookupArchived(ref)
			} else {
				s, err = e.Lookup(ref)
			}
			if err != nil {
				return nil, err
			}
			ids = append(ids, s.Task.ID)
		}
		if len(qs)+len(b.Labels) > 0 {
			f := workflow.ListFilter{Queues: qs, Labels: b.Labels, Sort: "id"}
			if len(qs) == 0 {
				f.Queues = fromQueues(workflow.Action(verb))
			}
			sel, err := e.List(f)
			if err != nil {
				return nil, err
			}
			matched := 0
			for _, s := range sel {
				if keep == nil || keep(s) {
					ids = append(ids, s.Task.ID)
					matched++
				}
			}
			if matched == 0 && len(refs) == 0 {
				return nil, &workflow.NotFoundError{What: "task", Ref: selectionText(b), Hint: "orch list " + selectionText(b) + " shows what it holds"}
			}
		}
		res, err := e.Batch(workflow.Action(verb), ids, b.DryRun, func(id string) (*workflow.Result, error) { return do(e, id) })
		var be *workflow.BatchError
		if errors.As(err, &be) && len(ids) > 1 {
			return nil, &hinted{err, fmt.Sprintf("nothing was changed; leave %s out (or fix what the message says) and run it again", be.Task)}
		}
		if err != nil {
			return nil, err
		}
		return func(out *output) error { return out.printBulk(e, verb, b.DryRun, res) }, nil
	})
}

// fromQueues are the queues a verb takes tasks from (nil: any).
func fromQueues(verb workflow.Action) []taskfile.Queue {
	if t := workflow.TransitionFor(verb); t != nil && t.From != nil {
		return t.From
	}
	return nil
}

func selectionText(b *bulkOptions) string {
	var parts []string
	for _, q := range b.Queues {
		parts = append(parts, "--queue "+q)
	}
	for _, l := range b.Labels {
		parts = append(parts, "--label "+l)
	}
	return strings.Join(parts, " ")
}

// printBulk reports a bulk verb's results: a line a task, then the commit.
func (o *output) printBulk(e *workflow.Engine, verb string, dryRun bool, res []*workflow.Result) error {
	commit := ""
	if len(res) > 0 && !dryRun {
		commit = res[0].Commit.String()
	}
	if o.g.JSON {
		a := bulkAnswer{DryRun: dryRun, Commit: commit, Results: []transitionJSON{}}
		for _, r := range res {
			t := o.g.transition(e, r)
			if dryRun {
				t.Commit = ""
			}
			a.Results = append(a.Results, t)
		}
		return o.writeJSON(a)
	}
	for _, r := range res {
		id := ""
		if r.Task != nil {
			id = r.Task.Task.ID
		}
		switch {
		case verb == string(workflow.ActionArchive) && dryRun:
			fmt.Fprintf(o.Out, "%s: would be archived\n", id)
		case verb == string(workflow.ActionArchive):
			fmt.Fprintf(o.Out, "%s archived (%s)\n", id, short(r.Commit))
		case r.From != r.To:
			fmt.Fprintf(o.Out, "%s: %s -> %s\n", id, r.From, r.To)
		default:
			fmt.Fprintf(o.Out, "%s: %s (%s)\n", id, verb, r.To)
		}
	}
	n := len(res)
	tasks := "1 task"
	if n != 1 {
		tasks = fmt.Sprintf("%d tasks", n)
	}
	switch {
	case dryRun:
		fmt.Fprintf(o.g.io.Err, "dry run: %s would change; nothing was committed\n", tasks)
	case n > 1:
		fmt.Fprintf(o.g.io.Err, "%s in one commit (%s)\n", tasks, short(res[0].Commit))
	}
	return nil
}

// lockedOutOf keeps the tasks that lock agent out (unlock's selection).
func lockedOutOf(agent string) func(*gitstore.Summary) bool {
	return func(s *gitstore.Summary) bool { return slices.Contains(s.Task.LockedOut, agent) }
}
