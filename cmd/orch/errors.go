package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/doctor"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/web"
	"github.com/orch-tool/orch/workflow"
)

// Exit codes (docs/design.md §9).
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 3
	exitRefused  = 4
	exitConflict = 5
)

// exitCodes documents every code once, for help and docs.
var exitCodes = []struct {
	Code    int
	Meaning string
}{
	{exitOK, "success"},
	{exitFailure, "failure: a broken file, a git error, orch not set up"},
	{exitUsage, "usage: bad flags or arguments, an ambiguous task prefix, a mistake in config.yaml"},
	{exitNotFound, "not found: no such task, or nothing to claim"},
	{exitRefused, "refused by a rule: illegal transition, lockout, authority, invalid refusal, submit guard"},
	{exitConflict, "conflict: a hand edit in conflict, a lock or race that could not be resolved"},
}

// classified is an error with everything the user needs: the exit code, a
// stable machine code, and a hint saying what to run next.
type classified struct {
	exit    int
	code    string
	msg     string
	hint    string
	details []string // the parts of an error that has several (every failed rule of a refusal)
}

// classify is the one place where errors become exit codes and hints.
func classify(err error) classified {
	var (
		tooLong   *workflow.TextTooLongError
		usage     *workflow.UsageError
		ambiguous *workflow.AmbiguousError
		notFound  *workflow.NotFoundError
		archived  *workflow.ArchivedError
		nothing   *workflow.NothingToClaimError
		rule      *workflow.RuleError
		illegal   *workflow.IllegalTransitionError
		conflict  *workflow.ConflictError
		notInit   *workflow.NotInitializedError
		invalid   *workflow.InvalidFileError
		parse     *taskfile.ParseError
		cfg       *config.Error
		edit      *taskfile.EditError
		notRepo   *gitrepo.ErrNotRepo
		checked   *gitstore.ErrCheckedOut
		refLocked *gitrepo.ErrRefLocked
		lockTime  *gitstore.ErrLockTimeout
		missing   *gitrepo.ErrObjectMissing
		refusal   *workflow.InvalidRefusalError
		external  *workflow.ExternalError
		unhealthy *doctor.UnhealthyError
		backwards *gitstore.ErrMovedBackwards
		damaged   *gitrepo.ErrObjectDamaged
		notReg    *privfile.ErrNotRegular
		format    *gitrepo.ErrUnsupportedRepo
		setup     *workflow.SetupError
		rewritten *workflow.RemoteRewrittenError
		listen    *web.ListenError
	)
	var jqErr *answer.JQError
	switch {
	case errors.As(err, &jqErr):
		return classified{exitFailure, "jq", jqErr.Error(), "the command ran, and what it changed stands: only its answer failed the --jq expression (orch log and orch show tell what it did)", nil}
	case errors.As(err, &tooLong): // before usage: it is one (TextTooLongError.As)
		return classified{exitUsage, "text_too_long", tooLong.Error(), hintFor(tooLong.Next), nil}
	case errors.As(err, &usage):
		return classified{exitUsage, "usage", usage.Msg, hintOf(usage.Hint, usage.Next), nil}
	case errors.As(err, &ambiguous):
		return classified{exitUsage, "ambiguous", ambiguous.Error(), "use more characters of the ID", nil}
	case errors.As(err, &archived):
		return classified{exitNotFound, "archived", archived.Error(), hintFor(archived.Next), nil}
	case errors.As(err, &notFound):
		return classified{exitNotFound, "not_found", notFound.Error(), hintOf(notFound.Hint, notFound.Next), nil}
	case errors.As(err, &nothing):
		return classified{exitNotFound, "nothing_to_claim", nothing.Error(), "orch list --ready shows what is ready; orch list shows every task", nil}
	case errors.As(err, &rewritten):
		return classified{exitFailure, "moved_backwards", rewritten.Error(), "the remote's state branch was rewritten; a person decides: orch sync --restore-remote pushes the dropped transitions back (this clone has them), orch sync --accept-rewrite moves this clone to the remote's branch", nil}
	case errors.As(err, &backwards):
		return classified{exitFailure, "moved_backwards", backwards.Error(), "a person decides: orch doctor shows the dropped transitions and both ways out (--restore-tip, --accept-rewind)", nil}
	case errors.As(err, &unhealthy):
		hint := "run orch doctor --fix"
		if unhealthy.Fixed || unhealthy.Fixable == 0 {
			hint = "repair them as each check's hint says, then run orch doctor again"
		}
		return classified{exitFailure, "unhealthy", unhealthy.Error(), hint, nil}
	case errors.As(err, &external):
		return classified{exitFailure, "external", external.Msg, hintFor(external.Next), nil}
	case errors.As(err, &refusal):
		c := classified{exitRefused, "invalid_refusal", refusal.Error(), "fix every point and refuse again, or keep working on the task (it is still claimed by you); orch refuse --help lists the rules", nil}
		c.details = refusal.Issues
		return c
	case errors.As(err, &illegal):
		hint := hintFor(workflow.Next{Advice: workflow.AdviseShowTask, Task: illegal.Task})
		if len(illegal.Legal) > 0 {
			hint = fmt.Sprintf("from %s you can: orch %s %s", illegal.Queue, strings.Join(illegal.Legal, "|"), illegal.Task)
		}
		return classified{exitRefused, "illegal_transition", illegal.Error(), hint, nil}
	case errors.As(err, &rule):
		return classified{exitRefused, "refused", rule.Msg, hintOf(rule.Hint, rule.Next), nil}
	case errors.As(err, &checked):
		// "git switch -" fails in a worktree created on the branch (no
		// previous branch), so name a command that always works.
		var fixes []string
		for _, wt := range checked.Worktrees {
			fixes = append(fixes, fmt.Sprintf("git -C %q switch --detach", wt))
		}
		return classified{exitRefused, "state_branch_checked_out", checked.Error(), "move those worktrees off the branch (" + strings.Join(fixes, "; ") + ", or git worktree remove them), then run the command again", nil}
	case errors.As(err, &conflict):
		return classified{exitConflict, "conflict", conflict.Msg, hintFor(conflict.Next), nil}
	case errors.As(err, &refLocked):
		return classified{exitConflict, "ref_locked", refLocked.Error(), "wait for the other git command to finish, then run the command again", nil}
	case errors.As(err, &lockTime):
		return classified{exitConflict, "lock_timeout", lockTime.Error(), "another orch command is running (an open editor does not hold the lock); run again when it ends", nil}
	case errors.Is(err, gitstore.ErrTooManyRetries):
		return classified{exitConflict, "race", err.Error(), "run the command again", nil}
	case errors.As(err, &notInit):
		return classified{exitFailure, "not_initialized", notInit.Error(), "run: orch init (or orch init --example for a sample queue)", nil}
	case errors.As(err, &invalid) && configProblems(invalid):
		return classified{exitUsage, "invalid_config", invalid.Error(), "fix config.yaml at the line shown (orch edit config, or edit .orchestrator/config.yaml and run orch check)", nil}
	case errors.As(err, &invalid):
		return classified{exitFailure, "invalid_file", invalid.Error(), "fix the file at the line shown; orch check lists every problem", nil}
	case errors.As(err, &cfg): // before parse: it is one
		return classified{exitUsage, "invalid_config", cfg.Error(), "fix config.yaml at the line shown (orch edit config, or edit .orchestrator/config.yaml and run orch check)", nil}
	case errors.As(err, &parse):
		return classified{exitFailure, "invalid_file", parse.Error(), "fix the file at the line shown; orch check lists every problem", nil}
	case errors.As(err, &edit):
		return classified{exitFailure, "edit_failed", edit.Error(), "orch edit opens the file in your editor", nil}
	case errors.As(err, &setup):
		return classified{exitFailure, "setup", setup.Msg, hintFor(setup.Next), nil}
	case errors.As(err, &format):
		return classified{exitFailure, "unsupported_repository", format.Error(), "use orch in a repository with SHA-1 objects and files ref storage (the defaults of git init and git clone)", nil}
	case errors.As(err, &notRepo):
		return classified{exitFailure, "not_a_repository", notRepo.Error(), "run orch inside a git repository, or pass -C DIR", nil}
	case errors.As(err, &damaged):
		return classified{exitFailure, "object_damaged", "the repository is damaged: " + damaged.Error(), "git fsck names every damaged object; a clone or a remote that has the state branch can restore it (orch sync, or git fetch); orch doctor shows what orch needs", nil}
	case errors.As(err, &notReg):
		return classified{exitFailure, "not_regular", notReg.Error(), "run orch doctor --fix (removes it), then the command again", nil}
	case errors.As(err, &missing):
		return classified{exitFailure, "object_missing", missing.Error(), "run git fsck; if the repository is a partial or shallow clone, fetch the state branch again", nil}
	case errors.As(err, &listen):
		return classified{exitFailure, "listen", listen.Error(), "another program may listen there (orch serve --addr 127.0.0.1:0 picks a free port)", nil}
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return classified{exitFailure, "no_space", "no space left on the device that holds the repository: " + err.Error(), "free some space there (df -h shows it), then run the command again; orch log shows whether the change was recorded", nil}
	case errors.Is(err, syscall.EROFS):
		return classified{exitFailure, "read_only", "the repository is on a read-only file system: " + err.Error(), "orch records every command under .git/ (orch list too reconciles the view under a lock): run it where the repository is writable", nil}
	case errors.Is(err, os.ErrPermission):
		return classified{exitFailure, "permission", err.Error(), "check that you may write to the repository (orch writes under .git/ and .orchestrator/)", nil}
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") || strings.Contains(msg, "flag needs an argument") {
		return classified{exitUsage, "usage", msg, "orch --help lists the verbs", nil}
	}
	return classified{exitFailure, "failure", msg, "", nil}
}

// configProblems reports whether every problem of an invalid file is one
// of config.yaml's: a person's mistake there is a usage error, as
// config.Error is.
func configProblems(e *workflow.InvalidFileError) bool {
	for _, p := range e.Problems {
		if filepath.Base(p.Path) != gitstore.ConfigFile {
			return false
		}
	}
	return len(e.Problems) > 0
}

// reportError prints the error (as the JSON envelope with --json) and
// returns the exit code.
func reportError(g *globalOptions, err error) int {
	if errors.Is(err, errSilent) {
		g.flushNotes()
		return exitFailure
	}
	c := classify(err)
	var h *hinted
	if errors.As(err, &h) {
		c.hint = h.hint
	}
	var d *detailed
	if errors.As(err, &d) {
		c.details = append(c.details, d.details...)
	}
	var se *silentExit
	if errors.As(err, &se) {
		g.flushNotes()
		return se.code
	}
	if g.JSON {
		// What the reconcile did on the way (a hand edit committed, a
		// file restored) rides along in notes, so that stderr stays one
		// JSON document.
		msg := c.msg
		if len(c.details) > 0 {
			msg, _, _ = strings.Cut(msg, "\n") // the details are the rest
		}
		body := errorAnswer{errorJSON{c.code, msg, c.hint, nonNil(c.details), nonNil(g.notes)}}
		g.notes = nil
		b, _ := json.Marshal(body)
		_, _ = g.io.Err.Write(answer.Envelope(b))
		return c.exit
	}
	fmt.Fprintln(g.io.Err, "orch: "+c.msg)
	if c.hint != "" {
		fmt.Fprintln(g.io.Err, "hint: "+c.hint)
	}
	return c.exit
}

// errorAnswer is the JSON document on stderr when a command fails under
// --json (stdout is then empty).
type errorAnswer struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code    string   `json:"code"`    // stable, machine-readable
	Message string   `json:"message"` // one line
	Hint    string   `json:"hint"`    // what to do next ("" when there is nothing to add)
	Details []string `json:"details"` // the parts of an error that has several (every failed rule of a refusal)
	Notes   []string `json:"notes"`   // what the reconcile did on the way (a hand edit committed, a file restored)
}

// detailed adds details (the parts of an error that has several) to err.
type detailed struct {
	err     error
	details []string
}

func (d *detailed) Error() string { return d.err.Error() }
func (d *detailed) Unwrap() error { return d.err }

// hinted keeps err's exit code and machine code but replaces its hint with
// one that only the verb knows (orch edit: where the rejected copy is).
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

// silentExit ends a command with a code after it printed its own output
// (orch check prints the problems, then exits 1).
type silentExit struct{ code int }

func (e *silentExit) Error() string { return fmt.Sprintf("exit %d", e.code) }
