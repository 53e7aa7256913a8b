package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

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

--from FILE commits FILE's content as the edit without opening an editor.
An edit that does not parse is refused with the file and line, and nothing
is committed; the edited copy is kept so you can fix it.`,
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

func runEdit(o *editOptions, ref string) error {
	// Phase 1: read what to edit, under the lock.
	var target *workflow.EditTarget
	var privDir string
	err := o.g.withEngine(func(e *workflow.Engine) error {
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
	} else {
		if edited, err = runEditor(o.g, target); err != nil {
			return err
		}
	}
	if bytes.Equal(edited, target.Data) {
		if o.g.JSON {
			return writeJSON(o.g.io.Out, struct {
				Changed bool   `json:"changed"`
				Path    string `json:"path"`
			}{false, target.Path})
		}
		fmt.Fprintln(o.g.io.Err, "no changes")
		return nil
	}
	// Phase 3: commit, merging with anything that changed meanwhile.
	return o.g.withEngine(func(e *workflow.Engine) error {
		res, err := e.EditFinish(target, edited)
		var invalid *workflow.InvalidFileError
		var conflict *workflow.ConflictError
		if errors.As(err, &invalid) || errors.As(err, &conflict) {
			saved := saveRejectedEdit(privDir, target, edited)
			if saved != "" {
				if !o.g.JSON { // with --json, stderr holds only the error document
					fmt.Fprintf(o.g.io.Err, "orch: your edited copy is saved in %s\n", saved)
				}
				if invalid != nil {
					return &hinted{err: err, hint: fmt.Sprintf("your edited copy is saved in %s; fix it, then: orch edit %s --from %s", saved, editRef(target), saved)}
				}
			}
			return err
		}
		if err != nil {
			return err
		}
		if o.g.JSON {
			doc := struct {
				Changed bool      `json:"changed"`
				Path    string    `json:"path"`
				Commit  string    `json:"commit"`
				Task    *taskJSON `json:"task,omitempty"`
			}{Changed: true, Path: target.Path, Commit: res.Commit.String()}
			if res.Task != nil {
				tj := toTaskJSON(e, res.Task)
				doc.Task = &tj
			}
			return writeJSON(o.g.io.Out, doc)
		}
		fmt.Fprintf(o.g.io.Err, "committed %s (%s)\n", target.Path, short(res.Commit))
		return nil
	})
}

func editRef(t *workflow.EditTarget) string {
	if t.ID != "" {
		return t.ID
	}
	return t.Path
}

// runEditor writes the target to a temp file, opens the editor on it and
// returns what was saved.
func runEditor(g *globalOptions, t *workflow.EditTarget) ([]byte, error) {
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
		return nil, fmt.Errorf("the editor (%s) failed: %v; nothing was committed", editor, err)
	}
	return os.ReadFile(p)
}

func saveRejectedEdit(privDir string, t *workflow.EditTarget, data []byte) string {
	dir := filepath.Join(privDir, "edits")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return ""
	}
	p := filepath.Join(dir, filepath.Base(t.Path))
	if err := os.WriteFile(p, data, 0o666); err != nil {
		return ""
	}
	return p
}
