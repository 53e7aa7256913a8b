package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/workflow"
)

type editOptions struct {
	g    *globalOptions
	From string
}

func newEditCmd(g *globalOptions) *cobra.Command {
	o := &editOptions{g: g}
	cmd := &cobra.Command{
		Use:   "edit [ID | config | prompts/ROLE.md] [--from FILE]",
		Short: "Edit a task (or the config, or a prompt) in $EDITOR and commit it",
		Long: `Open a copy of a task file in $VISUAL or $EDITOR and commit what you save.
orch holds no lock while the editor is open; if orch changed the task
meanwhile, your edit is merged with those changes (fields you did not touch
take orch's values). It works in a bare repository too, where there is no view.

--from FILE commits FILE's content as the edit without opening an editor;
FILE is merged from the version of the task it was copied from (found in the
task's history), so an old copy never undoes what happened since.

Fields orch owns (queue, claimed_by, locked_out, ...) change only through
verbs: an edit that changes one is refused (exit 4) and the hint names the
verb. Whatever stops the commit (an invalid file, a conflict, a rule, a
locked ref, a full disk), nothing is committed and what you typed is kept:
the path is printed (.git/orch/edits/) with the command that retries it.`,
		Example: `  orch edit T-4k9x2m
  orch edit config
  EDITOR=nano orch edit 4k9x
  orch edit T-4k9x2m --from fixed.md`,
		Args: maxArgs(1, "edit [ID | config | prompts/ROLE.md] [--from FILE]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runEdit(o, argOr(args, 0)) },
	}
	cmd.Flags().StringVar(&o.From, "from", "", "commit this `FILE` instead of opening an editor")
	return cmd
}

// editAnswer is orch edit's JSON answer: the file (a task, config.yaml or
// a prompt), the commit ("" when nothing changed), and the task when the
// file is one.
type editAnswer struct {
	Changed bool         `json:"changed"`
	Path    string       `json:"path"`
	Commit  string       `json:"commit"`
	Task    *answer.Task `json:"task"`
}

// viewPath is the path, relative to the repository, of a file of the
// state branch as the view shows it.
func viewPath(p string) string { return gitstore.ViewDirName + "/" + p }

func runEdit(o *editOptions, ref string) error {
	// Phase 1: read what to edit, under the lock.
	var target *workflow.EditTarget
	var privDir string
	err := o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		var err error
		target, err = e.EditStart(ref)
		privDir = e.Store.PrivDir()
		return err
	})
	if err != nil {
		return err
	}
	// Phase 2: the editor, without the lock.
	var edited []byte
	if o.From != "" {
		if edited, err = readInput(o.g.io.In, o.From); err != nil {
			return err
		}
		target.FromCopy = true
	} else {
		if edited, err = runEditor(o.g, target, privDir); err != nil {
			return err
		}
	}
	if bytes.Equal(edited, target.Data) {
		if o.g.JSON {
			return o.g.out().writeJSON(editAnswer{Changed: false, Path: viewPath(target.Path)})
		}
		fmt.Fprintln(o.g.io.Err, "no changes")
		return nil
	}
	// Phase 3: commit, merging with anything that changed meanwhile. What
	// was typed is never lost (docs/design.md §1.3): whatever stops the commit (an
	// invalid file, a conflict, a rule, a locked ref, a full disk), the
	// buffer is kept and the hint says how to retry it.
	err = o.g.runPrinting(func(e *workflow.Engine, out *output) error {
		res, err := e.EditFinish(target, edited)
		if err != nil {
			return err
		}
		if o.g.JSON {
			doc := editAnswer{Changed: true, Path: viewPath(target.Path), Commit: res.Commit.String()}
			if res.Task != nil {
				tj := o.g.task(e, res.Task)
				doc.Task = &tj
			}
			return o.g.out().writeJSON(doc)
		}
		fmt.Fprintf(o.g.io.Err, "committed %s (%s)\n", target.Path, short(res.Commit))
		return nil
	})
	if err == nil {
		return nil
	}
	if o.From != "" && o.From != "-" {
		// The person's own file is their copy; it is still there.
		return &hinted{err: err, hint: fmt.Sprintf("nothing was committed; your file %s is unchanged: fix what the message says, then: orch edit %s --from %s", o.From, editRef(target), o.From)}
	}
	saved := saveEdit(privDir, target, edited)
	if saved == "" {
		return err
	}
	if !o.g.JSON { // with --json, stderr holds only the error document
		fmt.Fprintf(o.g.io.Err, "orch: your edited copy is saved in %s\n", saved)
	}
	return &hinted{err: err, hint: fmt.Sprintf("nothing was committed; your edited copy is saved in %s: fix what the message says, then: orch edit %s --from %s", saved, editRef(target), saved)}
}

func editRef(t *workflow.EditTarget) string {
	if t.ID != "" {
		return t.ID
	}
	return t.Path
}

// runEditor writes the target to a temp file, opens the editor on it and
// returns what was saved. If the editor fails after the file was changed,
// the change is kept (saveEdit) before the temp file goes.
func runEditor(g *globalOptions, t *workflow.EditTarget, privDir string) ([]byte, error) {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		if !g.io.InTTY {
			return nil, &workflow.UsageError{Msg: "no editor: $EDITOR is not set and stdin is not a terminal", Hint: "set EDITOR, or commit a file with: orch edit " + editRef(t) + " --from FILE"}
		}
		editor = "vi"
	}
	dir, err := os.MkdirTemp("", "orch-edit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, filepath.Base(t.Path))
	if err := os.WriteFile(p, t.Data, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", editor+` "$@"`, "orch-editor", p)
	if f, ok := g.io.In.(*os.File); ok {
		cmd.Stdin = f
	}
	cmd.Stdout = g.io.Err // the editor's own output is not orch's result
	if f, ok := g.io.Out.(*os.File); ok && g.io.OutTTY {
		cmd.Stdout = f
	}
	cmd.Stderr = g.io.Err
	if err := cmd.Run(); err != nil {
		msg := fmt.Sprintf("the editor (%s) failed: %v; nothing was committed", editor, err)
		if data, rerr := os.ReadFile(p); rerr == nil && !bytes.Equal(data, t.Data) {
			if saved := saveEdit(privDir, t, data); saved != "" {
				return nil, &hinted{err: errors.New(msg), hint: fmt.Sprintf("what you typed is saved in %s: orch edit %s --from %s commits it", saved, editRef(t), saved)}
			}
		}
		return nil, errors.New(msg)
	}
	return os.ReadFile(p)
}

// saveEdit keeps an edited copy that was not committed (gitstore.KeepText:
// under .git/orch/edits/, else beside the system's temp files). It returns
// the path ("" when nothing could be written).
func saveEdit(privDir string, t *workflow.EditTarget, data []byte) string {
	return gitstore.KeepText(privDir, filepath.Base(t.Path), data)
}
