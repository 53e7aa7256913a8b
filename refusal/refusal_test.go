package refusal

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The validator's messages, copied from agent-refusal-protocol.md (and, for
// the ones the protocol has no wording for, from refusal.go's documentation).
// They are literals on purpose: a typo in refusal.go must fail here.
const (
	refusalWantFewAttempts   = "Insufficient effort demonstrated. Must document at least 2 concrete attempts."
	refusalWantVagueAttempts = "Attempts are too vague. At least 1 must be concrete and specific."

	refusalWantNoReason = "Must specify reason_type: one of BLOCKER, SCOPE_CREEP, MISSING_DEPENDENCY, INFEASIBLE, UNCLEAR_REQUIREMENTS."

	refusalWantBlockerNoEvidence       = "BLOCKER rejection requires evidence (error logs, status checks, etc.)"
	refusalWantBlockerEvidenceConcrete = "BLOCKER evidence must include error logs or status checks."

	refusalWantScopeNoOriginal    = "SCOPE_CREEP requires documenting original scope."
	refusalWantScopeGrowth        = "SCOPE_CREEP requires demonstrating at least 2x complexity increase. Provide scope_growth_factor with evidence."
	refusalWantScopeDecomposition = "SCOPE_CREEP requires suggesting task decomposition (at least 2 sub-tasks)."

	refusalWantDependencyUnnamed = "MISSING_DEPENDENCY must identify specific dependency (task ID or decision ID)."
	refusalWantDependencyWhy     = "MISSING_DEPENDENCY should explain why dependency is a hard requirement."

	refusalWantInfeasibleEvidence    = "INFEASIBLE has highest burden of proof. Must provide at least 2 pieces of evidence demonstrating logical impossibility."
	refusalWantInfeasibleConflict    = "INFEASIBLE must cite conflicting constraints that make task impossible."
	refusalWantInfeasibleReformulate = "INFEASIBLE must suggest detailed reformulation that IS feasible."

	refusalWantUnclearQuestions      = "UNCLEAR_REQUIREMENTS must list specific questions that need answers."
	refusalWantUnclearInterpretation = "UNCLEAR_REQUIREMENTS should document attempted interpretations."

	refusalWantNoBlockingFactor    = "Must specify blocking_factor."
	refusalWantShortBlockingFactor = "Blocking factor is too vague. Be specific."
	refusalWantVagueBlockingFactor = "Blocking factor contains vague language. Must be concrete and measurable."

	refusalWantNoAlternative      = "Must provide suggested_alternative."
	refusalWantShortAlternative   = "Suggested alternative is too vague. Provide specific actionable steps."
	refusalWantGenericAlternative = "Suggestion is too generic. Provide concrete actionable steps or task breakdown."
)

// refusalValid is a valid refusal for reason; each rule's cases change one
// thing in it.
func refusalValid(reason Reason) *Record {
	r := &Record{
		ReasonType:    reason,
		ReasonSummary: "Staging auth API is down",
		ReasonDetail:  "Every call to the staging auth API fails.",
		WhatAttempted: []string{
			"Ran go test ./auth/... - 12 failures in session_test.go",
			"Searched the repository for the OAuth client configuration - not found",
		},
		BlockingFactor:       "The staging auth API returns 503 for every request",
		SuggestedAlternative: "Have ops restart the staging auth service, then rerun the login tests",
	}
	switch reason {
	case Blocker:
		r.Evidence = []Evidence{{Type: "error_log", Data: "ConnectionError: API endpoint returned 503", Source: "attempt to call auth API"}}
	case ScopeCreep:
		r.BlockingFactor = "Cannot add OAuth without refactoring auth for extensibility"
		r.TaskOriginalScope = "Add OAuth button to login page (2h)"
		r.ScopeGrowthFactor = 8
		r.AlternativeTasks = []AlternativeTask{
			{Title: "Refactor auth module", Scope: "Extract provider interface", Dependencies: "none", Estimate: "8h"},
			{Title: "Add OAuth provider", Scope: "Implement OAuth plugin", Dependencies: "auth refactor", Estimate: "4h"},
		}
	case MissingDependency:
		r.BlockingFactor = "The export endpoint depends on T-4k2m9x (the payments schema migration)."
		r.ReasonDetail = "The new columns are required because the export reads them; they do not exist before T-4k2m9x."
	case Infeasible:
		r.BlockingFactor = "The v2 client cannot emit the v1 wire format"
		r.ReasonDetail = `"Stay backwards compatible with v1 clients" conflicts with "use the v2 API only".`
		r.Evidence = []Evidence{
			{Type: "conflict", Data: "v2 client has no v1 encoder", Source: "client/v2/encode.go"},
			{Type: "error_log", Data: "v1 client: unknown field \"envelope\"", Source: "integration test"},
		}
		r.SuggestedAlternative = "Keep the v1 wire format and add the v2 client behind a flag, migrating callers one at a time"
	case UnclearRequirements:
		r.BlockingFactor = "The issue names no metric or target for search speed"
		r.ReasonDetail = "Which metric should improve: p95 latency or throughput? I interpreted as p95 latency of /search under 200ms."
	}
	return r
}

func TestRefusalValidBases(t *testing.T) {
	for _, reason := range Reasons() {
		if got := Validate(refusalValid(reason)); len(got) != 0 {
			t.Errorf("%s: valid base refusal has issues: %q", reason, got)
		}
	}
}

func TestRefusalRules(t *testing.T) {
	type tc struct {
		name   string
		reason Reason
		change func(r *Record)
		want   []string // nil: valid
	}
	cases := []tc{
		// At least 2 attempts.
		{"attempts/two pass", Blocker, func(r *Record) {}, nil},
		{"attempts/one fails", Blocker, func(r *Record) { r.WhatAttempted = r.WhatAttempted[:1] }, []string{refusalWantFewAttempts}},
		{"attempts/blank one does not count", Blocker, func(r *Record) { r.WhatAttempted[1] = " \t " }, []string{refusalWantFewAttempts}},
		{"attempts/none fails both rules", Blocker, func(r *Record) { r.WhatAttempted = nil }, []string{refusalWantFewAttempts, refusalWantVagueAttempts}},

		// At least 1 concrete attempt.
		{"concrete/one of two pass", Blocker, func(r *Record) { r.WhatAttempted[0] = "Looked at auth/session.go" }, nil},
		{"concrete/all vague fails", Blocker, func(r *Record) {
			r.WhatAttempted = []string{"Looked at the code", "Checked the docs", "Considered a rewrite"}
		}, []string{refusalWantVagueAttempts}},
		{"concrete/case and line breaks do not hide a phrase", Blocker, func(r *Record) {
			r.WhatAttempted = []string{"TRIED TO run the tests", "Tried\n  to read the logs"}
		}, []string{refusalWantVagueAttempts}},

		// reason_type.
		{"reason/missing fails", "", func(r *Record) {}, []string{refusalWantNoReason}},
		{"reason/unknown fails", "blocker", func(r *Record) {},
			[]string{`Unknown reason_type "blocker". It must be one of BLOCKER, SCOPE_CREEP, MISSING_DEPENDENCY, INFEASIBLE, UNCLEAR_REQUIREMENTS.`}},

		// BLOCKER: evidence, of a concrete type.
		{"blocker/status_check pass", Blocker, func(r *Record) { r.Evidence = []Evidence{{Type: "status_check", Data: "status page: auth degraded"}} }, nil},
		{"blocker/api_response pass", Blocker, func(r *Record) { r.Evidence = []Evidence{{Type: "api_response", Data: `{"status":503}`}} }, nil},
		{"blocker/no evidence fails", Blocker, func(r *Record) { r.Evidence = nil }, []string{refusalWantBlockerNoEvidence}},
		{"blocker/blank evidence is no evidence", Blocker, func(r *Record) { r.Evidence[0].Data = "  " }, []string{refusalWantBlockerNoEvidence}},
		{"blocker/only other types fails", Blocker, func(r *Record) {
			r.Evidence = []Evidence{{Type: "file_analysis", Data: "47 files"}, {Type: "Error_Log", Data: "503"}}
		}, []string{refusalWantBlockerEvidenceConcrete}},

		// SCOPE_CREEP: original scope, growth >= 2, >= 2 sub-tasks.
		{"scope/original pass", ScopeCreep, func(r *Record) {}, nil},
		{"scope/no original fails", ScopeCreep, func(r *Record) { r.TaskOriginalScope = " " }, []string{refusalWantScopeNoOriginal}},
		{"scope/growth exactly 2 pass", ScopeCreep, func(r *Record) { r.ScopeGrowthFactor = 2 }, nil},
		{"scope/growth 1.99 fails", ScopeCreep, func(r *Record) { r.ScopeGrowthFactor = 1.99 }, []string{refusalWantScopeGrowth}},
		{"scope/growth absent fails", ScopeCreep, func(r *Record) { r.ScopeGrowthFactor = 0 }, []string{refusalWantScopeGrowth}},
		{"scope/two sub-tasks pass", ScopeCreep, func(r *Record) {}, nil},
		{"scope/one sub-task fails", ScopeCreep, func(r *Record) { r.AlternativeTasks = r.AlternativeTasks[:1] }, []string{refusalWantScopeDecomposition}},
		{"scope/untitled sub-task does not count", ScopeCreep, func(r *Record) { r.AlternativeTasks[1].Title = "" }, []string{refusalWantScopeDecomposition}},

		// MISSING_DEPENDENCY: names the dependency, says why it is required.
		{"dependency/named pass", MissingDependency, func(r *Record) { r.BlockingFactor = "Export DEPENDS ON the billing schema decision" }, nil},
		{"dependency/not named fails", MissingDependency, func(r *Record) { r.BlockingFactor = "Needs the payments schema migration first" }, []string{refusalWantDependencyUnnamed}},
		{"dependency/nothing after depends on fails", MissingDependency, func(r *Record) { r.BlockingFactor = "The export endpoint depends on." }, []string{refusalWantDependencyUnnamed}},
		{"dependency/why pass", MissingDependency, func(r *Record) { r.ReasonDetail = "It is Required\nBecause the columns are missing." }, nil},
		{"dependency/why missing fails", MissingDependency, func(r *Record) { r.ReasonDetail = "The columns are missing." }, []string{refusalWantDependencyWhy}},

		// INFEASIBLE: >= 2 evidence, cites the conflict, reformulation >= 50.
		{"infeasible/two evidence pass", Infeasible, func(r *Record) {}, nil},
		{"infeasible/one evidence fails", Infeasible, func(r *Record) { r.Evidence = r.Evidence[:1] }, []string{refusalWantInfeasibleEvidence}},
		{"infeasible/conflict pass", Infeasible, func(r *Record) { r.ReasonDetail = "The two constraints CONFLICT." }, nil},
		{"infeasible/no conflict fails", Infeasible, func(r *Record) { r.ReasonDetail = "It cannot be done." }, []string{refusalWantInfeasibleConflict}},
		{"infeasible/reformulation of 50 pass", Infeasible, func(r *Record) { r.SuggestedAlternative = "Ship v2 behind a flag " + strings.Repeat("x", 28) }, nil},
		{"infeasible/reformulation of 49 fails", Infeasible, func(r *Record) { r.SuggestedAlternative = "Ship v2 behind a flag " + strings.Repeat("x", 27) }, []string{refusalWantInfeasibleReformulate}},
		{"infeasible/no reformulation fails twice", Infeasible, func(r *Record) { r.SuggestedAlternative = "" }, []string{refusalWantInfeasibleReformulate, refusalWantNoAlternative}},

		// UNCLEAR_REQUIREMENTS: questions, attempted interpretation.
		{"unclear/questions pass", UnclearRequirements, func(r *Record) {}, nil},
		{"unclear/no question fails", UnclearRequirements, func(r *Record) {
			r.ReasonDetail = "The metric is not given. I interpreted as p95 latency."
		}, []string{refusalWantUnclearQuestions}},
		{"unclear/interpretation pass", UnclearRequirements, func(r *Record) { r.ReasonDetail = "Latency or throughput? Interpreted As latency." }, nil},
		{"unclear/no interpretation fails", UnclearRequirements, func(r *Record) { r.ReasonDetail = "Latency or throughput?" }, []string{refusalWantUnclearInterpretation}},

		// Blocking factor: present, >= 15 characters, no vague language.
		{"factor/missing fails", Blocker, func(r *Record) { r.BlockingFactor = "" }, []string{refusalWantNoBlockingFactor}},
		{"factor/blank fails", Blocker, func(r *Record) { r.BlockingFactor = " \n " }, []string{refusalWantNoBlockingFactor}},
		{"factor/15 characters pass", Blocker, func(r *Record) { r.BlockingFactor = "Port 5432 shut." }, nil},
		{"factor/14 characters fails", Blocker, func(r *Record) { r.BlockingFactor = "Port 5432 shut" }, []string{refusalWantShortBlockingFactor}},
		{"factor/length counts characters, not bytes", Blocker, func(r *Record) { r.BlockingFactor = strings.Repeat("é", 14) }, []string{refusalWantShortBlockingFactor}},
		{"factor/length ignores outer white space", Blocker, func(r *Record) { r.BlockingFactor = "  Port 5432 shut  " }, []string{refusalWantShortBlockingFactor}},
		{"factor/concrete pass", Blocker, func(r *Record) { r.BlockingFactor = "Requires changes to 47 files across 8 modules" }, nil},
		{"factor/too complex fails", Blocker, func(r *Record) { r.BlockingFactor = "The auth module is Too Complex to change safely" }, []string{refusalWantVagueBlockingFactor}},
		{"factor/not sure across a line break fails", Blocker, func(r *Record) { r.BlockingFactor = "I am not\nsure which endpoint to call here" }, []string{refusalWantVagueBlockingFactor}},
		{"factor/short and vague reports vague only", Blocker, func(r *Record) { r.BlockingFactor = "unclear" }, []string{refusalWantVagueBlockingFactor}},

		// Alternative: present, >= 20 characters.
		{"alternative/missing fails", Blocker, func(r *Record) { r.SuggestedAlternative = "" }, []string{refusalWantNoAlternative}},
		{"alternative/20 characters pass", Blocker, func(r *Record) { r.SuggestedAlternative = "Restart auth on stg." }, nil},
		{"alternative/19 characters fails", Blocker, func(r *Record) { r.SuggestedAlternative = "Restart auth on stg" }, []string{refusalWantShortAlternative}},

		// Alternative: not generic unless it comes with a task breakdown.
		{"generic/with alternative tasks pass", Blocker, func(r *Record) {
			r.SuggestedAlternative = "Ask someone else to do it"
			r.AlternativeTasks = []AlternativeTask{{Title: "Restore staging auth service"}}
		}, nil},
		{"generic/ask someone else fails", Blocker, func(r *Record) { r.SuggestedAlternative = "Ask someone else to do it" }, []string{refusalWantGenericAlternative}},
		{"generic/get more context fails", Blocker, func(r *Record) { r.SuggestedAlternative = "Get more context from the team" }, []string{refusalWantGenericAlternative}},
		{"generic/try again later fails", Blocker, func(r *Record) { r.SuggestedAlternative = "Try again later when it is back up" }, []string{refusalWantGenericAlternative}},
		{"generic/short and generic fails twice", Blocker, func(r *Record) { r.SuggestedAlternative = "Ask the user" }, []string{refusalWantShortAlternative, refusalWantGenericAlternative}},
		{"generic/bare break into smaller tasks fails", Blocker, func(r *Record) { r.SuggestedAlternative = "Break into smaller tasks" }, []string{refusalWantGenericAlternative}},
		{"generic/breakdown spelled out pass", Blocker, func(r *Record) {
			r.SuggestedAlternative = "Clarify requirements with product, then break into: (1) API schema, (2) login UI"
		}, nil},
		{"generic/untitled tasks are no breakdown", Blocker, func(r *Record) {
			r.SuggestedAlternative = "Ask someone else to do it"
			r.AlternativeTasks = []AlternativeTask{{Scope: "whatever"}}
		}, []string{refusalWantGenericAlternative}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := refusalValid(c.reason)
			c.change(r)
			got := Validate(r)
			if !slices.Equal(got, c.want) {
				t.Errorf("Validate:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestRefusalEveryRuleReportedInOrder(t *testing.T) {
	r := &Record{ReasonType: ScopeCreep}
	want := []string{refusalWantFewAttempts, refusalWantVagueAttempts, refusalWantScopeNoOriginal, refusalWantScopeGrowth, refusalWantScopeDecomposition, refusalWantNoBlockingFactor, refusalWantNoAlternative}
	if got := Validate(r); !slices.Equal(got, want) {
		t.Errorf("Validate(empty SCOPE_CREEP):\n got %q\nwant %q", got, want)
	}
	if got := Validate(nil); len(got) != 1 {
		t.Errorf("Validate(nil) = %q, want one issue", got)
	}
}

// The protocol's worked example "Agent Rejects Task Due to Scope Creep"
// (agent-refusal-protocol.md, Example Usage Flow), its data verbatim.
func refusalScopeCreepJSON(t testing.TB) []byte {
	record := map[string]any{
		"reason_type":    "SCOPE_CREEP",
		"reason_summary": "Add OAuth login requires auth system redesign",
		"reason_detail": `
Original task: "Add OAuth login button to login page"

Investigation revealed this requires:
1. Refactoring entire auth module for plugin architecture
2. Updating 23 API endpoints to support multiple auth methods
3. Migrating existing user sessions to new auth system
4. Updating 89 test files

Original scope: Add UI button and OAuth flow (~2 hours)
Actual scope: Auth system redesign (~16-20 hours)

Scope growth factor: 8-10x
`,
		"what_attempted": []string{
			"Analyzed auth/ module structure - 47 files, 12,000 LOC",
			"Reviewed existing tests - 89 test files to update",
			"Checked API documentation - 23 endpoints need changes",
			"Estimated effort - 16-20 hours for complete implementation",
		},
		"blocking_factor": "Cannot add OAuth without refactoring auth module for extensibility",
		"evidence": []any{
			map[string]any{
				"type":   "file_analysis",
				"data":   map[string]any{"files_requiring_changes": 47, "lines_of_code": 12000},
				"source": "static analysis of auth/ module",
			},
			map[string]any{
				"type":   "complexity_metric",
				"data":   map[string]any{"test_files_to_update": 89, "api_endpoints_affected": 23},
				"source": "impact analysis",
			},
			map[string]any{
				"type":   "time_estimate",
				"data":   map[string]any{"original_estimate_hours": 2, "revised_estimate_hours": 18},
				"source": "engineering judgment",
			},
		},
		"suggested_alternative": `
Decompose into 3 sequential tasks:

1. Refactor auth module for plugin architecture (8 hours)
   - Extract interface for auth providers
   - Migrate existing password auth to plugin
   - Update tests for new architecture

2. Add OAuth provider plugin (4 hours)
   - Implement OAuth plugin using new interface
   - Add OAuth-specific tests
   - Document OAuth configuration

3. Add OAuth UI and flows (2 hours)
   - Add OAuth button to login page
   - Implement OAuth redirect flows
   - Update user documentation
`,
		"alternative_tasks": []map[string]string{
			{
				"title":        "Refactor auth module for plugin architecture",
				"scope":        "Extract auth provider interface, migrate existing auth",
				"dependencies": "none",
				"estimate":     "8 hours",
			},
			{
				"title":        "Implement OAuth provider plugin",
				"scope":        "Add OAuth using new plugin interface",
				"dependencies": "Requires auth refactor task",
				"estimate":     "4 hours",
			},
			{
				"title":        "Add OAuth UI and user flows",
				"scope":        "Add login button, redirect flows, documentation",
				"dependencies": "Requires OAuth plugin task",
				"estimate":     "2 hours",
			},
		},
		"task_original_scope": "Add OAuth login button to login page (~2 hours)",
		"scope_growth_factor": 9.0,
	}
	data, err := json.MarshalIndent(record, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The protocol's worked example "Agent Attempts Lazy Rejection (Gets
// Overridden)", its data verbatim.
const refusalLazyJSON = `{
  "reason_type": "BLOCKER",
  "reason_summary": "Too complex",
  "reason_detail": "This task is too complex for me to handle.",
  "what_attempted": [
    "Looked at the code",
    "Tried to understand it"
  ],
  "blocking_factor": "It's confusing",
  "evidence": [],
  "suggested_alternative": "Ask someone else to do it"
}
`

func TestRefusalWorkedExampleScopeCreepIsValid(t *testing.T) {
	r, err := Parse(refusalScopeCreepJSON(t))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := Validate(r); len(got) != 0 {
		t.Fatalf("the protocol's scope-creep example must be valid; issues: %q", got)
	}
	if r.ReasonType != ScopeCreep || r.ScopeGrowthFactor != 9 || len(r.AlternativeTasks) != 3 || len(r.WhatAttempted) != 4 {
		t.Errorf("parsed record: %+v", r)
	}
	if want := `{"files_requiring_changes":47,"lines_of_code":12000}`; r.Evidence[0].Data != want {
		t.Errorf("evidence[0].data = %q, want %q", r.Evidence[0].Data, want)
	}
	if r.AlternativeTasks[1].Dependencies != "Requires auth refactor task" {
		t.Errorf("alternative_tasks[1] = %+v", r.AlternativeTasks[1])
	}
	// The protocol's result for this example: ACCEPT_AND_DECOMPOSE.
	if got := DefaultDecision(r.ReasonType); got != "decompose" {
		t.Errorf("DefaultDecision = %q, want decompose", got)
	}
}

// The summary's "Creating a Valid Rejection" example, its data verbatim.
func TestRefusalWorkedExampleSummaryIsValid(t *testing.T) {
	data := `{
  "reason_type": "SCOPE_CREEP",
  "reason_summary": "Task requires auth system redesign",
  "reason_detail": "Original: Add button. Actual: Redesign auth module.",
  "what_attempted": [
    "Analyzed auth/ module - 47 files need changes",
    "Reviewed tests - 89 test files affected",
    "Estimated effort - 16 hours vs 2 hours originally"
  ],
  "blocking_factor": "Cannot add OAuth without refactoring auth for extensibility",
  "suggested_alternative": "Decompose into: refactor auth, add OAuth, add UI",
  "alternative_tasks": [
    {"title": "Refactor auth module", "scope": "Extract provider interface", "dependencies": "none", "estimate": "8h"},
    {"title": "Add OAuth provider", "scope": "Implement OAuth plugin", "dependencies": "auth refactor", "estimate": "4h"}
  ],
  "task_original_scope": "Add OAuth button to login page (2h)",
  "scope_growth_factor": 8.0
}`
	r, err := Parse([]byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := Validate(r); len(got) != 0 {
		t.Fatalf("the summary's example must be valid; issues: %q", got)
	}
}

// The summary's example with its identity fields (task_id, handoff_id,
// agent_id), and rejected_at as the protocol's to_dict writes it: all taken,
// kept, and the record still valid.
func TestRefusalIdentityFields(t *testing.T) {
	data := `{
  "task_id": "task:T-123abc",
  "handoff_id": "handoff:H-456",
  "agent_id": "sub-agent-1",
  "rejected_at": "2025-12-20T15:30:45.123456",
  "reason_type": "SCOPE_CREEP",
  "reason_summary": "Task requires auth system redesign",
  "reason_detail": "Original: Add button. Actual: Redesign auth module.",
  "what_attempted": [
    "Analyzed auth/ module - 47 files need changes",
    "Reviewed tests - 89 test files affected",
    "Estimated effort - 16 hours vs 2 hours originally"
  ],
  "blocking_factor": "Cannot add OAuth without refactoring auth for extensibility",
  "evidence": [],
  "suggested_alternative": "Decompose into: refactor auth, add OAuth, add UI",
  "alternative_tasks": [
    {"title": "Refactor auth module", "scope": "Extract provider interface", "dependencies": "none", "estimate": "8h"},
    {"title": "Add OAuth provider", "scope": "Implement OAuth plugin", "dependencies": "auth refactor", "estimate": "4h"}
  ],
  "task_original_scope": "Add OAuth button to login page (2h)",
  "scope_growth_factor": 8.0
}`
	r, err := Parse([]byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if r.TaskID != "task:T-123abc" || r.HandoffID != "handoff:H-456" || r.AgentID != "sub-agent-1" || r.RejectedAt != "2025-12-20T15:30:45.123456" {
		t.Errorf("identity = %q %q %q %q", r.TaskID, r.HandoffID, r.AgentID, r.RejectedAt)
	}
	if got := Validate(r); len(got) != 0 {
		t.Errorf("issues: %q", got)
	}
	checkRefusalRoundTrip(t, []byte(data))
	out, _ := json.Marshal(r)
	if !strings.HasPrefix(string(out), `{"task_id":"task:T-123abc","handoff_id":"handoff:H-456","agent_id":"sub-agent-1","rejected_at":`) {
		t.Errorf("the event log's copy: %s", out)
	}
	// Without them, the copy is as before.
	out, _ = json.Marshal(&Record{ReasonType: Blocker})
	if strings.Contains(string(out), "_id") || strings.Contains(string(out), "rejected_at") {
		t.Errorf("absent identity fields written: %s", out)
	}
}

func TestRefusalWorkedExampleLazyFailsWithItsFourIssues(t *testing.T) {
	r, err := Parse([]byte(refusalLazyJSON))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	// Exactly the four issues the protocol lists, in its order.
	want := []string{
		"Attempts are too vague. At least 1 must be concrete and specific.",
		"BLOCKER rejection requires evidence (error logs, status checks, etc.)",
		"Blocking factor contains vague language. Must be concrete and measurable.",
		"Suggestion is too generic. Provide concrete actionable steps or task breakdown.",
	}
	if got := Validate(r); !slices.Equal(got, want) {
		t.Errorf("Validate(lazy example):\n got %q\nwant %q", got, want)
	}
}

func TestRefusalDefaultDecision(t *testing.T) {
	want := map[Reason]string{
		Blocker:             "defer",
		ScopeCreep:          "decompose",
		MissingDependency:   "defer",
		Infeasible:          "reformulate",
		UnclearRequirements: "defer",
		"":                  "",
		"blocker":           "",
	}
	for reason, w := range want {
		if got := DefaultDecision(reason); got != w {
			t.Errorf("DefaultDecision(%q) = %q, want %q", reason, got, w)
		}
	}
	if len(Reasons()) != 5 {
		t.Errorf("Reasons() = %v", Reasons())
	}
}

func TestRefusalDependencyName(t *testing.T) {
	for bf, want := range map[string]string{
		"The export endpoint depends on T-4k2m9x (the payments schema migration).": "T-4k2m9x (the payments schema migration)",
		"Export DEPENDS  ON\nT-4k2m9x.":                                            "T-4k2m9x",
		"It depends on. Really, it depends on decision D-7":                        "decision D-7",
		"Needs T-4k2m9x first":                                                     "",
		"This depends on":                                                          "",
	} {
		r := &Record{BlockingFactor: bf}
		if got := r.DependencyName(); got != want {
			t.Errorf("DependencyName(%q) = %q, want %q", bf, got, want)
		}
	}
}

func TestRefusalParseAcceptsNullsAndBOM(t *testing.T) {
	data := "\xef\xbb\xbf" + `{"reason_type": null, "what_attempted": null, "evidence": [{"type": "error_log", "data": null, "source": null}],
	"scope_growth_factor": null, "alternative_tasks": null, "reason_detail": "\u00e9"}`
	r, err := Parse([]byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &Record{ReasonDetail: "é", Evidence: []Evidence{{Type: "error_log"}}}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got %+v, want %+v", r, want)
	}
	// Evidence data of any JSON type is kept as JSON text.
	r, err = Parse([]byte(`{"evidence": [{"type":"a","data": 47}, {"type":"b","data": true}, {"type":"c","data": [1, {"x" : "y"}]}]}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for i, want := range []string{"47", "true", `[1,{"x":"y"}]`} {
		if r.Evidence[i].Data != want {
			t.Errorf("evidence[%d].data = %q, want %q", i, r.Evidence[i].Data, want)
		}
	}
}

func TestRefusalParseErrors(t *testing.T) {
	const known = "the known fields are task_id, handoff_id, agent_id, rejected_at, reason_type, reason_summary, reason_detail, what_attempted, blocking_factor, evidence, suggested_alternative, alternative_tasks, task_original_scope, scope_growth_factor"
	for _, c := range []struct{ name, in, want string }{
		// Malformed JSON.
		{"empty", "", "the refusal record is empty; expected a JSON object"},
		{"blank", " \n\t", "the refusal record is empty; expected a JSON object"},
		{"trailing comma", `{"reason_type": "BLOCKER",}`, `line 1, column 27: malformed JSON: invalid character '}' looking for beginning of object key string`},
		{"missing comma on line 3", "{\n  \"reason_type\": \"BLOCKER\"\n  \"blocking_factor\": \"x\"\n}", `line 3, column 3: malformed JSON: invalid character '"' after object key:value pair`},
		{"unclosed object", `{"reason_type": "BLOCKER"`, "line 1, column 26: malformed JSON: unexpected end of input (an unclosed string, array or object)"},
		{"unclosed string", `{"reason_type": "BLOC`, "line 1, column 22: malformed JSON: unexpected end of input (an unclosed string, array or object)"},
		{"bad literal", `{"reason_type": nul}`, "line 1, column 20: malformed JSON: invalid character '}' in literal null (expecting 'l')"},
		{"not an object", `["BLOCKER"]`, "line 1, column 1: the refusal record must be a JSON object, not an array"},
		{"null record", `null`, "line 1, column 1: the refusal record must be a JSON object, not null"},
		{"two objects", "{}\n{}", "line 2, column 1: unexpected data after the refusal record; expected one JSON object"},
		{"trailing garbage", `{} x`, "line 1, column 4: unexpected data after the refusal record; expected one JSON object"},

		// Unknown and duplicate fields.
		{"unknown field", `{"reason": "BLOCKER"}`, `line 1, column 2: unknown field "reason" in the refusal record; ` + known},
		{"field names are exact", `{"Reason_Type": "BLOCKER"}`, `line 1, column 2: unknown field "Reason_Type" in the refusal record; ` + known},
		{"identity field of the wrong type", "{\n  \"task_id\": 123}", `line 2, column 14: task_id must be a string, not a number`},
		{"agent_id array", `{"agent_id": ["a"]}`, `line 1, column 14: agent_id must be a string, not an array`},
		{"unknown evidence field", `{"evidence": [{"type": "error_log", "url": "x"}]}`, `line 1, column 37: unknown field "url" in evidence[0]; the known fields are type, data, source`},
		{"unknown task field", `{"alternative_tasks": [{"title": "a"}, {"name": "b"}]}`, `line 1, column 41: unknown field "name" in alternative_tasks[1]; the known fields are title, scope, dependencies, estimate`},
		{"duplicate field", `{"reason_type": "BLOCKER", "reason_type": "INFEASIBLE"}`, `line 1, column 28: duplicate field "reason_type" in the refusal record`},

		// Wrong types.
		{"reason_type number", `{"reason_type": 1}`, "line 1, column 17: reason_type must be a string, not a number"},
		{"attempts string", `{"what_attempted": "ran the tests"}`, "line 1, column 20: what_attempted must be an array of strings, not a string"},
		{"attempt number", `{"what_attempted": ["ran the tests", 2]}`, "line 1, column 38: what_attempted[1] must be a string, not a number"},
		{"attempt null", `{"what_attempted": [null]}`, "line 1, column 21: what_attempted[0] must be a string, not null"},
		{"growth string", `{"scope_growth_factor": "8-10x"}`, "line 1, column 25: scope_growth_factor must be a number, not a string"},
		{"growth out of range", `{"scope_growth_factor": 1e999}`, "line 1, column 25: scope_growth_factor is out of range: 1e999"},
		{"evidence object", `{"evidence": {"type": "error_log"}}`, "line 1, column 14: evidence must be an array of objects, not an object"},
		{"evidence item string", `{"evidence": ["503"]}`, "line 1, column 15: evidence[0] must be an object, not a string"},
		{"evidence type bool", `{"evidence": [{"type": true}]}`, "line 1, column 24: evidence[0].type must be a string, not a boolean"},
		{"task title number", `{"alternative_tasks": [{"title": 5}]}`, "line 1, column 34: alternative_tasks[0].title must be a string, not a number"},
		{"summary array", `{"reason_summary": ["a"]}`, "line 1, column 20: reason_summary must be a string, not an array"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Parse([]byte(c.in))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error %q", c.in, r, c.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if err.Error() != c.want {
				t.Errorf("Parse(%q):\n got %q\nwant %q", c.in, err.Error(), c.want)
			}
		})
	}
}

// refusalWithin fails the test when f takes longer than d.
func refusalWithin(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("did not finish within %v", d)
	}
}

func TestRefusalParseHugeInput(t *testing.T) {
	const bound = 10 * time.Second
	t.Run("over the limit is refused unread", func(t *testing.T) {
		data := []byte(`{"reason_detail": "` + strings.Repeat("a", 16<<20) + `"}`)
		refusalWithin(t, bound, func() {
			_, err := Parse(data)
			if err == nil || !strings.Contains(err.Error(), "the limit is 262144 bytes (256 KiB)") {
				t.Errorf("err = %v", err)
			}
		})
	})
	t.Run("just under the limit parses", func(t *testing.T) {
		head, tail := `{"reason_type": "BLOCKER", "reason_detail": "`, `"}`
		data := []byte(head + strings.Repeat("a", MaxBytes-len(head)-len(tail)) + tail)
		refusalWithin(t, bound, func() {
			r, err := Parse(data)
			if err != nil || len(r.ReasonDetail) != MaxBytes-len(head)-len(tail) {
				t.Errorf("err = %v", err)
			}
			Validate(r)
		})
	})
	t.Run("many attempts", func(t *testing.T) {
		data := []byte(`{"what_attempted": [` + strings.TrimSuffix(strings.Repeat(`"ran it",`, 25000), ",") + `]}`)
		refusalWithin(t, bound, func() {
			r, err := Parse(data)
			if err != nil || len(r.WhatAttempted) != 25000 {
				t.Errorf("err = %v", err)
			}
			Validate(r)
		})
	})
	t.Run("deeply nested evidence data", func(t *testing.T) {
		const depth = 100000
		data := []byte(`{"evidence": [{"type": "x", "data": ` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}]}`)
		refusalWithin(t, bound, func() {
			if _, err := Parse(data); err == nil || !strings.Contains(err.Error(), "exceeded max depth") {
				t.Errorf("err = %v", err)
			}
		})
	})
}

// The parser's field lists must be the struct's JSON names.
func TestRefusalFieldsMatchTags(t *testing.T) {
	names := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			out = append(out, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
		}
		return out
	}
	for _, c := range []struct {
		v    any
		list []string
	}{{Record{}, recordFields}, {Evidence{}, evidenceFields}, {AlternativeTask{}, altTaskFields}} {
		if got := names(c.v); !slices.Equal(got, c.list) {
			t.Errorf("%T: struct tags %v, parser fields %v", c.v, got, c.list)
		}
	}
}

func TestRefusalRoundTrip(t *testing.T) {
	for _, data := range [][]byte{refusalScopeCreepJSON(t), []byte(refusalLazyJSON)} {
		// These parse: a round trip that skipped them would test nothing.
		if _, err := Parse(data); err != nil {
			t.Fatalf("Parse(%s): %v", data, err)
		}
		checkRefusalRoundTrip(t, data)
	}
}

// checkRefusalRoundTrip: a record that parses marshals back to one that
// parses to the same value and the same issues.
func checkRefusalRoundTrip(t *testing.T, data []byte) {
	t.Helper()
	r, err := Parse(data)
	if err != nil {
		return
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	if len(out) > MaxBytes {
		return
	}
	r2, err := Parse(out)
	if err != nil {
		t.Fatalf("reparse of %s: %v", out, err)
	}
	if !reflect.DeepEqual(r, r2) {
		t.Fatalf("round trip changed the record:\n%+v\n%+v", r, r2)
	}
	if a, b := Validate(r), Validate(r2); !slices.Equal(a, b) {
		t.Fatalf("round trip changed the issues: %q vs %q", a, b)
	}
}

func FuzzRefusal(f *testing.F) {
	f.Add(refusalScopeCreepJSON(f))
	f.Add([]byte(refusalLazyJSON))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"reason_type":"MISSING_DEPENDENCY","blocking_factor":"depends on T-1","reason_detail":"required because"}`))
	f.Add([]byte(`{"evidence":[{"type":"conflict","data":{"a":[1,2.5e3,{"b":null}],"c":"\u00e9\ud800"}}],"scope_growth_factor":-0}`))
	f.Add([]byte(`{"reason_type": "BLOCKER",}`))
	f.Add([]byte("\xef\xbb\xbf{\"what_attempted\":[\"\xff\"]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || r != nil {
				t.Fatalf("Parse error %T %v with record %v", err, err, r)
			}
			return
		}
		if r == nil {
			t.Fatal("Parse returned neither a record nor an error")
		}
		issues := Validate(r)
		for _, s := range issues {
			if s == "" || strings.ContainsAny(s, "\n\r") {
				t.Fatalf("bad issue %q", s)
			}
		}
		if again := Validate(r); !slices.Equal(issues, again) {
			t.Fatalf("unstable issues: %q vs %q", issues, again)
		}
		_ = r.DependencyName()
		checkRefusalRoundTrip(t, data)
	})
}
