package main

import (
	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/workflow"
)

// remoteStep is --sync (and --remote) of a verb two clones must not both do
// to one task: approve, reject, review, decide (workflow.StepSync).
type remoteStep struct {
	Sync   bool
	Remote string
}

func (r *remoteStep) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&r.Sync, "sync", false, "do it through the remote: answered once the remote's state branch holds it; refused when another clone got to the task first")
	cmd.Flags().StringVar(&r.Remote, "remote", "origin", "the remote --sync uses")
}

// run does the verb (do), then prints its answer (print) from the same
// engine: with --sync through the remote, else here as the command's kind
// says (runner.go).
func (r *remoteStep) run(g *globalOptions, verb string, do func(e *workflow.Engine) error, print func(e *workflow.Engine) printer) error {
	if !r.Sync {
		return g.run(func(e *workflow.Engine) (printer, error) {
			if err := do(e); err != nil {
				return nil, err
			}
			return print(e), nil
		})
	}
	return g.runRemote(func(opts workflow.Options) (*workflow.Engine, []string, error) {
		return workflow.StepSync(opts, syncOptionsOf(r.Remote), verb, do)
	}, print)
}

// taskStep is taskVerb with --sync: a verb whose answer is the transition.
func (r *remoteStep) taskStep(g *globalOptions, ref, verb string, fn func(e *workflow.Engine, id string) (*workflow.Result, error)) error {
	var res *workflow.Result
	return r.run(g, verb, func(e *workflow.Engine) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		res, err = fn(e, s.Task.ID)
		return err
	}, func(e *workflow.Engine) printer {
		return func(out *output) error { return out.printTransition(e, verb, res) }
	})
}

// holderSyncHelp says what --sync does for a claimant's verb.
const holderSyncHelp = `--sync does it across clones: fetch and merge the remote's state branch, do
it, push with a lease. When the remote's claim ref of the task names another
claim (another clone took the task over once your lease ran out), it is
refused (exit 4, naming the new holder) and nothing of yours is pushed.`

// stepSyncHelp says what --sync does, in the help of each verb that has it.
const stepSyncHelp = `--sync does it across clones: fetch and merge the remote's state branch, do
it, push with a lease; it is answered only once the remote holds it. When
another clone moved the remote first, it is undone here and done again on
the new state, so when another clone gave the task its verdict or decision
first, this one is refused by the usual rule (exit 4) instead of both
standing until a sync. Past two minutes of lost races it gives up (exit 5).
Refused or given up, this clone keeps what it merged from the remote (as
orch sync would) and not the step.`
