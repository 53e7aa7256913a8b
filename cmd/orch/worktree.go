package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/workflow"
)

type worktreeOptions struct {
	g    *globalOptions
	Path string
}

func newWorktreeCmd(g *globalOptions) *cobra.Command {
	o := &worktreeOptions{g: g}
	cmd := &cobra.Command{
		Use:   "worktree [ID] [--path DIR]",
		Short: "Print, or create, the worktree for a task's branch",
		Long: `Print the absolute path of the worktree that has the task's branch checked
out, creating it with git worktree add when there is none: at --path, else in
worktree_dir (config.yaml), else beside the main worktree as <repo>-<id>. The
task must have a branch: claim it first (orch claim --worktree does both).

On any error nothing is printed on stdout, so use the form that fails closed:
  d=$(orch worktree ID) && cd "$d"
(cd "$(orch worktree ID)" would run cd "" and stay where it was.)`,
		Example: `  orch worktree T-4k9x2m
  d=$(orch worktree T-4k9x2m) && cd "$d"
  orch worktree T-4k9x2m --path /tmp/wt --json`,
		Args: maxArgs(1, "worktree [ID] [--path DIR]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runWorktree(o, argOr(args, 0)) },
	}
	cmd.Flags().StringVar(&o.Path, "path", "", "create the worktree at `DIR`")
	cmd.AddCommand(declare(kindRead, newWorktreePruneCmd(g)))
	return cmd
}

// worktreeAnswer is orch worktree's JSON answer.
type worktreeAnswer struct {
	Task        answer.Task `json:"task"`
	Branch      string      `json:"branch"`
	Worktree    string      `json:"worktree"`     // its absolute path
	NewWorktree bool        `json:"new_worktree"` // made by this command
}

func runWorktree(o *worktreeOptions, ref string) error {
	return o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		w, err := e.TaskWorktree(s.Task.ID, o.Path)
		if err != nil {
			return err
		}
		if o.g.JSON {
			return o.g.out().writeJSON(worktreeAnswer{o.g.task(e, s), w.Branch, w.Path, w.Created})
		}
		fmt.Fprintln(o.g.io.Out, w.Path)
		if w.Created {
			fmt.Fprintf(o.g.io.Err, "created a worktree for %s on %s\n", w.Task, w.Branch)
		}
		return nil
	})
}

type worktreePruneOptions struct {
	g      *globalOptions
	DryRun bool
}

func newWorktreePruneCmd(g *globalOptions) *cobra.Command {
	o := &worktreePruneOptions{g: g}
	cmd := &cobra.Command{
		Use:   "prune [--dry-run]",
		Short: "Remove the worktrees of finished tasks",
		Long: `Remove the worktrees of tasks that are done, failed, superseded or archived
(git worktree remove; the branches stay, with their commits). A worktree that
holds anything its commits do not is kept: changes to tracked files, staged or
not, untracked files, and ignored ones (.env, local settings, notes), which git
worktree remove would delete. Prune names those files and says what to do:
save them, or remove the worktree anyway with git worktree remove --force. The
worktree orch runs in is kept too. --dry-run lists what would be removed.`,
		Example: `  orch worktree prune
  orch worktree prune --dry-run --json`,
		Args: exactArgs(0, "worktree prune [--dry-run]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runWorktreePrune(o) },
	}
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "list what would be removed, remove nothing")
	return cmd
}

// pruneAnswer is orch worktree prune's JSON answer.
type pruneAnswer struct {
	DryRun    bool         `json:"dry_run"`
	Count     int          `json:"count"`
	Worktrees []prunedJSON `json:"worktrees"`
}

// prunedJSON is one worktree of a finished task.
type prunedJSON struct {
	Worktree string       `json:"worktree"` // its absolute path
	Branch   string       `json:"branch"`
	TaskID   string       `json:"task_id"`
	Task     *answer.Task `json:"task"`  // null when the task is archived
	Queue    string       `json:"queue"` // "archived" when the task file is gone
	Removed  bool         `json:"removed"`
	Kept     string       `json:"kept"`  // why it was kept ("" when removed, or would be)
	Hint     string       `json:"hint"`  // what to do about what kept it ("" when nothing did)
	Files    []keptFile   `json:"files"` // what it holds beyond its commits, which kept it
}

// keptFile is one path that keeps a worktree.
type keptFile struct {
	Path  string `json:"path"`  // relative to the worktree; a whole directory ends in /
	State string `json:"state"` // uncommitted | untracked | ignored
}

func runWorktreePrune(o *worktreePruneOptions) error {
	return o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		if err := e.RequireInit(); err != nil {
			return err
		}
		list, err := e.PruneWorktrees(o.DryRun)
		if err != nil {
			return err
		}
		kept := 0
		for _, w := range list {
			if w.Kept != "" {
				kept++
			}
		}
		if o.g.JSON {
			ids := make([]string, len(list))
			for i, w := range list {
				ids[i] = w.Task
			}
			refs := o.g.taskRefs(e, ids)
			out := make([]prunedJSON, len(list))
			for i, w := range list {
				files := make([]keptFile, len(w.Files))
				for j, f := range w.Files {
					files[j] = keptFile{f.Path, f.State}
				}
				out[i] = prunedJSON{w.Path, w.Branch, w.Task, refs[w.Task], w.Queue, w.Removed, w.Kept, w.Hint, files}
			}
			if err := o.g.out().writeJSON(pruneAnswer{o.DryRun, len(out), out}); err != nil {
				return err
			}
		} else {
			if len(list) == 0 {
				fmt.Fprintln(o.g.io.Err, "no worktree of a finished task")
			}
			tw := tabwriter.NewWriter(o.g.io.Out, 0, 4, 2, ' ', 0)
			for _, w := range list {
				what := "removed"
				switch {
				case w.Kept != "" && w.Hint != "":
					what = "kept: " + w.Kept + "; " + w.Hint
				case w.Kept != "":
					what = "kept: " + w.Kept
				case o.DryRun:
					what = "would be removed"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.Task, w.Queue, w.Path, what)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if kept > 0 && !o.g.JSON {
			fmt.Fprintf(o.g.io.Err, "kept %d worktree(s): see why above\n", kept)
		}
		return nil
	})
}
