package main

import (
	"errors"
	"fmt"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

type claimOptions struct {
	g      *globalOptions
	Task   string
	Role   string
	Prompt bool
	Sync   bool
	Remote string
}

func newClaimCmd(g *globalOptions) *cobra.Command {
	o := &claimOptions{g: g}
	cmd := &cobra.Command{
		Use:   "claim [--task ID] [--role R] [--prompt]",
		Short: "Take the next ready task (or --task ID) and its branch",
		Long: `Claim the next task you may work on, in claim order: ` + workflow.ClaimOrderText() + `.
Tasks waiting for dependencies, for another role, assigned to someone else or
that lock you out are skipped. ` + workflow.TransitionHelp("claim") + `

A first claim creates the branch <branch_prefix><id>-<slug> from base_branch; a
task that was rejected or paused keeps its branch, and the answer says so
(branch_reused). Exactly one of many racing claimers wins each task.
Exits 3 when nothing is ready. --prompt adds the agent's prompt.

--sync makes the claim atomic across clones: fetch the remote's state branch
and merge it, claim, and push with a lease; when another clone pushed first,
the claim is undone locally and the next ready task is tried.`,
		Example: `  orch claim --json
  orch claim --agent agent-a --prompt
  orch claim --task T-4k9x2m --role reviewer`,
		Args: exactArgs(0, "claim [--task ID] [--role R] [--prompt]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runClaim(o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Task, "task", "", "claim this task (ID or unique prefix)")
	f.StringVar(&o.Role, "role", "", "claim as this role (default: your roles in the roster, else default_role)")
	f.BoolVar(&o.Prompt, "prompt", false, "include the prompt for the task")
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
	return o.g.withEngineOptimistic(func(e *workflow.Engine) error {
		res, err := e.Claim(workflow.ClaimOptions{Task: o.Task, Role: o.Role})
		if err != nil {
			return err
		}
		return printClaim(o, e, res)
	})
}

// runClaimSync: fetch (without the lock), then under the lock merge the
// remote, claim, and push the claim with a lease. A lost push undoes the
// claim locally (the branch moves back to before it) and starts again.
func runClaimSync(o *claimOptions) error {
	remote, err := remoteOrDefault(o.Remote)
	if err != nil {
		return err
	}
	for attempt := 1; attempt <= syncAttempts; attempt++ {
		rtip, err := o.g.fetchRemote(remote, false)
		if err != nil {
			return err
		}
		lost := false
		err = o.g.withEngine(func(e *workflow.Engine) error {
			sr := &workflow.SyncResult{Remote: remote}
			if err := e.MergeRemote(remote, rtip, sr); err != nil {
				return err
			}
			before := e.Store.Snapshot().Tip
			res, err := e.Claim(workflow.ClaimOptions{Task: o.Task, Role: o.Role})
			if err != nil {
				if before != rtip && !before.IsZero() {
					// Share what the merge made even when nothing is claimable.
					_ = e.Store.Repo.Push(remote, e.Store.Ref, before, rtip)
				}
				return err
			}
			perr := e.Store.Repo.Push(remote, e.Store.Ref, res.Commit, rtip)
			if errors.Is(perr, gitstore.ErrPushRejected) {
				lost = true
				if err := e.Store.MoveTo(before, e.Signature(), "orch: undo claim of "+res.Task.Task.ID+" (lost the race on "+remote+")"); err != nil {
					return err
				}
				dropClaimBranch(e, res)
				fmt.Fprintf(o.g.io.Err, "orch: another clone moved %s first; undid the claim of %s and trying again\n", remote, res.Task.Task.ID)
				return e.AfterMove()
			}
			if perr != nil {
				if err := e.Store.MoveTo(before, e.Signature(), "orch: undo claim of "+res.Task.Task.ID+" (push failed)"); err != nil {
					return err
				}
				dropClaimBranch(e, res)
				_ = e.AfterMove()
				return remoteFailure(perr)
			}
			return printClaim(o, e, res)
		})
		if err != nil {
			return err
		}
		if !lost {
			return nil
		}
		backoff(attempt)
	}
	return &workflow.ConflictError{Msg: fmt.Sprintf("every claim lost the race on %s %d times", remote, syncAttempts), Hint: "run orch claim --sync again"}
}

// dropClaimBranch deletes the branch an undone claim created (git
// update-ref -d, only if it is still where the claim put it), so that a
// lost race leaves no branch behind and a later claim is not told it
// continues on a branch with no work.
func dropClaimBranch(e *workflow.Engine, res *workflow.ClaimResult) {
	if res.BranchReused || res.Branch == "" {
		return
	}
	ref := "refs/heads/" + res.Branch
	h, err := e.Store.ReadRef(ref)
	if err != nil || h.IsZero() {
		return
	}
	_ = exec.Command("git", "--git-dir", e.Store.Repo.CommonDir, "update-ref", "-d", ref, h.String()).Run()
}

func printClaim(o *claimOptions, e *workflow.Engine, res *workflow.ClaimResult) error {
	var err error
	text := ""
	if o.Prompt {
		if text, _, err = e.Prompt(res.Task.Task.ID, o.Role); err != nil {
			return err
		}
	}
	if o.g.JSON {
		return writeJSON(o.g.io.Out, struct {
			Task         taskJSON `json:"task"`
			Branch       string   `json:"branch"`
			BranchReused bool     `json:"branch_reused"`
			BranchNote   string   `json:"branch_note,omitempty"`
			PRNumber     int      `json:"pr_number,omitempty"`
			Attempt      int      `json:"attempt"`
			Commit       string   `json:"commit"`
			Prompt       string   `json:"prompt,omitempty"`
		}{toTaskJSON(e, res.Task), res.Branch, res.BranchReused, res.BranchNote, res.Task.Task.PRNumber, res.Attempt, res.Commit.String(), text})
	}
	t := res.Task.Task
	how := "new branch"
	if res.BranchReused {
		how = "existing branch"
	}
	fmt.Fprintf(o.g.io.Out, "%s claimed by %s: %s\n", t.ID, e.Actor, t.Title)
	fmt.Fprintf(o.g.io.Out, "branch: %s (%s)\n", res.Branch, how)
	if t.PRNumber > 0 {
		fmt.Fprintf(o.g.io.Out, "PR: #%d (push to it; do not open a new one)\n", t.PRNumber)
	}
	if res.BranchNote != "" {
		fmt.Fprintln(o.g.io.Err, "orch: "+res.BranchNote)
	}
	if o.Prompt {
		fmt.Fprintln(o.g.io.Out)
		fmt.Fprint(o.g.io.Out, text)
	}
	return nil
}
