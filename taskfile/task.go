// Package taskfile reads and edits orch task files: markdown with a YAML
// frontmatter block. Edits are surgical: they change the bytes of the value
// that changed and nothing else, so comments, key order, quoting, blank lines
// and unknown keys written by a person survive every transition.
package taskfile

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Queue is the state of a task. The transitions between queues live in the
// workflow package; this package only knows the names.
type Queue string

const (
	Incoming          Queue = "incoming"
	Claimed           Queue = "claimed"
	Provisional       Queue = "provisional"
	Approved          Queue = "approved" // approved, waiting to land on the base branch
	Rejected          Queue = "rejected"
	NeedsContinuation Queue = "needs_continuation"
	Blocked           Queue = "blocked"
	Escalated         Queue = "escalated"
	Done              Queue = "done"
	Failed            Queue = "failed"
	Superseded        Queue = "superseded"
)

// Queues lists every queue in board order.
var Queues = []Queue{Incoming, Claimed, Provisional, Approved, Rejected, NeedsContinuation, Blocked, Escalated, Done, Failed, Superseded}

// QueueNames is every queue's name, in board order, comma-separated.
func QueueNames() string {
	names := make([]string, len(Queues))
	for i, q := range Queues {
		names[i] = string(q)
	}
	return strings.Join(names, ", ")
}

// Valid reports whether q is one of the known queues.
func (q Queue) Valid() bool {
	for _, k := range Queues {
		if k == q {
			return true
		}
	}
	return false
}

// Rank is q's place in board order (Queues), an unknown queue last.
func (q Queue) Rank() int {
	if i := slices.Index(Queues, q); i >= 0 {
		return i
	}
	return len(Queues)
}

// Open reports whether a task in q still needs work or a decision.
func (q Queue) Open() bool {
	switch q {
	case Done, Failed, Superseded:
		return false
	}
	return true
}

// Task holds the frontmatter fields orch understands. Unknown keys are not
// modelled here: they live only in the file bytes, which orch never
// re-serialises.
type Task struct {
	ID             string    `json:"id"`
	Title          string    `json:"title"`
	Queue          Queue     `json:"queue"`
	Priority       string    `json:"priority"` // normalised P0..P3
	Role           string    `json:"role,omitempty"`
	Branch         string    `json:"branch,omitempty"`
	BaseBranch     string    `json:"base_branch,omitempty"`
	PRNumber       int       `json:"pr_number,omitempty"`
	RejectionCount int       `json:"rejection_count"`
	Attempts       int       `json:"attempts,omitempty"` // claims so far
	NoProgress     int       `json:"no_progress_count,omitempty"`
	ClaimedBy      string    `json:"claimed_by,omitempty"`
	ClaimedAt      time.Time `json:"claimed_at,omitzero"`
	// HeartbeatAt is when the claimant last renewed its lease.
	HeartbeatAt time.Time `json:"heartbeat_at,omitzero"`
	SubmittedBy string    `json:"submitted_by,omitempty"`
	SubmittedAt time.Time `json:"submitted_at,omitzero"`
	AssignedTo  string    `json:"assigned_to,omitempty"`
	LockedOut   []string  `json:"locked_out,omitempty"`
	// WorkedBy lists every actor that claimed the task, in any round: none
	// of them may review it.
	WorkedBy []string `json:"worked_by,omitempty"`
	// GitHubReviews lists the GitHub reviews imported into the task (by
	// review id): pr poll and pr import never import one twice.
	GitHubReviews []string  `json:"github_reviews,omitempty"`
	DependsOn     []string  `json:"depends_on,omitempty"`
	Labels        []string  `json:"labels,omitempty"`
	Created       time.Time `json:"created,omitzero"`
	// RejectedAt is the branch tip recorded at the last rejection; submit
	// refuses when the branch has not moved past it.
	RejectedAt string `json:"rejected_at_commit,omitempty"`
	// Crashes counts the runs of orch run in a row that ended without a
	// transition of their agent; run.max_crashes of them escalate.
	Crashes int `json:"crashes,omitempty"`
	// ReviewClaimedBy holds a submission for one reviewer (orch run's
	// review claim), a lease like a claim's: ReviewClaimedAt is when it
	// began or was last renewed, ReviewAttempts counts the review claims.
	ReviewClaimedBy string    `json:"review_claimed_by,omitempty"`
	ReviewClaimedAt time.Time `json:"review_claimed_at,omitzero"`
	ReviewAttempts  int       `json:"review_attempts,omitempty"`
	// FinishedAt is when the task last entered done, failed or superseded
	// (unset while it is open): archive_after counts from it.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Landing (land:): when the task was approved and the branch tip that
	// was (landing order, and the diff a landing retry's reviewer sees);
	// the commit of the base branch that holds its work once it landed;
	// the landing failures so far (land.max_failures); the branch tip
	// review.check passed on.
	ApprovedAt     time.Time `json:"approved_at,omitzero"`
	ApprovedCommit string    `json:"approved_commit,omitempty"`
	LandedCommit   string    `json:"landed_commit,omitempty"`
	LandFailures   int       `json:"land_failures,omitempty"`
	CheckedCommit  string    `json:"checked_commit,omitempty"`
}

// Field names orch reads and writes.
const (
	KeyID             = "id"
	KeyTitle          = "title"
	KeyQueue          = "queue"
	KeyPriority       = "priority"
	KeyRole           = "role"
	KeyBranch         = "branch"
	KeyBaseBranch     = "base_branch"
	KeyPRNumber       = "pr_number"
	KeyRejectionCount = "rejection_count"
	KeyAttempts       = "attempts"
	KeyNoProgress     = "no_progress_count"
	KeyClaimedBy      = "claimed_by"
	KeyClaimedAt      = "claimed_at"
	// KeyHeartbeatAt: when the claimant last renewed its lease.
	KeyHeartbeatAt   = "heartbeat_at"
	KeySubmittedBy   = "submitted_by"
	KeySubmittedAt   = "submitted_at"
	KeyAssignedTo    = "assigned_to"
	KeyLockedOut     = "locked_out"
	KeyWorkedBy      = "worked_by"
	KeyGitHubReviews = "github_reviews"
	KeyDependsOn     = "depends_on"
	KeyLabels        = "labels"
	KeyCreated       = "created"
	KeyRejectedAt    = "rejected_at_commit"
	KeyCrashes       = "crashes"
	KeyReviewBy      = "review_claimed_by"
	KeyReviewAt      = "review_claimed_at"
	KeyReviewCount   = "review_attempts"
	KeyFinishedAt    = "finished_at"
	KeyApprovedAt    = "approved_at"
	KeyApprovedAtSHA = "approved_commit"
	KeyLandedCommit  = "landed_commit"
	KeyLandFailures  = "land_failures"
	KeyCheckedCommit = "checked_commit"
)

// KeyOrder is the order orch writes keys in new files, and the order used to
// place a key that a file does not have yet.
var KeyOrder = []string{
	KeyID, KeyTitle, KeyQueue, KeyPriority, KeyRole, KeyBranch, KeyBaseBranch, KeyPRNumber,
	KeyRejectionCount, KeyNoProgress, KeyAttempts, KeyClaimedBy, KeyClaimedAt, KeyHeartbeatAt, KeySubmittedBy, KeySubmittedAt,
	KeyAssignedTo, KeyLockedOut, KeyWorkedBy, KeyDependsOn, KeyLabels, KeyCreated, KeyFinishedAt, KeyRejectedAt, KeyGitHubReviews,
	KeyCrashes, KeyReviewBy, KeyReviewAt, KeyReviewCount,
	KeyApprovedAt, KeyApprovedAtSHA, KeyLandedCommit, KeyLandFailures, KeyCheckedCommit,
}

// OrchOwned lists the fields that only orch's verbs change. A stale editor
// buffer is recognised by these fields matching an older version, and a
// three-way merge keeps orch's values for them.
var OrchOwned = []string{
	KeyQueue, KeyBranch, KeyPRNumber, KeyRejectionCount, KeyNoProgress, KeyAttempts, KeyClaimedBy, KeyClaimedAt, KeyHeartbeatAt,
	KeySubmittedBy, KeySubmittedAt, KeyLockedOut, KeyWorkedBy, KeyRejectedAt, KeyGitHubReviews,
	KeyCrashes, KeyReviewBy, KeyReviewAt, KeyReviewCount, KeyFinishedAt,
	KeyApprovedAt, KeyApprovedAtSHA, KeyLandedCommit, KeyLandFailures, KeyCheckedCommit,
}

// Priorities in order, highest first.
var Priorities = []string{"P0", "P1", "P2", "P3"}

// DefaultPriority is used when a task names none.
const DefaultPriority = "P2"

// NormalizePriority maps P0..P3 and critical|high|medium|low to P0..P3.
func NormalizePriority(s string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "p0", "critical", "0":
		return "P0", true
	case "p1", "high", "1":
		return "P1", true
	case "p2", "medium", "2", "":
		return "P2", true
	case "p3", "low", "3":
		return "P3", true
	}
	return "", false
}

// PriorityRank is 0 for P0 (highest) to 3 for P3.
func PriorityRank(p string) int {
	if len(p) == 2 && p[0] == 'P' && p[1] >= '0' && p[1] <= '3' {
		return int(p[1] - '0') // already normal (summaries are)
	}
	if n, ok := NormalizePriority(p); ok {
		return int(n[1] - '0')
	}
	return 2
}

// ParseError is a task file that cannot be read. Line is 1-based within the
// file (0 when unknown). Err, when set, is the kind of problem
// (ErrTooLarge), for errors.Is.
type ParseError struct {
	Path string
	Line int
	Msg  string
	Err  error
}

func (e *ParseError) Unwrap() error { return e.Err }

// ErrTooLarge is a task file over MaxFileSize, read or about to be written
// (an edit or a new feedback round that would make it so is refused).
var ErrTooLarge = errors.New("task file over the size limit")

func (e *ParseError) Error() string {
	path := e.Path
	if path == "" {
		path = "<task>"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", path, e.Msg)
}

// EditError is an edit that cannot be made without touching more than the
// edited field (for example a value that carries a YAML anchor).
type EditError struct {
	Path string
	Key  string
	Msg  string
}

func (e *EditError) Error() string {
	return fmt.Sprintf("%s: cannot change %q: %s", e.Path, e.Key, e.Msg)
}

// Problems is every problem found in one file, each with its line.
type Problems []*ParseError

func (p Problems) Error() string {
	lines := make([]string, len(p))
	for i, e := range p {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}
