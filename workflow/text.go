package workflow

import (
	"fmt"
	"strings"

	"github.com/orch-tool/orch/ghreview"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/refusal"
	"github.com/orch-tool/orch/taskfile"
)

// The one limit on text, taskfile.MaxText, is applied here. Every Engine
// method that takes text to write (into a task file, the messages/ inbox,
// the event log or a commit message) passes each text through checkTexts
// before it reads or changes anything; the doors (the command line, orch
// mcp, the board) call those methods, so none needs a check of its own.

// namedText is one text a verb was given, named as the person gave it,
// where the verb keeps it (checkTexts cleans it in place).
type namedText struct {
	field string
	text  *string
}

// checkTexts makes the control characters of every text visible
// (text.Visible: a note an agent wrote reaches terminals and the next
// agent's prompt), then refuses the first text over taskfile.MaxText bytes.
func checkTexts(texts ...namedText) error {
	for _, t := range texts {
		*t.text = text.Visible(*t.text)
		if len(*t.text) > taskfile.MaxText {
			return &TextTooLongError{Field: t.field, Size: len(*t.text), Limit: taskfile.MaxText, Next: Next{Advice: AdviseShortenText}}
		}
	}
	return nil
}

// reviewTexts are the texts of a review that are written down (severities
// and re-opened IDs are matched against known names, never written as
// given).
func reviewTexts(in *ReviewInput) []namedText {
	var out []namedText
	for i := range in.Issues {
		is := &in.Issues[i]
		for _, f := range []namedText{{"title", &is.Title}, {"location", &is.Location}, {"problem", &is.Problem}, {"fix", &is.Fix}, {"why", &is.Why}, {"id", &is.ID}, {"fix_patch", &is.FixPatch}} {
			out = append(out, namedText{fmt.Sprintf("issue %d's %s", i+1, f.field), f.text})
		}
	}
	return append(out, namedText{"the review's notes (-m, or notes in -F)", &in.Notes})
}

// refusalTexts are the texts of a refusal record, each named by its field
// and the flag that gives it.
func refusalTexts(r *refusal.Record) []namedText {
	field := func(name, flag string) string {
		if flag == "" {
			return "the refusal's " + name
		}
		return "the refusal's " + name + " (" + flag + ")"
	}
	// The reason's type is one of five names (the validator refuses any
	// other), so a copy of it is only measured.
	reasonType := string(r.ReasonType)
	out := []namedText{
		{field("task_id", ""), &r.TaskID}, {field("handoff_id", ""), &r.HandoffID}, {field("agent_id", ""), &r.AgentID}, {field("rejected_at", ""), &r.RejectedAt},
		{field("reason_type", "--reason"), &reasonType},
		{field("reason_summary", "--summary"), &r.ReasonSummary},
		{field("reason_detail", "--detail"), &r.ReasonDetail},
	}
	for i := range r.WhatAttempted {
		out = append(out, namedText{field(fmt.Sprintf("what_attempted, item %d", i+1), "--attempted"), &r.WhatAttempted[i]})
	}
	out = append(out, namedText{field("blocking_factor", "--blocking-factor"), &r.BlockingFactor})
	for i := range r.Evidence {
		ev := &r.Evidence[i]
		for _, f := range []namedText{{"type", &ev.Type}, {"data", &ev.Data}, {"source", &ev.Source}} {
			out = append(out, namedText{field(fmt.Sprintf("evidence, item %d: %s", i+1, f.field), "--evidence"), f.text})
		}
	}
	out = append(out, namedText{field("suggested_alternative", "--alternative"), &r.SuggestedAlternative})
	for i := range r.AlternativeTasks {
		at := &r.AlternativeTasks[i]
		for _, f := range []namedText{{"title", &at.Title}, {"scope", &at.Scope}, {"dependencies", &at.Dependencies}, {"estimate", &at.Estimate}} {
			out = append(out, namedText{field(fmt.Sprintf("alternative_tasks, item %d: %s", i+1, f.field), "--alt-task"), f.text})
		}
	}
	return append(out, namedText{field("task_original_scope", "--original-scope"), &r.TaskOriginalScope})
}

// checkRefusalTexts applies the limit to each text of a refusal, and
// refusal.MaxBytes to all of them together: the whole record is copied into
// the event log, and flags (or orch mcp's lists) could otherwise give as
// many texts as they like.
func checkRefusalTexts(r *refusal.Record) error {
	texts := refusalTexts(r)
	if err := checkTexts(texts...); err != nil {
		return err
	}
	total := 0
	for _, t := range texts {
		total += len(*t.text)
	}
	if total > refusal.MaxBytes {
		return &TextTooLongError{Field: "the refusal (its texts together)", Size: total, Limit: refusal.MaxBytes,
			Next: Next{Advice: AdviseShortenLog}}
	}
	return nil
}

// gitHubTexts are the bodies of a pull request's reviews and comments.
// ghreview refuses larger ones as it reads them; this holds for reviews
// that reach the Engine any other way.
func gitHubTexts(reviews []ghreview.Review, comments []ghreview.Comment) []namedText {
	var out []namedText
	for i := range reviews {
		out = append(out, namedText{fmt.Sprintf("GitHub review %d's body", reviews[i].ID), &reviews[i].Body})
	}
	for i := range comments {
		out = append(out, namedText{fmt.Sprintf("GitHub comment %d's body", comments[i].ID), &comments[i].Body})
	}
	return out
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// clipArg shortens a hostile argument for a message that quotes it with %q.
func clipArg(s string) string { return text.Clip(s, 80) }

// printable quotes control characters so that a hostile argument cannot
// write escape sequences to the terminal through an error message.
func printable(s string) string {
	s = text.Clip(s, 80)
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}
