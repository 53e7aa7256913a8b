package workflow

import (
	"fmt"
	"strings"

	"github.com/orch-tool/orch/taskfile"
)

// NotFoundError: no such task (exit 3).
type NotFoundError struct {
	What string // "task"
	Ref  string
	Next Next   // what to do next; cmd/orch words it
	Hint string // for doors outside workflow, which word their own; workflow itself sets Next
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no %s %q", e.What, e.Ref)
}

// AmbiguousError: a prefix matches several tasks (exit 2).
type AmbiguousError struct {
	Prefix  string
	Matches []string
}

func (e *AmbiguousError) Error() string {
	shown := e.Matches
	if len(shown) > 5 {
		shown = append(append([]string{}, shown[:5]...), "...")
	}
	return fmt.Sprintf("%q matches %d tasks: %s", e.Prefix, len(e.Matches), strings.Join(shown, ", "))
}

// UsageError: bad arguments (exit 2).
type UsageError struct {
	Msg  string
	Next Next   // what to do next; cmd/orch words it
	Hint string // for doors outside workflow, which word their own; workflow itself sets Next
}

func (e *UsageError) Error() string { return e.Msg }

// TextTooLongError: a text given to a verb is larger than its limit (exit
// 2): taskfile.MaxText for one text, refusal.MaxBytes for a refusal's texts
// together. Nothing is recorded. It is a usage error (errors.As finds a
// *UsageError in it), so every door that treats those as the caller's
// mistake treats it so too.
type TextTooLongError struct {
	Field string // which text, as the verb names it: "the message (-m)", "issue 2's problem"
	Size  int    // its bytes
	Limit int
	Next  Next
}

func (e *TextTooLongError) Error() string {
	return fmt.Sprintf("%s is %d bytes; the limit is %d bytes (%d KiB)", e.Field, e.Size, e.Limit, e.Limit>>10)
}

// As lets errors.As find the usage error this is.
func (e *TextTooLongError) As(target any) bool {
	if u, ok := target.(**UsageError); ok {
		*u = &UsageError{Msg: e.Error(), Next: e.Next}
		return true
	}
	return false
}

// RuleError: refused by a rule of the workflow (exit 4).
type RuleError struct {
	Rule string // short machine name, e.g. "lockout", "submit_unchanged"
	Msg  string
	Next Next   // what to do next; cmd/orch words it
	Hint string // for doors outside workflow, which word their own; workflow itself sets Next
}

func (e *RuleError) Error() string { return e.Msg }

// IllegalTransitionError: the verb cannot act on a task in its queue (exit 4).
type IllegalTransitionError struct {
	Task  string
	Queue taskfile.Queue
	Verb  string
	Legal []string
}

func (e *IllegalTransitionError) Error() string {
	legal := "none: the task is finished"
	if len(e.Legal) > 0 {
		legal = strings.Join(e.Legal, ", ")
	}
	return fmt.Sprintf("cannot %s %s: it is %s (verbs allowed from %s: %s)", e.Verb, e.Task, e.Queue, e.Queue, legal)
}

// ConflictError: a hand edit in conflict, or a race that could not be
// retried (exit 5).
type ConflictError struct {
	Msg  string
	Next Next
}

func (e *ConflictError) Error() string { return e.Msg }

// NotInitializedError: the repository has no state branch yet.
type NotInitializedError struct{ Ref string }

func (e *NotInitializedError) Error() string {
	return fmt.Sprintf("orch is not set up in this repository (no %s branch)", strings.TrimPrefix(e.Ref, "refs/heads/"))
}

// NothingToClaimError: no task is ready for this agent (exit 3).
type NothingToClaimError struct {
	Reasons []string
}

func (e *NothingToClaimError) Error() string {
	if len(e.Reasons) == 0 {
		return "nothing to claim: no task is ready"
	}
	return "nothing to claim: " + strings.Join(e.Reasons, "; ")
}

// InvalidFileError: a task file or config that does not parse or validate
// (exit 1). Problems carry file and line.
type InvalidFileError struct {
	Problems []*taskfile.ParseError
}

func (e *InvalidFileError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// SetupError is a repository orch is not set up right for (exit 1): a
// base branch that does not exist. Next says how to set it up.
type SetupError struct {
	Msg  string
	Next Next
}

func (e *SetupError) Error() string { return e.Msg }

// ExternalError is a tool orch relies on (gh, git) failing (exit 1).
type ExternalError struct {
	Msg  string
	Next Next
}

func (e *ExternalError) Error() string { return e.Msg }
