package main

import (
	"fmt"
	"os/exec"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/workflow"
)

type landOptions struct {
	g      *globalOptions
	DryRun bool
	All    bool
	Push   bool
	Remote string
}

func newLandCmd(g *globalOptions) *cobra.Command {
	o := &landOptions{g: g}
	cmd := &cobra.Command{
		Use:   "land [--dry-run] [--all] [--push [--remote R]]",
		Short: "Land approved work on the base branch through a checked merge",
		Long: `Land the approved tasks (land.mode: local, or github: below) on the base branch, in order:
priority first, then the oldest approval. ` + workflow.TransitionHelp("land") + `

One landing step takes the base branch's tip, merges the approved commit of
each task (up to land.batch of them) with git's own merge in a scratch
worktree of this clone (land.strategy: merge, squash or rebase; the
repository's merge drivers and attributes apply), runs land.check there on
the result, and moves the base only by compare-and-swap from the tip it
started at: when the base moved meanwhile, it starts again, so a
combination that was not checked never lands. With --push (or land.push) the
push of the base to the remote is the commit point.

A conflict or a red check sends the task back to rejected on its branch with
a round of landing feedback (the base it met, the conflicting files and
hunks or the check's output, and the commands that bring the branch up to
date). It locks no one out; land.max_failures failures escalate it. A batch
whose check fails is bisected: the culprit goes back, the rest land.

A person's checkout is never touched but as git merge --ff-only would: a
worktree that has the base checked out is advanced when it is clean, and
the landing waits (and says why) when it is not. A landed task's worktree is
removed when it holds nothing its commits do not, and its branch with
land.delete_branch.

--dry-run shows what would land, in order, and the conflicts a trial merge
sees; --all lands every approved task, a batch at a time. orch run lands
continuously.

With land.mode: github, landing is GitHub's merge: for each approved task, in
the same order, orch reads its pull request (pr_number) with gh pr view,
marks a draft ready, and runs gh pr merge N --merge, --squash or --rebase
(land.strategy) with --match-head-commit of the approved commit, so that
nothing pushed after the approval merges unreviewed. A merged pull request
makes the task done, its merge commit the landed_commit. One that GitHub says
conflicts goes back to rejected with a landing round (no lockout, counted
toward land.max_failures); one closed unmerged, or a task with no pr_number,
escalates to a person. One that cannot merge yet (checks, required reviews,
a merge queue, a head that is not the approved commit) stays approved and
the answer says why ("waiting"); orch pr poll records it once GitHub merged
it. --dry-run lists what it would merge and asks GitHub nothing. Without gh,
or network, nothing changes and the command exits 1.`,
		Example: `  orch land
  orch land --dry-run
  orch land --all --json`,
		Args: exactArgs(0, "land [--dry-run] [--all] [--push [--remote R]]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runLand(o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.DryRun, "dry-run", false, "show what would land, in order, and the conflicts a trial merge sees")
	f.BoolVar(&o.All, "all", false, "land every approved task, a batch (land.batch) at a time")
	f.BoolVar(&o.Push, "push", false, "push the base branch to the remote as the commit point (land.push)")
	f.StringVar(&o.Remote, "remote", "origin", "the remote --push uses")
	return cmd
}

// landAnswer is orch land's JSON answer.
type landAnswer struct {
	Base    string                `json:"base"`
	DryRun  bool                  `json:"dry_run"`
	Waiting string                `json:"waiting"` // why landing waits ("" when it does not)
	Tasks   []workflow.LandedTask `json:"tasks"`
}

func runLand(o *landOptions) error {
	lo := workflow.LandOptions{DryRun: o.DryRun, Wait: true}
	if o.Push {
		lo.Remote = o.Remote
	}
	ans := landAnswer{DryRun: o.DryRun, Tasks: []workflow.LandedTask{}}
	for {
		rep, err := workflow.LandApproved(o.g.engineOptions(false), lo)
		if err != nil {
			return err
		}
		ans.Base, ans.Waiting = rep.Base, rep.Waiting
		ans.Tasks = append(ans.Tasks, rep.Results...)
		if !o.All || o.DryRun || rep.Waiting != "" || len(rep.Results) == 0 || rep.All {
			break
		}
	}
	if o.g.JSON {
		return o.g.out().writeJSON(ans)
	}
	if len(ans.Tasks) == 0 && ans.Waiting == "" {
		fmt.Fprintln(o.g.io.Err, "nothing approved waits to land")
	}
	for _, t := range ans.Tasks {
		fmt.Fprintln(o.g.io.Out, t.Summary(ans.Base))
	}
	if ans.Waiting != "" {
		fmt.Fprintln(o.g.io.Err, "orch: landing waits: "+ans.Waiting)
	}
	return nil
}

// deleteDetached deletes dirs (landed worktrees' files, moved into the
// trash) by rm -rf in a session of its own, which neither orch's exit nor a
// terminal's hangup stops, so that a command's landing does not wait for
// the disk, as git gc --auto goes on after the git command that started
// it. orch run deletes them itself instead, and waits for that before it
// exits. Where rm cannot start, orch deletes them itself.
func deleteDetached(dirs []string) {
	if len(dirs) == 0 {
		return
	}
	cmd := exec.Command("rm", append([]string{"-rf", "--"}, dirs...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		gitrepo.RemoveAll(dirs)
		return
	}
	go func() { _ = cmd.Wait() }() // a long-lived caller reaps it
}
