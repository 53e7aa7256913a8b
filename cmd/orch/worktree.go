package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

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
		Long: `Print the path of the worktree that has the task's branch checked out, creating
it with git worktree add when there is none (default: a directory beside the
main worktree named <repo>-<id>). The task must have a branch: claim it first.
A scheduler runs: orch claim --json, then cd "$(orch worktree ID)".`,
		Example: `  orch worktree T-4k9x2m
  cd "$(orch worktree T-4k9x2m)"
  orch worktree T-4k9x2m --path /tmp/wt --json`,
		Args: maxArgs(1, "worktree [ID] [--path DIR]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runWorktree(o, argOr(args, 0)) },
	}
	cmd.Flags().StringVar(&o.Path, "path", "", "create the worktree at `DIR`")
	return cmd
}

func runWorktree(o *worktreeOptions, ref string) error {
	var id, branch, path, gitDir string
	var existing []string
	err := o.g.withEngine(func(e *workflow.Engine) error {
		s, err := e.Lookup(ref)
		if err != nil {
			return err
		}
		id, branch = s.Task.ID, s.Task.Branch
		if branch == "" {
			return &workflow.RuleError{Rule: "no_branch", Msg: fmt.Sprintf("%s has no branch yet (it is %s)", id, s.Task.Queue), Hint: "claim it first: orch claim --task " + id}
		}
		h, err := e.Store.ReadRef("refs/heads/" + branch)
		if err != nil {
			return err
		}
		if h.IsZero() {
			return &workflow.RuleError{Rule: "no_branch", Msg: fmt.Sprintf("the branch %s of %s does not exist in this repository", branch, id), Hint: "fetch it (git fetch origin " + branch + ":" + branch + "), or claim the task again to recreate it"}
		}
		existing = e.Store.Repo.CheckedOutIn("refs/heads/" + branch)
		gitDir = e.Store.Repo.CommonDir
		base := e.Store.Repo.MainWorkTree
		if base == "" {
			base = e.Store.Repo.CommonDir
		}
		path = o.Path
		if path == "" {
			name := filepath.Base(base)
			if name == ".git" || filepath.Ext(name) == ".git" {
				name = name[:len(name)-len(filepath.Ext(name))]
				if name == "" {
					name = "repo"
				}
			}
			path = filepath.Join(filepath.Dir(base), name+"-"+id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	created := false
	var live []string
	for _, p := range existing {
		if _, err := os.Stat(p); err == nil {
			live = append(live, p)
		}
	}
	if len(live) < len(existing) {
		// A worktree deleted without git worktree remove: prune it, so that
		// it is not printed as if it were there and can be made again.
		_ = exec.Command("git", "--git-dir", gitDir, "worktree", "prune").Run()
	}
	existing = live
	if len(existing) > 0 {
		path = existing[0]
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		path = abs
		if _, err := os.Stat(path); err == nil {
			return &workflow.RuleError{Rule: "path_exists", Msg: fmt.Sprintf("%s already exists and is not %s's worktree", path, id), Hint: "pass another --path"}
		}
		cmd := exec.Command("git", "--git-dir", gitDir, "worktree", "add", "--quiet", path, branch)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			return &workflow.ExternalError{Msg: fmt.Sprintf("git worktree add %s %s failed: %s", path, branch, bytes.TrimSpace(errb.Bytes())), Hint: "git worktree list shows the existing worktrees"}
		}
		created = true
	}
	if o.g.JSON {
		return writeJSON(o.g.io.Out, struct {
			Task    string `json:"task"`
			Branch  string `json:"branch"`
			Path    string `json:"path"`
			Created bool   `json:"created"`
		}{id, branch, path, created})
	}
	fmt.Fprintln(o.g.io.Out, path)
	if created {
		fmt.Fprintf(o.g.io.Err, "created a worktree for %s on %s\n", id, branch)
	}
	return nil
}
