package main

import (
	"fmt"
	"strings"

	"github.com/orch-tool/orch/workflow"
)

// hintFor words what workflow says comes next: the hint of an error, as
// every door shows it (the CLI, --json, orch mcp, the board through
// serve's Explain). An empty or unknown advice has no words.
func hintFor(n workflow.Next) string {
	for _, hint := range []func(workflow.Next, string) (string, bool){taskHint, authorityHint, textHint, argumentHint, treeHint, remoteHint, stepHint} {
		if h, ok := hint(n, n.Task); ok {
			return h
		}
	}
	return ""
}

// taskHint words an advice about tasks and their IDs (ok false: another kind's).
func taskHint(n workflow.Next, id string) (string, bool) {
	switch n.Advice {
	case workflow.AdviseListTasks:
		return "orch list shows the tasks", true
	case workflow.AdvisePassTaskID:
		return "pass a task ID (orch list shows them)", true
	case workflow.AdviseListReady:
		return "orch list --ready shows what you can claim", true
	case workflow.AdviseShowTask:
		return "orch show " + id + " shows the task", true
	case workflow.AdviseShowBrief:
		return "orch show " + id, true
	case workflow.AdviseShowWaitsFor:
		return "orch show " + id + " lists what it waits for", true
	case workflow.AdviseShowRounds:
		return "orch show " + id + " shows its rounds", true
	case workflow.AdviseListIssues:
		return "orch show " + id + " --json lists the issues (rounds)", true
	case workflow.AdviseLogTask:
		return "orch log " + id + " shows what happened", true
	case workflow.AdviseCheckProblem:
		return "orch check shows the problem", true
	case workflow.AdviseEditWhat:
		return "edit a task by ID, or config, or prompts/<role>.md", true
	case workflow.AdviseDiffWhole:
		return "orch diff " + id + " shows the whole change", true
	case workflow.AdviseClaimWorktree:
		return "orch claim --worktree takes a task", true
	case workflow.AdviseClaimFirst:
		return "claim it first: orch claim --task " + id, true
	case workflow.AdviseClaimWithTree:
		return "claim it first: orch claim --task " + id + " --worktree", true
	}
	return "", false
}

// authorityHint words an advice about authority (docs/design.md §5.5): how
// to ask, or what else to do (ok false: another kind's).
func authorityHint(n workflow.Next, id string) (string, bool) {
	switch n.Advice {
	case workflow.AdviseAskHuman:
		if id == "" {
			id = "ID"
		}
		return fmt.Sprintf("this is for a human: ask one with orch escalate %s -m \"what you need and why\" (it lands in orch inbox), or take other work with orch claim", id), true
	case workflow.AdviseActAsYourself:
		return fmt.Sprintf("every orch command of this process acts as %s; to ask a human for something: orch escalate ID -m \"...\"", n.Agent), true
	case workflow.AdviseEscalate:
		return "orch escalate " + id + " -m \"...\" asks a human", true
	case workflow.AdviseOtherWork:
		return "orch claim takes other work; orch escalate " + id + " -m \"...\" asks a human", true
	case workflow.AdviseNotReviewer:
		return "a reviewer or a human reviews it; orch claim takes other work", true
	case workflow.AdviseReviewClaimed:
		return "orch list --queue provisional shows the other submitted work; orch claim takes other work", true
	case workflow.AdviseSelfReview:
		return "someone who did not work on it reviews it; orch claim takes other work", true
	case workflow.AdviseOutsideScope:
		return "it is outside your review scope: a reviewer whose scope covers it, or a human, reviews it; orch list --queue provisional shows the other submitted work", true
	case workflow.AdviseLockedOut:
		return "your work on it was rejected, so another agent takes it; orch list --ready shows what you can claim (orch escalate " + id + " -m \"...\" asks a human)", true
	case workflow.AdviseClaimLost:
		return "stop working on " + id + ": it is not yours any more, and its submit would be refused; orch claim takes other work", true
	case workflow.AdviseRunEnded:
		return "stop working on " + id + ": your run of it has ended (orch log " + id + " says how); nothing was changed", true
	case workflow.AdviseSetRecordTask:
		return fmt.Sprintf("set task_id to %s (or leave it out: orch takes the task from the command line), then refuse again", id), true
	case workflow.AdviseSetRecordAgent:
		return fmt.Sprintf("set agent_id to %s (or leave it out: orch records who refuses), then refuse again", n.Agent), true
	case workflow.AdviseUnlockFirst:
		return fmt.Sprintf("unlock first: orch unlock %s %s", id, n.Agent), true
	case workflow.AdviseAwaitsReview:
		return "it waits for review: orch reject " + id + ` -m "..."` + " or orch approve " + id, true
	case workflow.AdviseReviewInstead:
		return "review it instead (orch review " + id + " lists what is still open), or reject it", true
	case workflow.AdviseDecideExplicit:
		return "decide explicitly: orch decide " + id + " override|accept -m TEXT", true
	case workflow.AdviseRequeueTo:
		return "orch requeue " + id + " --to AGENT gives it to someone", true
	case workflow.AdviseOverrideAccept:
		return "use override or accept, or create the tasks by hand", true
	case workflow.AdviseDeferReform:
		return "decide defer or reformulate, or create the tasks with orch new", true
	case workflow.AdviseKeepPR:
		return fmt.Sprintf("push your commits to %s (PR #%d updates itself) and run orch submit %s; if PR #%d cannot be used any more, ask a human with orch escalate %s -m \"why\"", n.Branch, n.PR, id, n.PR, id), true
	case workflow.AdviseMovePR:
		return fmt.Sprintf("run orch submit %s without --pr (PR #%d updates itself when %s is pushed); to move the task to PR #%d, set pr_number: %d with orch edit %s first", id, n.PR, n.Branch, n.NewPR, n.NewPR, id), true
	case workflow.AdviseAnswerBlocking:
		return fmt.Sprintf("answer each: orch respond %s %s fixed -m \"what you changed\" --commit SHA", id, n.Issue), true
	case workflow.AdviseCommitFixes:
		return "commit your fixes on " + n.Branch + " first (git log " + n.Branch + " shows where it stands)", true
	case workflow.AdviseCommitWork:
		return "commit your work on " + n.Branch + " in the task's worktree (orch worktree " + id + "), then orch submit " + id, true
	case workflow.AdviseRespondFixed:
		return `orch respond ` + id + ` ` + n.Issue + ` fixed -m "what you changed" --commit SHA`, true
	case workflow.AdviseJustifyBlocking:
		return justifyHint(id, n.Issue) + `; if the issue is right but hard to fix, fix it, or ask a human: orch escalate ` + id + ` -m "..."`, true
	case workflow.AdviseJustifyOrDefer:
		return justifyHint(id, n.Issue) + `; or defer it: orch respond ` + id + ` ` + n.Issue + ` deferred -m "tracked as ..."`, true
	case workflow.AdviseDropSuggestion:
		return "drop it, or raise it as a new task", true
	}
	return "", false
}

// textHint words an advice about a text a verb needs, with an example (ok
// false: another kind's).
func textHint(n workflow.Next, id string) (string, bool) {
	switch n.Advice {
	case workflow.AdviseEscalateText:
		return `orch escalate ` + id + ` -m "why"`, true
	case workflow.AdvisePauseText:
		return `orch pause ` + id + ` -m "done: X; next: Y"`, true
	case workflow.AdviseFailText:
		return `orch fail ` + id + ` -m "reason"`, true
	case workflow.AdviseReopenText:
		return `orch reopen ` + id + ` -m "what changed since it failed"`, true
	case workflow.AdviseRejectText:
		return `orch reject ` + id + ` -m "what must change"`, true
	case workflow.AdviseAmendText:
		return `orch reject ` + id + ` --amend -m "what the comments mean"`, true
	case workflow.AdviseOverrideText:
		return `orch decide ` + id + ` override -m "The API key is in the vault; try again"`, true
	case workflow.AdviseRespondText:
		return `orch respond ` + id + ` ` + n.Issue + ` ` + n.Status + ` -m "what you changed"`, true
	case workflow.AdviseJustifyText:
		return `orch respond ` + id + ` ` + n.Issue + ` rejected -m "why the issue does not apply"`, true
	case workflow.AdviseShortenText:
		return "shorten it: commit a long log or listing as a file (on the task's branch, say) and name its path in the text; nothing was recorded", true
	case workflow.AdviseShortenLog:
		return "shorten it: quote only the lines of a log that matter, and commit the whole log as a file on the task's branch named by its path; nothing was recorded", true
	}
	return "", false
}

// argumentHint words an advice about the form of an argument (ok false: another kind's).
func argumentHint(n workflow.Next, id string) (string, bool) {
	switch n.Advice {
	case workflow.AdviseNewTitle:
		return `orch new "Fix the login redirect"`, true
	case workflow.AdviseTitleInBody:
		return "put the detail in the body (--body or -F)", true
	case workflow.AdvisePlainText:
		return "use plain text", true
	case workflow.AdvisePriorities:
		return "use P0..P3 or critical, high, medium, low", true
	case workflow.AdviseNameForm:
		return "names are letters, digits, spaces and . _ - + @, up to 64 characters", true
	case workflow.AdviseInitBase:
		return "orch init --base main", true
	case workflow.AdviseReviewForm:
		return `a review is {"issues": [{"severity": "HIGH", "title": "...", "location": "file:line", "problem": "...", "fix": "...", "why": "...", "id": "TL-001", "blocking": true, "fix_patch": "--- a/f\n+++ b/f\n..."}], "reopen": ["R1.2"], "notes": "..."}`, true
	case workflow.AdviseIssueFlag:
		return `--issue 'HIGH|SQL injection|src/api/users.py:56|input is interpolated|use a parameterised query'`, true
	case workflow.AdviseSeverities:
		return `CRITICAL and HIGH block approval; MEDIUM and LOW are suggestions; "blocking": true or false alone also says which`, true
	case workflow.AdviseSeverityOrFlag:
		return `CRITICAL and HIGH block, MEDIUM and LOW do not: correct the severity or the blocking flag, or leave "blocking" out`, true
	case workflow.AdviseReviewIsText:
		return "a review is text: no NUL, escape or other control characters", true
	case workflow.AdviseReviewerID:
		return "leave id out, or give the issue a label of your own (like TL-001): it is kept beside " + n.Issue, true
	case workflow.AdviseNameIssueByID:
		return "name the issue by orch's ID: " + strings.Join(n.Issues, " or "), true
	case workflow.AdviseFixCommit:
		return "give the commit that fixes it: --commit HEAD in the task's worktree after committing, or its hash (git log --oneline)", true
	case workflow.AdviseMoreDigits:
		return "give more digits of the hash", true
	case workflow.AdviseCommitOnBranch:
		return "commit the fix on the task's branch (in its worktree: orch worktree " + id + "), then answer with --commit HEAD from there", true
	case workflow.AdviseNoCommitFlag:
		return "answer without --commit, saying what changed in the text", true
	}
	return "", false
}

// treeHint words an advice about files, branches and worktrees (ok false: another kind's).
func treeHint(n workflow.Next, id string) (string, bool) {
	switch n.Advice {
	case workflow.AdviseFixOrDelete:
		return "fix the file (orch check shows the line), or delete it to restore the committed version", true
	case workflow.AdviseEditOrDelete:
		return "edit " + n.Path + " to the version you want (orch commits it), or delete it to take the branch's version", true
	case workflow.AdviseFixViewFirst:
		return "fix or delete the view file first (orch check shows the problem)", true
	case workflow.AdviseEditAgain:
		if id == "" {
			return "run orch edit again", true
		}
		return "run orch edit " + id + " again", true
	case workflow.AdviseEditAgainFromNew:
		return "run orch edit " + id + " again: it starts from the new version", true
	case workflow.AdviseOwnedFields:
		return ownedFieldSteps(n.Steps) + "; edit again leaving those fields as they are", true
	case workflow.AdviseFixBranchField:
		return "fix branch: in the task file", true
	case workflow.AdviseDropBranchField:
		return "remove branch: from the task file (orch edit " + id + "), and orch names one", true
	case workflow.AdviseCreateBase:
		return "create it (git branch " + n.Base + "), or set base_branch in config.yaml (orch edit config) or in the task", true
	case workflow.AdviseBaseFromHere:
		return fmt.Sprintf("the branch checked out here is %s: if tasks start from it, set base_branch: %s in config.yaml (orch edit config); or create %s", n.Branch, n.Branch, n.Base), true
	case workflow.AdviseAskForBase:
		return fmt.Sprintf("a person sets up the base branch: ask one with orch escalate %s -m \"the base branch %s does not exist\"", id, n.Base), true
	case workflow.AdviseFetchOrReclaim:
		return "fetch it (git fetch origin " + n.Branch + ":" + n.Branch + "), or claim the task again to recreate it", true
	case workflow.AdviseFetchBranch:
		return "fetch it (git fetch origin " + n.Branch + ":" + n.Branch + ")", true
	case workflow.AdviseLogBranch:
		return "git log " + n.Branch + " shows the branch", true
	case workflow.AdviseOtherPath:
		return "pass another --path, or set worktree_dir in config.yaml", true
	case workflow.AdviseExistingTrees:
		return "git worktree list shows the existing worktrees", true
	case workflow.AdviseListTrees:
		return "git worktree list shows the worktrees", true
	case workflow.AdviseLandMode:
		return "set land: mode: local (or github) in .orchestrator/config.yaml (with format: 3), then orch check", true
	case workflow.AdvisePolicyEditPending:
		v := ".orchestrator/" + n.Path
		return fmt.Sprintf("read the change above; if you mean it, commit it yourself with orch check (it shows what it commits); if not, undo it: git show %s:%s > %s (orch inbox says which run it was found after)", n.Branch, n.Path, v), true
	}
	return "", false
}

// remoteHint words an advice about tools and remotes (ok false: another kind's).
func remoteHint(n workflow.Next, id string) (string, bool) {
	switch n.Advice {
	case workflow.AdviseCheckGH:
		return "check that gh is installed and logged in (gh auth status), or set ORCH_GH; orch pr import works from saved JSON offline", true
	case workflow.AdviseCheckRemote:
		return "check the remote (git remote -v) and your access to it; nothing was pushed", true
	case workflow.AdviseRenewalKept:
		return "the renewal is committed here; orch sync shares it", true
	case workflow.AdviseRetryCommand:
		return "run the command again; orch sync shows the remote", true
	case workflow.AdviseSyncAgain:
		return "run orch sync again", true
	case workflow.AdviseClaimSyncAgain:
		return "run orch claim --sync again; orch sync shows the remote", true
	case workflow.AdviseArchived:
		return "orch show " + id + " and orch log " + id + " read it from the archive; a person brings it back with orch reopen " + id + " -m \"why\"", true
	case workflow.AdviseUpgradeOrch:
		return "install the orch the repository's other clones run (orch version shows this one's); reading (list, show, log) works meanwhile", true
	}
	return "", false
}

// stepHint words an advice that is one step of AdviseOwnedFields (ok false: another kind's).
func stepHint(n workflow.Next, id string) (string, bool) {
	switch n.Advice {
	case workflow.AdviseStepMove:
		return fmt.Sprintf("orch %s %s moves it to %s", n.Verb, id, n.Queue), true
	case workflow.AdviseStepAskToMove:
		return "a reviewer or a human moves it to " + string(n.Queue) + " (orch escalate " + id + " -m \"...\" asks one)", true
	case workflow.AdviseStepClaim:
		return "orch claim --task " + id + " claims it", true
	case workflow.AdviseStepHeartbeat:
		return "orch heartbeat " + id + " renews the claimant's lease", true
	case workflow.AdviseStepLockout:
		return "a human lifts a lockout", true
	case workflow.AdviseStepPR:
		return "orch submit " + id + " --pr N records its pull request", true
	}
	return "", false
}

// justifyHint is how a rejection of a review issue says why it does not
// apply, with an example of a justification that does.
func justifyHint(id, issue string) string {
	return `say why it does not apply: orch respond ` + id + ` ` + issue + ` rejected -m "the input is validated upstream in auth.py:13, before it reaches the query"`
}

// ownedFieldSteps words what makes each change a hand edit tried of
// orch-owned fields ("orch keeps them itself" when no verb does).
func ownedFieldSteps(steps []workflow.Next) string {
	if len(steps) == 0 {
		return "orch keeps them itself"
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = hintFor(s)
	}
	return strings.Join(out, "; ")
}

// hintOf is an error's hint: the words a door outside workflow gave it,
// else the words of its Next.
func hintOf(hint string, next workflow.Next) string {
	if hint != "" {
		return hint
	}
	return hintFor(next)
}
