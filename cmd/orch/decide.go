package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/workflow"
)

type decideOptions struct {
	g    *globalOptions
	Text string
	Auto bool
	step remoteStep
}

func newDecideCmd(g *globalOptions) *cobra.Command {
	o := &decideOptions{g: g}
	cmd := &cobra.Command{
		Use:   "decide ID (override|accept|defer|decompose|reformulate | --auto) [-m TEXT]",
		Short: "Answer an agent's refusal",
		Long: `Decide what happens to a refused (blocked) task. ` + workflow.TransitionHelp("decide") + `

  override     back to the agent that refused (claimed), with -m TEXT in its next prompt
  accept       the refusal stands; the task stays blocked, the decision is recorded
  defer        create the blocker / dependency / clarification task and put the
               original behind it (incoming, depends_on); a MISSING_DEPENDENCY
               that names an existing task ID depends on that task
  decompose    create the refusal's alternative tasks, each depending on the
               previous where it says it requires it; the original is superseded
  reformulate  create the reformulated task from the suggested alternative;
               the original is superseded

--auto takes the protocol's default: BLOCKER, MISSING_DEPENDENCY and
UNCLEAR_REQUIREMENTS defer; SCOPE_CREEP decomposes; INFEASIBLE reformulates.

` + stepSyncHelp,
		Example: `  orch decide T-8rjy5d --auto
  orch decide T-8rjy5d override -m "The credentials are in the vault under ci/staging"
  orch decide T-8rjy5d decompose
  orch decide T-8rjy5d --auto --sync`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.Auto {
				return exactArgs(1, "decide ID --auto [-m TEXT]")(cmd, args)
			}
			return exactArgs(2, "decide ID (override|accept|defer|decompose|reformulate | --auto) [-m TEXT]")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runDecide(o, args[0], argOr(args, 1)) },
	}
	cmd.Flags().StringVarP(&o.Text, "message", "m", "", "the decision's reason (for override: the message to the agent)")
	cmd.Flags().BoolVar(&o.Auto, "auto", false, "take the protocol's default decision for the refusal's reason")
	o.step.addFlags(cmd)
	return cmd
}

// decideAnswer is orch decide's JSON answer: the decided task's
// transition, and the tasks the decision created.
type decideAnswer struct {
	transitionJSON
	Decision     string        `json:"decision"`
	CreatedTasks []answer.Task `json:"created_tasks"`
}

func runDecide(o *decideOptions, ref, decision string) error {
	var res *workflow.DecideResult
	return o.step.run(o.g, "decide", func(e *workflow.Engine) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		res, err = e.Decide(s.Task.ID, decision, o.Text, o.Auto)
		return err
	}, func(e *workflow.Engine) printer {
		return func(out *output) error {
			if o.g.JSON {
				return out.writeJSON(decideAnswer{o.g.transition(e, &res.Result), res.Decision, o.g.tasks(e, res.Created)})
			}
			fmt.Fprintf(out.Out, "%s: %s: %s -> %s\n", res.Task.Task.ID, res.Decision, res.From, res.To)
			for _, c := range res.Created {
				fmt.Fprintf(out.Out, "  created %s: %s\n", c.Task.ID, c.Task.Title)
			}
			return nil
		}
	})
}
