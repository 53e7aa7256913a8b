package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/refusal"
	"github.com/orch-tool/orch/workflow"
)

type refuseOptions struct {
	g              *globalOptions
	File           string
	Reason         string
	Summary        string
	Detail         string
	Attempted      []string
	BlockingFactor string
	Evidence       []string
	Alternative    string
	AltTasks       []string
	OriginalScope  string
	GrowthFactor   string
}

func newRefuseCmd(g *globalOptions) *cobra.Command {
	o := &refuseOptions{g: g}
	cmd := &cobra.Command{
		Use:   "refuse [ID] (-F FILE|- | --reason R --summary S --attempted A... --blocking-factor B --alternative ALT ...)",
		Short: "Refuse a claimed task with a structured, evidenced reason",
		Long: `Refuse a task you claimed, under the Agent Rejection Protocol. ` + workflow.TransitionHelp("refuse") + `

Reasons: BLOCKER, SCOPE_CREEP, MISSING_DEPENDENCY, INFEASIBLE,
UNCLEAR_REQUIREMENTS. The record comes from -F (the protocol's JSON:
reason_type, reason_summary, reason_detail, what_attempted, blocking_factor,
evidence [{type, data, source}], suggested_alternative, alternative_tasks
[{title, scope, dependencies, estimate}], task_original_scope,
scope_growth_factor) or from the flags.

The record's identity fields are optional: task_id must name the task refused
("T-4k9x2m" or the protocol's "task:T-4k9x2m"; else a usage error), agent_id
must be the agent refusing (else refused: a record cannot speak for someone
else); handoff_id and rejected_at are kept as written in the event log.
Without ID, the task is the worktree's, else the record's task_id.

The validator needs at least 2 attempts, at least one concrete; a specific
blocking factor (15+ characters, no "too complex"); an actionable alternative
(20+ characters, not "ask someone else"); and per reason: BLOCKER evidence of
type error_log, status_check or api_response; SCOPE_CREEP the original scope, a
growth factor of 2 or more and 2+ alternative tasks; MISSING_DEPENDENCY
"depends on X" in the blocking factor and "required because" in the detail;
INFEASIBLE 2+ pieces of evidence, "conflict" in the detail and a reformulation
of 50+ characters; UNCLEAR_REQUIREMENTS questions ("?") and "interpreted as"
in the detail. An invalid refusal exits 4 listing every failed rule, is logged
as refuse.invalid, and the task stays claimed: keep working. A valid one moves
the task to blocked for orch decide.`,
		Example: `  orch refuse T-8rjy5d -F refusal.json
  orch refuse --reason BLOCKER --summary "Staging DB is down" \
    --attempted "Ran the migration against staging: connection refused on 5432" \
    --attempted "Checked the status page: the staging cluster is in maintenance" \
    --blocking-factor "The staging database refuses connections until maintenance ends" \
    --evidence 'status_check:status.example.com shows staging-db in maintenance until 18:00' \
    --alternative "Run the migration after 18:00, or against a local copy of the schema"`,
		Args: maxArgs(1, "refuse [ID] (-F FILE|- | flags)"),
		RunE: func(cmd *cobra.Command, args []string) error { return runRefuse(o, argOr(args, 0)) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "file", "F", "", "read the protocol's JSON record from `FILE` (- for stdin)")
	f.StringVar(&o.Reason, "reason", "", "BLOCKER, SCOPE_CREEP, MISSING_DEPENDENCY, INFEASIBLE or UNCLEAR_REQUIREMENTS")
	f.StringVar(&o.Summary, "summary", "", "one line: why")
	f.StringVar(&o.Detail, "detail", "", "the full explanation")
	f.StringArrayVar(&o.Attempted, "attempted", nil, "one concrete thing you tried (repeatable)")
	f.StringVar(&o.BlockingFactor, "blocking-factor", "", "the specific thing that blocks the task")
	f.StringArrayVar(&o.Evidence, "evidence", nil, "'TYPE:DATA' (error_log, status_check, api_response, ...; repeatable)")
	f.StringVar(&o.Alternative, "alternative", "", "what to do instead")
	f.StringArrayVar(&o.AltTasks, "alt-task", nil, "'TITLE|SCOPE|DEPENDENCIES|ESTIMATE' (repeatable)")
	f.StringVar(&o.OriginalScope, "original-scope", "", "the task's scope as written (SCOPE_CREEP)")
	f.StringVar(&o.GrowthFactor, "growth-factor", "", "how many times larger the real scope is (SCOPE_CREEP)")
	return cmd
}

func (o *refuseOptions) record() (*refusal.Record, error) {
	if o.File != "" {
		if o.Reason != "" || o.Summary != "" || len(o.Attempted) > 0 || o.BlockingFactor != "" || o.Alternative != "" {
			return nil, &workflow.UsageError{Msg: "give the refusal with -F or with flags, not both"}
		}
		data, err := o.g.readInput(o.File)
		if err != nil {
			return nil, err
		}
		r, err := refusal.Parse(data)
		if err != nil {
			return nil, &workflow.UsageError{Msg: o.File + ": " + err.Error(), Hint: "orch refuse --help lists the record's fields"}
		}
		return r, nil
	}
	if o.Reason == "" {
		return nil, &workflow.UsageError{Msg: "a refusal needs -F FILE or at least --reason", Hint: "orch refuse --help shows the fields and the rules"}
	}
	r := &refusal.Record{
		ReasonType: refusal.Reason(strings.ToUpper(o.Reason)), ReasonSummary: o.Summary, ReasonDetail: o.Detail,
		WhatAttempted: o.Attempted, BlockingFactor: o.BlockingFactor, SuggestedAlternative: o.Alternative, TaskOriginalScope: o.OriginalScope,
	}
	for _, ev := range o.Evidence {
		typ, data, ok := strings.Cut(ev, ":")
		if !ok || strings.TrimSpace(typ) == "" {
			return nil, &workflow.UsageError{Msg: fmt.Sprintf("--evidence %q: want TYPE:DATA", ev)}
		}
		r.Evidence = append(r.Evidence, refusal.Evidence{Type: strings.TrimSpace(typ), Data: strings.TrimSpace(data)})
	}
	for _, at := range o.AltTasks {
		p := strings.Split(at, "|")
		for len(p) < 4 {
			p = append(p, "")
		}
		r.AlternativeTasks = append(r.AlternativeTasks, refusal.AlternativeTask{Title: strings.TrimSpace(p[0]), Scope: strings.TrimSpace(p[1]), Dependencies: strings.TrimSpace(p[2]), Estimate: strings.TrimSpace(p[3])})
	}
	if o.GrowthFactor != "" {
		g, err := strconv.ParseFloat(o.GrowthFactor, 64)
		if err != nil || g < 0 {
			return nil, &workflow.UsageError{Msg: fmt.Sprintf("--growth-factor %q is not a number", o.GrowthFactor)}
		}
		r.ScopeGrowthFactor = g
	}
	return r, nil
}

func runRefuse(o *refuseOptions, ref string) error {
	r, err := o.record()
	if err != nil {
		return err
	}
	if ref == "" && r.TaskID != "" {
		// Outside a task's worktree, the record says which task it is about.
		return o.g.run(func(e *workflow.Engine) (printer, error) {
			s, err := e.Lookup("")
			if err != nil {
				if s, err = e.Lookup(refusal.TaskRef(r.TaskID)); err != nil {
					return nil, err
				}
			}
			res, err := e.Refuse(s.Task.ID, r)
			if err != nil {
				return nil, err
			}
			return func(out *output) error { return out.printTransition(e, "refuse", res) }, nil
		})
	}
	return o.g.taskVerb(ref, "refuse", func(e *workflow.Engine, id string) (*workflow.Result, error) {
		return e.Refuse(id, r)
	})
}
