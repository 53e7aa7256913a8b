package workflow

import (
	"encoding/json"

	"github.com/orch-tool/orch/refusal"
	"github.com/orch-tool/orch/taskfile"
)

// The data of each event, one type per action. The JSON keys are those orch
// has always written, so event files of every version decode into these
// types; a key written only in some cases is omitempty. In an event line the
// keys are in sorted order (encodeData), as they always were.

// EventData is the data of an event of one action.
type EventData interface {
	Action() Action
}

// newData returns an empty value of the data type of action a, nil for an
// action this orch records no event of.
func newData(a Action) EventData {
	switch a {
	case ActionNew:
		return new(NewData)
	case ActionClaim:
		return new(ClaimData)
	case ActionSubmit:
		return new(SubmitData)
	case ActionApprove:
		return new(ApproveData)
	case ActionReject:
		return new(RejectData)
	case ActionReview:
		return new(ReviewData)
	case ActionPause:
		return new(PauseData)
	case ActionFail:
		return new(FailData)
	case ActionRefuse:
		return new(RefuseData)
	case ActionDecide:
		return new(DecideData)
	case ActionEscalate:
		return new(EscalateData)
	case ActionRequeue:
		return new(RequeueData)
	case ActionSweep:
		return new(SweepData)
	case ActionReopen:
		return new(ReopenData)
	case ActionArchive:
		return new(ArchiveData)
	case ActionHeartbeat:
		return new(HeartbeatData)
	case ActionRespond:
		return new(RespondData)
	case ActionUnlock:
		return new(UnlockData)
	case ActionAmendRejection:
		return new(AmendRejectionData)
	case ActionRefuseInvalid:
		return new(InvalidRefusalData)
	case ActionAuthorityRefused:
		return new(AuthorityData)
	case ActionSyncConflict:
		return new(SyncConflictData)
	case ActionClaimReview:
		return new(ClaimReviewData)
	case ActionReleaseReview:
		return new(ReleaseReviewData)
	case ActionRun:
		return new(RunRecordData)
	case ActionLand:
		return new(LandData)
	case ActionCheck:
		return new(CheckData)
	case ActionSlotStopped:
		return new(SlotStoppedData)
	}
	return nil
}

// encodeData is data as an event line holds it: a JSON object with its keys
// in sorted order, the order event data has always been written in (it was
// a map), which people and scripts reading the log rely on. The data types
// are then free to group their fields (RejectionData in RejectData and
// ReviewData) rather than sort them.
func encodeData(data EventData) (json.RawMessage, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, err
	}
	return json.Marshal(keys)
}

// NewData is a task's creation: by orch new (title, priority), by a verb
// that creates tasks (title, from, by: orch decide), or by hand in the view
// (path, by_hand).
type NewData struct {
	Title    string `json:"title,omitempty"`
	Priority string `json:"priority,omitempty"`
	From     string `json:"from,omitempty"` // the task whose verb created it
	By       Action `json:"by,omitempty"`
	Path     string `json:"path,omitempty"`
	ByHand   bool   `json:"by_hand,omitempty"`
}

// ClaimData is a claim: the branch (reused or new), the attempt, and, when
// it took over a claim whose lease ran out, whose and when the lease ended.
type ClaimData struct {
	Branch       string `json:"branch"`
	BranchReused bool   `json:"branch_reused"`
	Attempt      int    `json:"attempt"`
	PRNumber     int    `json:"pr_number"`
	TookOverFrom string `json:"took_over_from,omitempty"`
	LeaseEnded   string `json:"lease_ended,omitempty"`
}

// SubmitData is a submission: the note, the pull request, the branch and
// its tip.
type SubmitData struct {
	Note      string `json:"note"`
	PRNumber  int    `json:"pr_number"`
	Branch    string `json:"branch"`
	BranchTip string `json:"branch_tip"`
}

// ReviewerScope is what put the task in a scoped reviewer's scope ("label
// tests"): the events of a review decision by a reviewer whose
// review.reviewers entry is scoped say it (see Engine.apply).
type ReviewerScope struct {
	Ground string `json:"ground,omitempty"`
}

func (s *ReviewerScope) setGround(g string) { s.Ground = g }

// scoped is the data of a review decision, which records a scoped
// reviewer's ground.
type scoped interface {
	EventData
	setGround(string)
}

// ApproveData is orch approve's approval: the author, the rejection rounds
// before it, and the lockouts it lifted (null when none).
type ApproveData struct {
	Verdict  string   `json:"verdict"`
	Notes    string   `json:"notes"`
	Author   string   `json:"author"`
	Rounds   int      `json:"rounds"`
	Unlocked []string `json:"unlocked"`
	ReviewerScope
}

// RejectionData is what every rejection records: orch reject, a GitHub
// review imported, a structured review that requests changes.
type RejectionData struct {
	Round    int    `json:"round"`
	By       string `json:"by"`
	Author   string `json:"author"`  // whose work was rejected
	Lockout  bool   `json:"lockout"` // the author was locked out by it
	Branch   string `json:"branch"`
	PRNumber int    `json:"pr_number"`
	// Escalated is the policy that escalated the task (escalationFor),
	// when one did.
	Escalated string `json:"escalated,omitempty"`
}

// RejectData is a rejection by orch reject, or of a GitHub review (orch pr
// poll and pr import: source github, the review and its reviewer).
type RejectData struct {
	RejectionData
	Source   string `json:"source,omitempty"`
	ReviewID int64  `json:"review_id,omitempty"`
	Reviewer string `json:"reviewer,omitempty"`
	ReviewerScope
}

// ReviewData is a structured review (orch review): what it found, what a
// re-review found of the earlier suggestions, and what it did with the
// task: a rejection when it requests changes, else an approval. The parts
// are one JSON object.
type ReviewData struct {
	ReviewFindings
	Suggestions *Suggestions    // a re-review's
	Rejection   *RejectionData  // CHANGES_REQUESTED
	Approval    *ReviewApproval // APPROVED, APPROVED_WITH_NOTES
}

// ReviewFindings are what a review found: its verdict, the new issues, the
// earlier ones it re-opened and resolved, whether a blocking issue was
// resolved, and the rounds in a row that resolved none.
type ReviewFindings struct {
	Verdict         string           `json:"verdict"`
	Round           int              `json:"round"`
	Issues          []taskfile.Issue `json:"issues"`
	Reopen          []string         `json:"reopen"`
	Resolved        []string         `json:"resolved"`
	Progress        bool             `json:"progress"`
	NoProgressCount int              `json:"no_progress_count"`
	ReReview        bool             `json:"rereview"`
	ReviewerScope
}

// Suggestions are what a re-review found of the earlier open suggestions:
// those the developer fixed, those it did not, and whether it fixed none.
type Suggestions struct {
	Adopted    []string `json:"suggestions_adopted"`
	Skipped    []string `json:"suggestions_skipped"`
	AllSkipped bool     `json:"all_suggestions_skipped"`
}

// ReviewApproval is what a review that approves records beside its
// findings: the author, the rejection rounds before it, and the lockouts it
// lifted (absent when none).
type ReviewApproval struct {
	Author   string   `json:"author"`
	Rounds   int      `json:"rounds"`
	Unlocked []string `json:"unlocked,omitempty"`
}

// MarshalJSON writes the parts as one object (the findings' round is the
// rejection's).
func (d ReviewData) MarshalJSON() ([]byte, error) {
	parts := []any{d.ReviewFindings}
	if d.Suggestions != nil {
		parts = append(parts, d.Suggestions)
	}
	if d.Rejection != nil {
		parts = append(parts, d.Rejection)
	}
	if d.Approval != nil {
		parts = append(parts, d.Approval)
	}
	keys := map[string]json.RawMessage{}
	for _, part := range parts {
		b, err := json.Marshal(part)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &keys); err != nil {
			return nil, err
		}
	}
	return json.Marshal(keys)
}

// UnmarshalJSON reads the findings, then the parts they say the review
// has: the suggestions of a re-review, the rejection or the approval of its
// verdict.
func (d *ReviewData) UnmarshalJSON(b []byte) error {
	*d = ReviewData{}
	err := json.Unmarshal(b, &d.ReviewFindings)
	parts := []any{}
	if d.ReReview {
		d.Suggestions = new(Suggestions)
		parts = append(parts, d.Suggestions)
	}
	if d.Verdict == VerdictChangesRequested {
		d.Rejection = new(RejectionData)
		parts = append(parts, d.Rejection)
	} else {
		d.Approval = new(ReviewApproval)
		parts = append(parts, d.Approval)
	}
	for _, part := range parts {
		if perr := json.Unmarshal(b, part); err == nil {
			err = perr
		}
	}
	return err
}

// PauseData is a pause: the note for whoever continues, on the branch; by
// orch run, for an agent whose run ended without a transition, also the run.
type PauseData struct {
	Note   string `json:"note"`
	Branch string `json:"branch"`
	*RunData
}

// RunData is what orch run records when it acts for an agent whose run
// ended without a transition (a pause, an escalation, a released review
// claim): that it was orch run, whose run, why it ended (run_end: crash,
// timeout, stall, rate_limit, stopped, orphaned, unstartable), the crashes
// in a row, the run's logs.
type RunData struct {
	Via     string   `json:"via"`
	Agent   string   `json:"agent"`
	Attempt int      `json:"attempt"`
	End     string   `json:"run_end"`
	Crashes int      `json:"crashes,omitempty"`
	Logs    []string `json:"logs,omitempty"`
}

// RunRecordData is one run of orch run: whose, which attempt (or review
// claim), how it ended, and what it spent as its CLI counted (tokens;
// cost where the CLI says, Claude Code's total_cost_usd).
type RunRecordData struct {
	Agent      string  `json:"agent"`
	Role       string  `json:"role"` // implementer (or the task's role) or reviewer
	Attempt    int     `json:"attempt"`
	Harness    string  `json:"harness,omitempty"`
	DurationMS int64   `json:"duration_ms"`
	Exit       int     `json:"exit"`
	Transition bool    `json:"transition"` // the agent moved its task itself
	Cause      string  `json:"cause,omitempty"`
	Words      string  `json:"words,omitempty"`
	Killed     string  `json:"killed,omitempty"`
	Input      int64   `json:"input_tokens"`
	Output     int64   `json:"output_tokens"`
	CacheRead  int64   `json:"cache_read_tokens,omitempty"`
	CacheWrite int64   `json:"cache_write_tokens,omitempty"`
	CostUSD    float64 `json:"cost_usd"`
}

// SlotStoppedData is a slot of orch run that stopped, and why.
type SlotStoppedData struct {
	Slot     string `json:"slot"`
	Reviewer bool   `json:"reviewer,omitempty"`
	Why      string `json:"why"`
}

// ClaimReviewData is a review claim: its number and when its lease ends.
type ClaimReviewData struct {
	Attempt    int    `json:"attempt"`
	LeaseUntil string `json:"lease_until"`
}

// ReleaseReviewData is a review claim given back by orch run: the note
// (how the reviewer's run ended) and the run.
type ReleaseReviewData struct {
	Note string `json:"note"`
	*RunData
}

// FailData is a failure: why.
type FailData struct {
	Reason string `json:"reason"`
}

// ReopenData is a failed task sent back to incoming: why.
type ReopenData struct {
	Reason string `json:"reason"`
}

// RequeueData is a requeue: the agent it is assigned to ("" for anyone).
type RequeueData struct {
	To string `json:"to"`
}

// ArchiveData is a finished task's file moved to the archive: the path it
// left, its queue, and, when archive_after moved it, that setting.
type ArchiveData struct {
	Path  string         `json:"path"`
	Queue taskfile.Queue `json:"queue"`
	After string         `json:"after,omitempty"`
}

// SweepData is a stale claim swept: whose, since when.
type SweepData struct {
	ClaimedBy string `json:"claimed_by"`
	ClaimedAt string `json:"claimed_at"`
}

// EscalateData is an escalation by hand (the reason, manual, and the text)
// or by orch run (its reason, crashes or unreviewable, and the run).
type EscalateData struct {
	Reason string `json:"reason"`
	Text   string `json:"text"`
	*RunData
}

// HeartbeatData is a renewed lease: when it runs out; review is set for a
// review claim's.
type HeartbeatData struct {
	LeaseUntil string `json:"lease_until"`
	Review     bool   `json:"review,omitempty"`
}

// RespondData is an answer to a review issue: which issue (and the name it
// was given by, when that was another), the answer, and the round answered.
type RespondData struct {
	Issue    string `json:"issue"`
	NamedAs  string `json:"named_as,omitempty"`
	Status   string `json:"status"`
	Commit   string `json:"commit"`
	Text     string `json:"text"`
	Blocking bool   `json:"blocking"`
	Severity string `json:"severity"`
	// Round is nil in events written before rounds were recorded.
	Round *int `json:"round"`
}

// UnlockData is a lockout lifted: whose.
type UnlockData struct {
	Agent string `json:"agent"`
}

// AmendRejectionData is a note added to the newest rejection round.
type AmendRejectionData struct {
	Round     int    `json:"round"`
	By        string `json:"by"`
	ClaimedBy string `json:"claimed_by"`
	ReviewerScope
}

// RefuseData is a valid refusal: the whole record, its reason, blocking
// factor and the protocol's default decision for it.
type RefuseData struct {
	Refusal         *refusal.Record `json:"refusal"`
	Reason          refusal.Reason  `json:"reason"`
	BlockingFactor  string          `json:"blocking_factor"`
	DefaultDecision string          `json:"default_decision"`
}

// InvalidRefusalData is a refusal the validator turned down: the record and
// every rule it failed.
type InvalidRefusalData struct {
	Refusal *refusal.Record `json:"refusal"`
	Reason  refusal.Reason  `json:"reason"`
	Issues  []string        `json:"issues"`
}

// DecideData is a decision on a refusal: the decision and its text, the
// refusal's reason and who refused (when the log had the refusal), the task
// it was deferred behind, and the tasks it created (never null).
type DecideData struct {
	Decision  string         `json:"decision"`
	Text      string         `json:"text"`
	Reason    refusal.Reason `json:"reason,omitempty"`
	RefusedBy string         `json:"refused_by,omitempty"`
	DependsOn string         `json:"depends_on,omitempty"`
	Created   []string       `json:"created"`
}

// AuthorityData is a refused attempt: the command, the rule and what the
// actor was told.
type AuthorityData struct {
	Verb    string `json:"verb"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// SyncConflictData is the conflicts of a sync's merge with a remote.
type SyncConflictData struct {
	Remote    string         `json:"remote"`
	Conflicts []SyncConflict `json:"conflicts"`
}

func (*NewData) Action() Action            { return ActionNew }
func (*ClaimData) Action() Action          { return ActionClaim }
func (*SubmitData) Action() Action         { return ActionSubmit }
func (*ApproveData) Action() Action        { return ActionApprove }
func (*RejectData) Action() Action         { return ActionReject }
func (*ReviewData) Action() Action         { return ActionReview }
func (*PauseData) Action() Action          { return ActionPause }
func (*FailData) Action() Action           { return ActionFail }
func (*RefuseData) Action() Action         { return ActionRefuse }
func (*DecideData) Action() Action         { return ActionDecide }
func (*EscalateData) Action() Action       { return ActionEscalate }
func (*RequeueData) Action() Action        { return ActionRequeue }
func (*SweepData) Action() Action          { return ActionSweep }
func (*ReopenData) Action() Action         { return ActionReopen }
func (*ArchiveData) Action() Action        { return ActionArchive }
func (*HeartbeatData) Action() Action      { return ActionHeartbeat }
func (*RespondData) Action() Action        { return ActionRespond }
func (*UnlockData) Action() Action         { return ActionUnlock }
func (*AmendRejectionData) Action() Action { return ActionAmendRejection }
func (*InvalidRefusalData) Action() Action { return ActionRefuseInvalid }
func (*AuthorityData) Action() Action      { return ActionAuthorityRefused }
func (*SyncConflictData) Action() Action   { return ActionSyncConflict }
func (*ClaimReviewData) Action() Action    { return ActionClaimReview }
func (*ReleaseReviewData) Action() Action  { return ActionReleaseReview }
func (*RunRecordData) Action() Action      { return ActionRun }
func (*SlotStoppedData) Action() Action    { return ActionSlotStopped }

// ApprovalRounds is, for an event that approved a task (orch approve, or a
// review that moved it to done), the rejection rounds before the approval;
// ok is false for any other event. data is the event's Payload.
func ApprovalRounds(ev *Event, data EventData) (rounds int, ok bool) {
	if ev.To != taskfile.Done && ev.To != taskfile.Approved {
		return 0, false
	}
	switch d := data.(type) {
	case *ApproveData:
		return d.Rounds, true
	case *ReviewData:
		if d.Approval != nil {
			return d.Approval.Rounds, true
		}
		return 0, true
	}
	return 0, false
}

// escalationReason is why an event's task escalated: the policy of a
// rejection that escalated it (escalationFor), or an escalation's reason
// (manual); "" for any other data.
func escalationReason(data EventData) string {
	switch d := data.(type) {
	case *RejectData:
		return d.Escalated
	case *ReviewData:
		if d.Rejection != nil {
			return d.Rejection.Escalated
		}
	case *EscalateData:
		return d.Reason
	}
	return ""
}
