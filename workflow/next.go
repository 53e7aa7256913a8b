package workflow

import "github.com/orch-tool/orch/taskfile"

// Advice names what a refused caller can do next. workflow says which
// advice and the facts its words need; cmd/orch words it (cmd/orch/hints.go),
// so that the words of every door are written in one place and workflow
// writes no command line into an error.
type Advice string

// Next is a typed hint: the advice and its facts. Each advice reads only
// the facts its constant's comment names; the others stay empty.
type Next struct {
	Advice Advice
	Task   string         // the task's ID
	Agent  string         // an actor the words name
	Branch string         // a branch: the task's, or the one checked out here
	Base   string         // the base branch
	Path   string         // a file of the view
	Issue  string         // a review issue's ID
	Status string         // a response's status, lower case: fixed, deferred
	Verb   Action         // a verb the words name
	Queue  taskfile.Queue // a queue the words name
	PR     int            // the task's pull request
	NewPR  int            // another pull request, the one the caller named
	Issues []string       // review issue IDs
	Steps  []Next         // the advices a compound advice joins
}

// The advices, one per wording. Each names its facts.
const (
	// Tasks and their IDs.
	AdviseListTasks     Advice = "list_tasks"      // -
	AdvisePassTaskID    Advice = "pass_task_id"    // -
	AdviseListReady     Advice = "list_ready"      // -
	AdviseShowTask      Advice = "show_task"       // Task
	AdviseShowBrief     Advice = "show_brief"      // Task
	AdviseShowWaitsFor  Advice = "show_waits_for"  // Task
	AdviseShowRounds    Advice = "show_rounds"     // Task
	AdviseListIssues    Advice = "list_issues"     // Task
	AdviseLogTask       Advice = "log_task"        // Task
	AdviseCheckProblem  Advice = "check_problem"   // -
	AdviseEditWhat      Advice = "edit_what"       // -
	AdviseDiffWhole     Advice = "diff_whole"      // Task
	AdviseClaimWorktree Advice = "claim_worktree"  // -
	AdviseClaimFirst    Advice = "claim_first"     // Task
	AdviseClaimWithTree Advice = "claim_with_tree" // Task
	AdviseArchived      Advice = "archived"        // Task

	// Authority (docs/design.md §5.5): how to ask, or what else to do; never how to
	// act as someone else.
	AdviseAskHuman        Advice = "ask_human"         // Task ("" for none)
	AdviseActAsYourself   Advice = "act_as_yourself"   // Agent: the name ORCH_AGENT gives
	AdviseEscalate        Advice = "escalate"          // Task
	AdviseOtherWork       Advice = "other_work"        // Task
	AdviseNotReviewer     Advice = "not_reviewer"      // -
	AdviseReviewClaimed   Advice = "review_claimed"    // -
	AdviseSelfReview      Advice = "self_review"       // -
	AdviseOutsideScope    Advice = "outside_scope"     // -
	AdviseLockedOut       Advice = "locked_out"        // Task
	AdviseClaimLost       Advice = "claim_lost"        // Task
	AdviseRunEnded        Advice = "run_ended"         // Task
	AdviseSetRecordTask   Advice = "set_record_task"   // Task
	AdviseSetRecordAgent  Advice = "set_record_agent"  // Agent: the actor
	AdviseUnlockFirst     Advice = "unlock_first"      // Task, Agent
	AdviseAwaitsReview    Advice = "awaits_review"     // Task
	AdviseReviewInstead   Advice = "review_instead"    // Task
	AdviseDecideExplicit  Advice = "decide_explicit"   // Task
	AdviseRequeueTo       Advice = "requeue_to"        // Task
	AdviseOverrideAccept  Advice = "override_accept"   // -
	AdviseDeferReform     Advice = "defer_reformulate" // -
	AdviseKeepPR          Advice = "keep_pr"           // Task, Branch, PR
	AdviseMovePR          Advice = "move_pr"           // Task, Branch, PR, NewPR
	AdviseAnswerBlocking  Advice = "answer_blocking"   // Task, Issue
	AdviseCommitFixes     Advice = "commit_fixes"      // Branch
	AdviseCommitWork      Advice = "commit_work"       // Task, Branch
	AdviseRespondFixed    Advice = "respond_fixed"     // Task, Issue
	AdviseJustifyBlocking Advice = "justify_blocking"  // Task, Issue
	AdviseJustifyOrDefer  Advice = "justify_or_defer"  // Task, Issue
	AdviseDropSuggestion  Advice = "drop_suggestion"   // -

	// A text a verb needs, with an example.
	AdviseEscalateText Advice = "escalate_text" // Task
	AdvisePauseText    Advice = "pause_text"    // Task
	AdviseFailText     Advice = "fail_text"     // Task
	AdviseReopenText   Advice = "reopen_text"   // Task
	AdviseRejectText   Advice = "reject_text"   // Task
	AdviseAmendText    Advice = "amend_text"    // Task
	AdviseOverrideText Advice = "override_text" // Task
	AdviseRespondText  Advice = "respond_text"  // Task, Issue, Status
	AdviseJustifyText  Advice = "justify_text"  // Task, Issue
	AdviseShortenText  Advice = "shorten_text"  // -
	AdviseShortenLog   Advice = "shorten_log"   // -

	// The form of an argument.
	AdviseNewTitle       Advice = "new_title"        // -
	AdviseTitleInBody    Advice = "title_in_body"    // -
	AdvisePlainText      Advice = "plain_text"       // -
	AdvisePriorities     Advice = "priorities"       // -
	AdviseNameForm       Advice = "name_form"        // -
	AdviseInitBase       Advice = "init_base"        // -
	AdviseReviewForm     Advice = "review_form"      // -
	AdviseIssueFlag      Advice = "issue_flag"       // -
	AdviseSeverities     Advice = "severities"       // -
	AdviseSeverityOrFlag Advice = "severity_or_flag" // -
	AdviseReviewIsText   Advice = "review_is_text"   // -
	AdviseReviewerID     Advice = "reviewer_id"      // Issue: the ID orch gives the issue
	AdviseNameIssueByID  Advice = "name_issue_by_id" // Issues
	AdviseFixCommit      Advice = "fix_commit"       // -
	AdviseMoreDigits     Advice = "more_digits"      // -
	AdviseCommitOnBranch Advice = "commit_on_branch" // Task
	AdviseNoCommitFlag   Advice = "no_commit_flag"   // -

	// Files, branches and worktrees.
	AdviseFixOrDelete       Advice = "fix_or_delete"       // -
	AdviseEditOrDelete      Advice = "edit_or_delete"      // Path
	AdviseFixViewFirst      Advice = "fix_view_first"      // -
	AdviseEditAgain         Advice = "edit_again"          // Task ("" for none)
	AdviseEditAgainFromNew  Advice = "edit_again_from_new" // Task
	AdviseOwnedFields       Advice = "owned_fields"        // Steps: what makes each change
	AdviseFixBranchField    Advice = "fix_branch_field"    // -
	AdviseDropBranchField   Advice = "drop_branch_field"   // Task
	AdviseCreateBase        Advice = "create_base"         // Base
	AdviseBaseFromHere      Advice = "base_from_here"      // Base, Branch: the one checked out here
	AdviseAskForBase        Advice = "ask_for_base"        // Task, Base
	AdviseFetchOrReclaim    Advice = "fetch_or_reclaim"    // Branch
	AdviseFetchBranch       Advice = "fetch_branch"        // Branch
	AdviseLogBranch         Advice = "log_branch"          // Branch
	AdviseOtherPath         Advice = "other_path"          // -
	AdviseExistingTrees     Advice = "existing_worktrees"  // -
	AdviseListTrees         Advice = "list_worktrees"      // -
	AdvisePolicyEditPending Advice = "policy_edit_pending" // Path: the policy file
	AdviseLandMode          Advice = "land_mode"           // -

	// Tools and remotes.
	AdviseCheckGH        Advice = "check_gh"         // -
	AdviseCheckRemote    Advice = "check_remote"     // -
	AdviseRenewalKept    Advice = "renewal_kept"     // -
	AdviseRetryCommand   Advice = "retry_command"    // -
	AdviseSyncAgain      Advice = "sync_again"       // -
	AdviseClaimSyncAgain Advice = "claim_sync_again" // -
	AdviseUpgradeOrch    Advice = "upgrade_orch"     // -

	// The steps of AdviseOwnedFields: what makes one change of an orch-owned
	// field (keepOrchFields says the same in its note).
	AdviseStepMove      Advice = "step_move"        // Task, Verb, Queue
	AdviseStepAskToMove Advice = "step_ask_to_move" // Task, Queue
	AdviseStepClaim     Advice = "step_claim"       // Task
	AdviseStepHeartbeat Advice = "step_heartbeat"   // Task
	AdviseStepLockout   Advice = "step_lockout"     // -
	AdviseStepPR        Advice = "step_pr"          // Task
)

// Advices lists every advice, for the tests that each has words.
var Advices = []Advice{
	AdviseListTasks, AdvisePassTaskID, AdviseListReady, AdviseShowTask, AdviseShowBrief, AdviseShowWaitsFor,
	AdviseShowRounds, AdviseListIssues, AdviseLogTask, AdviseCheckProblem, AdviseEditWhat, AdviseDiffWhole,
	AdviseClaimWorktree, AdviseClaimFirst, AdviseClaimWithTree, AdviseArchived,

	AdviseAskHuman, AdviseActAsYourself, AdviseEscalate, AdviseOtherWork, AdviseNotReviewer, AdviseReviewClaimed,
	AdviseSelfReview, AdviseOutsideScope, AdviseLockedOut, AdviseClaimLost, AdviseRunEnded, AdviseSetRecordTask,
	AdviseSetRecordAgent, AdviseUnlockFirst, AdviseAwaitsReview, AdviseReviewInstead, AdviseDecideExplicit,
	AdviseRequeueTo, AdviseOverrideAccept, AdviseDeferReform, AdviseKeepPR, AdviseMovePR, AdviseAnswerBlocking,
	AdviseCommitFixes, AdviseCommitWork, AdviseRespondFixed, AdviseJustifyBlocking, AdviseJustifyOrDefer, AdviseDropSuggestion,

	AdviseEscalateText, AdvisePauseText, AdviseFailText, AdviseReopenText, AdviseRejectText, AdviseAmendText,
	AdviseOverrideText, AdviseRespondText, AdviseJustifyText, AdviseShortenText, AdviseShortenLog,

	AdviseNewTitle, AdviseTitleInBody, AdvisePlainText, AdvisePriorities, AdviseNameForm, AdviseInitBase,
	AdviseReviewForm, AdviseIssueFlag, AdviseSeverities, AdviseSeverityOrFlag, AdviseReviewIsText,
	AdviseReviewerID, AdviseNameIssueByID, AdviseFixCommit, AdviseMoreDigits,
	AdviseCommitOnBranch, AdviseNoCommitFlag,

	AdviseFixOrDelete, AdviseEditOrDelete, AdviseFixViewFirst, AdviseEditAgain, AdviseEditAgainFromNew,
	AdviseOwnedFields, AdviseFixBranchField, AdviseDropBranchField, AdviseCreateBase, AdviseBaseFromHere,
	AdviseAskForBase, AdviseFetchOrReclaim, AdviseFetchBranch, AdviseLogBranch, AdviseOtherPath,
	AdviseExistingTrees, AdviseListTrees, AdvisePolicyEditPending, AdviseLandMode,

	AdviseCheckGH, AdviseCheckRemote, AdviseRenewalKept, AdviseRetryCommand, AdviseSyncAgain, AdviseClaimSyncAgain,
	AdviseUpgradeOrch,

	AdviseStepMove, AdviseStepAskToMove, AdviseStepClaim, AdviseStepHeartbeat, AdviseStepLockout, AdviseStepPR,
}
