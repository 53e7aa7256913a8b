package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

type claimOptions struct {
	g        *globalOptions
	Task     string
	Role     string
	Prompt   bool
	Sync     bool
	Remote   string
	Worktree bool
}

func newClaimCmd(g *globalOptions) *cobra.Command {
	o := &claimOptions{g: g}
	cmd := &cobra.Command{
		Use:   "claim [--task ID] [--role R] [--worktree] [--prompt]",
		Short: "Take the next ready task (or --task ID) and its branch",
		Long: `Claim the next task you may work on, in claim order: ` + workflow.ClaimOrderText() + `.
Tasks waiting for dependencies, for another role, assigned to someone else or
that lock you out are skipped. ` + workflow.TransitionHelp("claim") + `

A first claim creates the branch <branch_prefix><id>-<slug> from base_branch; a
task that was rejected or paused keeps its branch, and the answer says so
(branch_reused). Exactly one of many racing claimers wins each task.
Exits 3 when nothing is ready. --prompt adds the agent's prompt.

--worktree also creates (or reuses) the task's worktree, as orch worktree
does, and answers its absolute path (worktree): all the work happens there.

--sync makes the claim atomic across clones: it is won on the remote by
pushing the task's claim ref (refs/orch/claims/<id>) only if absent. With
claim_arbiter claim_ref (what orch init writes) an uncontended claim is one
push: the claim is made from this clone's view of the remote (fetched at most
10 seconds before), and the same push shares what the state branch lacks; the
claim reaches the state branch with the next push. When another clone holds
the ref, the claim is undone locally, the remote's state and claim refs are
fetched, and the next ready task is tried; a view with nothing claimable is
fetched before the answer. With claim_arbiter state_branch the claim waits
for a fetch and for the state branch too. Under contention it backs off and
tries again for up to two minutes; exit 5 only past that.`,
		Example: `  orch claim --json
  orch claim --worktree --prompt --json
  orch claim --agent agent-a --prompt
  orch claim --task T-4k9x2m --role reviewer`,
		Args: exactArgs(0, "claim [--task ID] [--role R] [--worktree] [--prompt]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runClaim(o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Task, "task", "", "claim this task (ID or unique prefix)")
	f.StringVar(&o.Role, "role", "", "claim as this role (default: your roles in the roster, else default_role)")
	f.BoolVar(&o.Prompt, "prompt", false, "include the prompt for the task")
	f.BoolVar(&o.Worktree, "worktree", false, "create (or reuse) the task's worktree and answer its path")
	f.BoolVar(&o.Sync, "sync", false, "claim atomically across clones through the remote")
	f.StringVar(&o.Remote, "remote", "origin", "the remote --sync uses")
	return cmd
}

func runClaim(o *claimOptions) error {
	if o.Role != "" && !taskfile.ValidName(o.Role) {
		return &workflow.UsageError{Msg: fmt.Sprintf("--role: %q is not a valid role name", o.Role), Hint: "names are letters, digits, spaces and . _ - + @, up to 64 characters"}
	}
	if o.Sync {
		return runClaimSync(o)
	}
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		res, err := e.Claim(workflow.ClaimOptions{Task: o.Task, Role: o.Role})
		if err != nil {
			return nil, err
		}
		return claimed(o, e, res)
	})
}

// runClaimSync claims through the remote (workflow.ClaimSync) and prints
// the answer from the engine it leaves open.
func runClaimSync(o *claimOptions) error {
	var res *workflow.ClaimResult
	return o.g.runRemote(func(opts workflow.Options) (*workflow.Engine, []string, error) {
		e, r, notes, err := workflow.ClaimSync(opts, workflow.ClaimOptions{Task: o.Task, Role: o.Role}, syncOptionsOf(o.Remote))
		res = r
		return e, notes, err
	}, func(e *workflow.Engine) printer {
		p, err := claimed(o, e, res)
		if err != nil {
			return func(*output) error { return err }
		}
		return p
	})
}

// claimAnswer is orch claim's JSON answer.
type claimAnswer struct {
	Task         answer.Task `json:"task"`
	Branch       string      `json:"branch"`
	BranchReused bool        `json:"branch_reused"`
	BranchNote   string      `json:"branch_note"`
	PRNumber     int         `json:"pr_number"`
	Attempt      int         `json:"attempt"`
	Commit       string      `json:"commit"`
	Worktree     string      `json:"worktree"`     // with --worktree: its absolute path
	NewWorktree  bool        `json:"new_worktree"` // with --worktree: made by this claim
	Prompt       string      `json:"prompt"`       // with --prompt
}

// claimed finishes a claim: its worktree (made or reused: again on a
// second run) and prompt, and the printer of its answer.
func claimed(o *claimOptions, e *workflow.Engine, res *workflow.ClaimResult) (printer, error) {
	p, err := e.Prepare(res.Task, o.Role, o.Worktree, o.Prompt)
	if err != nil {
		return nil, err
	}
	worktree, newWorktree, text := p.Worktree, p.NewWorktree, p.Prompt
	return func(out *output) error {
		if o.g.JSON {
			return out.writeJSON(claimAnswer{o.g.task(e, res.Task), res.Branch, res.BranchReused, res.BranchNote, res.Task.Task.PRNumber, res.Attempt,
				res.Commit.String(), worktree, newWorktree, text})
		}
		t := res.Task.Task
		how := "new branch"
		if res.BranchReused {
			how = "existing branch"
		}
		fmt.Fprintf(out.Out, "%s claimed by %s: %s\n", t.ID, e.Actor, t.Title)
		fmt.Fprintf(out.Out, "branch: %s (%s)\n", res.Branch, how)
		if worktree != "" {
			fmt.Fprintf(out.Out, "worktree: %s\n", worktree)
		}
		if t.PRNumber > 0 {
			fmt.Fprintf(out.Out, "PR: #%d (push to it; do not open a new one)\n", t.PRNumber)
		}
		if res.BranchNote != "" {
			fmt.Fprintln(out.Err, "orch: "+res.BranchNote)
		}
		if o.Prompt {
			fmt.Fprintln(out.Out)
			fmt.Fprint(out.Out, text)
		}
		return nil
	}, nil
}
