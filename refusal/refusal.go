package refusal

// The protocol's Python validator is the spec. Where its code, its docstrings
// and its worked examples disagree, the reading that makes the worked
// examples come out as the protocol says wins; each such choice is marked
// "Reading:" below.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/orch-tool/orch/internal/text"
)

// Reason is one of the protocol's five reasons for refusing a task.
type Reason string

// The protocol's refusal reasons, in the protocol's order.
const (
	Blocker             Reason = "BLOCKER"
	ScopeCreep          Reason = "SCOPE_CREEP"
	MissingDependency   Reason = "MISSING_DEPENDENCY"
	Infeasible          Reason = "INFEASIBLE"
	UnclearRequirements Reason = "UNCLEAR_REQUIREMENTS"
)

var reasons = []Reason{
	Blocker, ScopeCreep, MissingDependency, Infeasible, UnclearRequirements,
}

// Reasons lists the valid reasons in the protocol's order.
func Reasons() []Reason { return slices.Clone(reasons) }

// Valid reports whether r is one of the five reasons (exact spelling, as the
// protocol's RejectionReason[name] lookup).
func (r Reason) Valid() bool { return slices.Contains(reasons, r) }

// Evidence is one piece of evidence supporting a refusal.
//
// Type is the protocol's vocabulary ("error_log", "status_check",
// "api_response", "file_analysis", "complexity_metric", "conflict",
// "time_estimate", ...). The protocol lets Data be any JSON value (its own
// examples use objects such as {"files_requiring_changes": 47}); Parse
// keeps a string as it is and any other value as its compact JSON text, so
// Data is always a string here.
type Evidence struct {
	Type   string `json:"type"`
	Data   string `json:"data"`
	Source string `json:"source,omitempty"`
}

// AlternativeTask is one task of a suggested decomposition; `orch decide
// decompose` creates one task per entry, chained by depends_on.
type AlternativeTask struct {
	Title        string `json:"title"`
	Scope        string `json:"scope,omitempty"`
	Dependencies string `json:"dependencies,omitempty"`
	Estimate     string `json:"estimate,omitempty"`
}

// Record is the protocol's record of a refused task (its TaskRejection).
//
// Identity. orch takes the task from the command line (or the worktree),
// the agent from ORCH_AGENT or --agent and the time from the clock, so the
// record's identity fields are optional. A record that names them must agree
// with the command: task_id names the task refused (the protocol writes
// graph node IDs, "task:T-123"; the "task:" is optional), agent_id the agent
// refusing (a record cannot speak for someone else); see workflow's
// Engine.CheckRefusalIdentity. handoff_id (the protocol's hand-off, which
// orch has no counterpart of) and rejected_at (the agent's clock) are kept
// as written, in the event log.
//
// Reason-specific information. The protocol's record has no extra fields for
// it: its validator reads each item from the fields below, and docs/design.md §6.4 says
// `orch refuse -F` takes exactly this record, so no fields are added (a new
// field would either loosen or tighten the protocol's rules, and a record
// written to the protocol would not carry it). Where each item lives:
//
//   - BLOCKER, what blocks and how it was observed: BlockingFactor, and
//     Evidence with an item of type error_log, status_check or api_response.
//   - SCOPE_CREEP, the original scope and the growth: TaskOriginalScope,
//     ScopeGrowthFactor (>= 2), AlternativeTasks (>= 2, the decomposition).
//   - MISSING_DEPENDENCY, the dependency's name: BlockingFactor, as
//     "... depends on <task ID, decision or thing>" (see DependencyName);
//     why it is a hard requirement: ReasonDetail, as "... required because ...".
//   - INFEASIBLE, the conflicting constraints: ReasonDetail, which must say
//     "conflict" (e.g. "X conflicts with Y"), with >= 2 Evidence items; the
//     feasible reformulation: SuggestedAlternative (>= 50 characters).
//   - UNCLEAR_REQUIREMENTS, the questions: ReasonDetail, with at least one
//     "?"; the attempted interpretation: ReasonDetail, as "... interpreted as ...".
type Record struct {
	// TaskID is the task the record is about ("" when not given).
	TaskID string `json:"task_id,omitempty"`
	// HandoffID is the protocol's hand-off the task came in, kept as written.
	HandoffID string `json:"handoff_id,omitempty"`
	// AgentID is the agent refusing ("" when not given).
	AgentID string `json:"agent_id,omitempty"`
	// RejectedAt is when the agent says it refused, kept as written.
	RejectedAt string `json:"rejected_at,omitempty"`
	// ReasonType is one of the five reasons.
	ReasonType Reason `json:"reason_type"`
	// ReasonSummary is a one-line explanation (not validated by the protocol).
	ReasonSummary string `json:"reason_summary"`
	// ReasonDetail is the multi-paragraph explanation; MISSING_DEPENDENCY,
	// INFEASIBLE and UNCLEAR_REQUIREMENTS are validated against it.
	ReasonDetail string `json:"reason_detail,omitempty"`
	// WhatAttempted lists the concrete steps taken before refusing.
	WhatAttempted []string `json:"what_attempted"`
	// BlockingFactor is the specific, verifiable thing preventing completion.
	BlockingFactor string `json:"blocking_factor"`
	// Evidence supports the refusal.
	Evidence []Evidence `json:"evidence,omitempty"`
	// SuggestedAlternative is an actionable way forward (for INFEASIBLE, the
	// feasible reformulation).
	SuggestedAlternative string `json:"suggested_alternative"`
	// AlternativeTasks is a suggested decomposition.
	AlternativeTasks []AlternativeTask `json:"alternative_tasks,omitempty"`
	// TaskOriginalScope is the scope the task started with (SCOPE_CREEP).
	TaskOriginalScope string `json:"task_original_scope,omitempty"`
	// ScopeGrowthFactor quantifies the scope increase (SCOPE_CREEP); 0 means
	// not given.
	ScopeGrowthFactor float64 `json:"scope_growth_factor,omitempty"`
}

// MaxBytes bounds the record Parse accepts, so that parsing
// takes bounded time and the record fits in the event log it is copied to.
const MaxBytes = 256 << 10

// The JSON fields of the record, in the protocol's order. They must match
// the struct tags above (refusal_test.go checks).
var (
	recordFields   = []string{"task_id", "handoff_id", "agent_id", "rejected_at", "reason_type", "reason_summary", "reason_detail", "what_attempted", "blocking_factor", "evidence", "suggested_alternative", "alternative_tasks", "task_original_scope", "scope_growth_factor"}
	evidenceFields = []string{"type", "data", "source"}
	altTaskFields  = []string{"title", "scope", "dependencies", "estimate"}
)

// The validator's messages, in the protocol's exact wording where it has
// them (RejectionValidator in agent-refusal-protocol.md).
const (
	msgNoRecord = "No refusal record was given."

	msgFewAttempts   = "Insufficient effort demonstrated. Must document at least 2 concrete attempts."
	msgVagueAttempts = "Attempts are too vague. At least 1 must be concrete and specific."

	msgNoReason = "Must specify reason_type: one of BLOCKER, SCOPE_CREEP, MISSING_DEPENDENCY, INFEASIBLE, UNCLEAR_REQUIREMENTS."
	// msgBadReason takes the (quoted) reason given.
	msgBadReason = "Unknown reason_type %s. It must be one of BLOCKER, SCOPE_CREEP, MISSING_DEPENDENCY, INFEASIBLE, UNCLEAR_REQUIREMENTS."

	msgBlockerNoEvidence       = "BLOCKER rejection requires evidence (error logs, status checks, etc.)"
	msgBlockerEvidenceConcrete = "BLOCKER evidence must include error logs or status checks."

	msgScopeNoOriginal       = "SCOPE_CREEP requires documenting original scope."
	msgScopeGrowth           = "SCOPE_CREEP requires demonstrating at least 2x complexity increase. Provide scope_growth_factor with evidence."
	msgScopeDecomposition    = "SCOPE_CREEP requires suggesting task decomposition (at least 2 sub-tasks)."
	msgDependencyUnnamed     = "MISSING_DEPENDENCY must identify specific dependency (task ID or decision ID)."
	msgDependencyWhy         = "MISSING_DEPENDENCY should explain why dependency is a hard requirement."
	msgInfeasibleEvidence    = "INFEASIBLE has highest burden of proof. Must provide at least 2 pieces of evidence demonstrating logical impossibility."
	msgInfeasibleConflict    = "INFEASIBLE must cite conflicting constraints that make task impossible."
	msgInfeasibleReformulate = "INFEASIBLE must suggest detailed reformulation that IS feasible."
	msgUnclearQuestions      = "UNCLEAR_REQUIREMENTS must list specific questions that need answers."
	msgUnclearInterpretation = "UNCLEAR_REQUIREMENTS should document attempted interpretations."

	msgNoBlockingFactor    = "Must specify blocking_factor."
	msgShortBlockingFactor = "Blocking factor is too vague. Be specific."
	msgVagueBlockingFactor = "Blocking factor contains vague language. Must be concrete and measurable."

	msgNoAlternative      = "Must provide suggested_alternative."
	msgShortAlternative   = "Suggested alternative is too vague. Provide specific actionable steps."
	msgGenericAlternative = "Suggestion is too generic. Provide concrete actionable steps or task breakdown."
)

// The validator's thresholds.
const (
	minAttempts           = 2
	minBlockingFactor     = 15 // characters
	minAlternative        = 20 // characters
	minReformulation      = 50 // characters, INFEASIBLE
	minGrowthFactor       = 2.0
	minAlternativeTasks   = 2 // SCOPE_CREEP
	minInfeasibleEvidence = 2
)

// The protocol's word lists. Matching is as the protocol's: a
// case-insensitive substring test (after collapsing runs of white space,
// so that a line break or a double space does not hide a phrase).
var (
	// An attempt containing one of these is vague, not concrete.
	lazyAttempts = []string{"tried to", "looked at", "checked", "considered"}
	// A blocking factor containing one of these is vague. This is the
	// validator's list as it stands; the design brief's paraphrases
	// ("hard", "difficult") are not in it, and "too hard" is.
	vagueBlockers = []string{"too complex", "too hard", "not sure", "unclear", "confusing"}
	// An alternative containing one of these is generic unless it comes
	// with a task breakdown. The validator's list, plus "ask someone else"
	// (the summary's own example of a non-actionable alternative, and the
	// phrase the lazy worked example must be flagged for: without it that
	// example's fourth issue could not arise) and "try again later" (named
	// by the issue orch implements).
	genericAlternatives = []string{"ask the user", "get more context", "clarify requirements", "break into smaller tasks", "ask someone else", "try again later"}
	// BLOCKER evidence must include one of these types.
	concreteEvidence = []string{"error_log", "status_check", "api_response"}
)

// Validate applies the protocol's rules and returns every failed
// rule, each a complete sentence, in a stable order: effort, the reason's own
// rules, blocking factor, alternative (the order of the protocol's lazy
// worked example). Empty means valid.
//
// Counting and measuring: lengths are in characters after trimming white
// space at both ends; a blank attempt is not an attempt, an evidence item
// with blank data is not evidence, and an alternative task without a title
// is not a task (the protocol counts list entries; blank ones would satisfy
// its counts with nothing).
func Validate(r *Record) []string {
	if r == nil {
		return []string{msgNoRecord}
	}
	var issues []string
	issues = append(issues, effortIssues(r)...)
	issues = append(issues, reasonIssues(r)...)
	issues = append(issues, blockingFactorIssues(r)...)
	issues = append(issues, alternativeIssues(r)...)
	return issues
}

// effortIssues: at least 2 attempts, at least 1 of them concrete.
// The two rules are independent, as in the protocol: no attempts at all
// fails both.
func effortIssues(r *Record) []string {
	var issues []string
	attempts, concrete := 0, 0
	for _, a := range r.WhatAttempted {
		if strings.TrimSpace(a) == "" {
			continue
		}
		attempts++
		if !containsAny(a, lazyAttempts) {
			concrete++
		}
	}
	if attempts < minAttempts {
		issues = append(issues, msgFewAttempts)
	}
	if concrete < 1 {
		issues = append(issues, msgVagueAttempts)
	}
	return issues
}

func reasonIssues(r *Record) []string {
	var issues []string
	add := func(fail bool, msg string) {
		if fail {
			issues = append(issues, msg)
		}
	}
	detail := fold(r.ReasonDetail)
	switch r.ReasonType {
	case "":
		add(true, msgNoReason)
	case Blocker:
		// Reading: the protocol's code adds both messages when there is no
		// evidence at all, but its lazy worked example (no evidence) lists
		// only the first; so the second applies only when there is
		// evidence, none of it of a concrete type.
		if evidenceCount(r) == 0 {
			add(true, msgBlockerNoEvidence)
		} else {
			concrete := false
			for _, ev := range r.Evidence {
				if strings.TrimSpace(ev.Data) != "" && slices.Contains(concreteEvidence, ev.Type) {
					concrete = true
				}
			}
			add(!concrete, msgBlockerEvidenceConcrete)
		}
	case ScopeCreep:
		add(strings.TrimSpace(r.TaskOriginalScope) == "", msgScopeNoOriginal)
		add(!(r.ScopeGrowthFactor >= minGrowthFactor), msgScopeGrowth)
		add(altTaskCount(r) < minAlternativeTasks, msgScopeDecomposition)
	case MissingDependency:
		add(r.DependencyName() == "", msgDependencyUnnamed)
		add(!strings.Contains(detail, "required because"), msgDependencyWhy)
	case Infeasible:
		add(evidenceCount(r) < minInfeasibleEvidence, msgInfeasibleEvidence)
		add(!strings.Contains(detail, "conflict"), msgInfeasibleConflict)
		add(textLen(r.SuggestedAlternative) < minReformulation, msgInfeasibleReformulate)
	case UnclearRequirements:
		add(!strings.Contains(r.ReasonDetail, "?"), msgUnclearQuestions)
		add(!strings.Contains(detail, "interpreted as"), msgUnclearInterpretation)
	default:
		add(true, fmt.Sprintf(msgBadReason, strconv.Quote(text.Clip(string(r.ReasonType), 40))))
	}
	return issues
}

// blockingFactorIssues: present, at least 15 characters, no vague
// language. Reading: the protocol's code reports "too vague" for any factor
// under 15 characters and "vague language" for a vague phrase, both at once;
// its lazy worked example ("It's confusing", 14 characters) lists only the
// vague-language issue. So a factor reports one issue: missing, else vague
// language, else too short.
func blockingFactorIssues(r *Record) []string {
	switch {
	case strings.TrimSpace(r.BlockingFactor) == "":
		return []string{msgNoBlockingFactor}
	case containsAny(r.BlockingFactor, vagueBlockers):
		return []string{msgVagueBlockingFactor}
	case textLen(r.BlockingFactor) < minBlockingFactor:
		return []string{msgShortBlockingFactor}
	}
	return nil
}

// alternativeIssues: present, at least 20 characters, and not a
// generic phrase unless it comes with a task breakdown. As in the protocol,
// the length rule and the generic rule are independent.
//
// Reading: the protocol lists "break into smaller tasks" as generic but then
// exempts any suggestion containing "break into", which would make that
// phrase never count, although its own docstring marks "Break into smaller
// tasks" as vague. The exemption is kept for a breakdown spelled out in the
// text ("... then break into: (1) ..., (2) ..."), not for the bare generic
// phrase: a suggestion is exempt when it has alternative tasks or says
// "break into" somewhere other than in "break into smaller tasks".
func alternativeIssues(r *Record) []string {
	var issues []string
	switch {
	case strings.TrimSpace(r.SuggestedAlternative) == "":
		issues = append(issues, msgNoAlternative)
	case textLen(r.SuggestedAlternative) < minAlternative:
		issues = append(issues, msgShortAlternative)
	}
	if containsAny(r.SuggestedAlternative, genericAlternatives) {
		spelledOut := strings.Contains(strings.ReplaceAll(fold(r.SuggestedAlternative), "break into smaller tasks", ""), "break into")
		if altTaskCount(r) == 0 && !spelledOut {
			issues = append(issues, msgGenericAlternative)
		}
	}
	return issues
}

// TaskRef is the task ID a record's task_id names: without the
// protocol's "task:" node prefix and surrounding white space.
func TaskRef(taskID string) string {
	s := strings.TrimSpace(taskID)
	if len(s) >= 5 && strings.EqualFold(s[:5], "task:") {
		s = strings.TrimSpace(s[5:])
	}
	return s
}

// DependencyName is what a refusal's blocking factor names after "depends
// on" (case-insensitive; the first occurrence followed by a name), with
// surrounding white space and final punctuation trimmed; "" when it names
// nothing. It is the MISSING_DEPENDENCY rule's test for "names the
// dependency" and what `orch decide` looks up (a task ID) or turns into a
// new dependency task.
//
// Reading: the protocol only tests that the factor contains "depends on";
// "names the dependency" also needs something after it, so "X depends on"
// alone does not count.
func (r *Record) DependencyName() string {
	s := strings.Join(strings.Fields(r.BlockingFactor), " ")
	const phrase = "depends on"
	lower := asciiLower(s) // same byte offsets as s
	for from := 0; ; {
		i := strings.Index(lower[from:], phrase)
		if i < 0 {
			return ""
		}
		from += i + len(phrase)
		name := strings.TrimSpace(s[from:])
		for _, end := range []string{". ", "; ", "! ", "? "} { // up to the end of the sentence
			if j := strings.Index(name+" ", end); j >= 0 {
				name = name[:j]
			}
		}
		name = strings.TrimRightFunc(name, func(c rune) bool {
			return unicode.IsSpace(c) || strings.ContainsRune(".,;:!", c)
		})
		if strings.IndexFunc(name, func(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }) >= 0 {
			return name
		}
	}
}

// DefaultDecision is the protocol's default director decision for a valid
// refusal with this reason, as an `orch decide` verb: "defer" for BLOCKER
// (behind a blocker-resolution task), MISSING_DEPENDENCY (behind the named
// or a new dependency task) and UNCLEAR_REQUIREMENTS (behind a clarification
// task); "decompose" for SCOPE_CREEP; "reformulate" for INFEASIBLE. An
// unknown reason has no default: "".
func DefaultDecision(reason Reason) string {
	switch reason {
	case Blocker, MissingDependency, UnclearRequirements:
		return "defer"
	case ScopeCreep:
		return "decompose"
	case Infeasible:
		return "reformulate"
	}
	return ""
}

// fold lower-cases s and collapses runs of white space to one space,
// for the protocol's phrase tests.
func fold(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func containsAny(s string, phrases []string) bool {
	f := fold(s)
	for _, p := range phrases {
		if strings.Contains(f, p) {
			return true
		}
	}
	return false
}

// textLen is s's length in characters, white space at both ends aside.
func textLen(s string) int { return utf8.RuneCountInString(strings.TrimSpace(s)) }

func evidenceCount(r *Record) int {
	n := 0
	for _, ev := range r.Evidence {
		if strings.TrimSpace(ev.Data) != "" {
			n++
		}
	}
	return n
}

func altTaskCount(r *Record) int {
	n := 0
	for _, t := range r.AlternativeTasks {
		if strings.TrimSpace(t.Title) != "" {
			n++
		}
	}
	return n
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
