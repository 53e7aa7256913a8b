package workflow

// Who is acting, and what they may do (docs/design.md §5).
//
// The rules of the review loop bind agents, so every command knows whether
// its actor is an agent or a human, and refuses an agent what is a human's
// to do. The threat model is an agent that takes the shortest path a
// message shows it, not one that forges its environment: an agent's
// harness sets ORCH_AGENT, and nothing orch prints ever suggests acting
// under another name or granting oneself a role. Going around a rule
// (unsetting ORCH_AGENT) is a deliberate act, and leaves evidence: every
// event records the actor's kind and the signals it was judged by, and
// every refusal of authority is an event the lead sees in orch inbox.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// ActorKind is how orch governs an actor.
type ActorKind string

// The two kinds of actor.
const (
	KindAgent ActorKind = "agent"
	KindHuman ActorKind = "human"
)

// ActorSignals are what orch judged the actor by. Every event records them.
type ActorSignals struct {
	// Source is where the actor's name came from: --agent, ORCH_AGENT,
	// git user.name or login.
	Source string `json:"source"`
	// EnvAgent is ORCH_AGENT as set in the process environment.
	EnvAgent string `json:"orch_agent,omitempty"`
	// Worktree is the linked worktree the command ran in ("" for the main
	// worktree), and WorktreeTask the task whose branch it has checked out.
	Worktree     string `json:"worktree,omitempty"`
	WorktreeTask string `json:"worktree_task,omitempty"`
	// Terminal says whether stdin was a terminal.
	Terminal bool `json:"terminal"`
}

// KindOf returns how orch governs the actor named name, given the signals
// and the roster: an agent when ORCH_AGENT is set or the name is in agents:;
// a human when humans: lists the name, or when humans: is empty; anyone
// else is governed as an agent (the roster names the people).
func KindOf(c *config.Config, name string, sig ActorSignals) ActorKind {
	switch {
	case sig.EnvAgent != "":
		return KindAgent
	case c.RolesOf(name) != nil || c.InRoster(name):
		return KindAgent
	case len(c.Humans) == 0 || slices.Contains(c.Humans, name):
		return KindHuman
	}
	return KindAgent
}

// IsHuman reports whether the engine's actor is a human.
func (e *Engine) IsHuman() bool { return e.Kind == KindHuman }

// requireHuman refuses an agent a verb that is a human's (unlock, requeue,
// decide, archive, sweep, failing another's task, changing config.yaml or
// prompts/). The refusal is recorded as an event for the lead.
func (e *Engine) requireHuman(verb, id, what string) error {
	if e.IsHuman() {
		return nil
	}
	return e.refuseAuthority(verb, id, "authority", fmt.Sprintf("%s is an agent, and %s is for a human", e.Actor, what),
		// How to ask a human, never how to become one.
		Next{Advice: AdviseAskHuman, Task: id})
}

// refuseAuthority records a refused attempt (an event, and a note in the
// inbox) and returns the refusal. A failure to record it does not hide the
// refusal.
//
// Only agents' attempts are recorded (and a process claiming another's
// worktree): a person's slip is not evidence of anything, and a refusal
// otherwise changes nothing.
func (e *Engine) refuseAuthority(verb, id, rule, msg string, next Next) error {
	if !e.IsHuman() || rule == "identity" {
		e.recordAuthorityRefusal(verb, id, rule, msg)
	}
	return &RuleError{Rule: rule, Msg: msg, Next: next}
}

func (e *Engine) recordAuthorityRefusal(verb, id, rule, msg string) {
	e.recordAuthorityEvent(verb, id, rule, msg, func() gitstore.Change {
		return e.authorityMessage(verb, id, rule, fmt.Sprintf("%s was refused: orch %s", e.Actor, verb), msg,
			"Nothing was changed. If the agent needs what it tried, do it yourself, or answer it with guidance.")
	})
}

// recordEvidence records, in the event log and orch inbox, something an
// agent did that was allowed but must leave evidence a human sees (docs/design.md §5.5:
// a deliberate act leaves a trace), as an authority event of
// the agent's.
func (e *Engine) recordEvidence(verb, id, rule, title, msg, footer string) {
	e.recordAuthorityEvent(verb, id, rule, msg, func() gitstore.Change {
		c := e.authorityMessage(verb, id, rule, title, msg, footer)
		// Not a refusal: orch inbox shows the evidence itself.
		c.Data = []byte(strings.Replace(string(c.Data), "\nrule: "+rule+"\n", "\nrule: "+rule+"\nallowed: true\n", 1))
		return c
	})
}

// recordAuthorityEvent commits an authority event with its inbox message.
func (e *Engine) recordAuthorityEvent(verb, id, rule, msg string, message func() gitstore.Change) {
	if e.Store == nil || !e.Store.Exists() || e.recordedRefusal {
		return
	}
	inbox := message()
	e.recordedRefusal = true
	_, _ = e.Store.Update(func(snap *gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		ev := Event{Time: taskfile.FormatTime(e.Now()), Task: id, Action: ActionAuthorityRefused, Actor: e.Actor}
		c, err := e.eventChange(snap, ev, &AuthorityData{Verb: verb, Rule: rule, Message: msg})
		if err != nil {
			return nil, err
		}
		changes := []gitstore.Change{c, inbox}
		subject := id
		if subject == "" {
			subject = "-"
		}
		return &gitstore.CommitRequest{
			Changes: changes,
			Message: commitMessage(subject, ActionAuthorityRefused, "", "", e.Actor, fmt.Sprintf("Refused %s %s: %s", e.Actor, verb, msg), gitstore.Trailers{{Key: gitstore.TrailerVerb, Value: verb}}),
			Author:  e.Signature(),
		}, nil
	})
}

// authorityMessage is the inbox's note of a refused attempt:
// messages/<time>-authority-<clone>.md.
func (e *Engine) authorityMessage(verb, id, rule, title, msg, footer string) gitstore.Change {
	now := e.Now().UTC()
	name := fmt.Sprintf("%s/%s-authority-%s.md", gitstore.MessagesDir, now.Format("20060102T150405.000Z"), e.cloneID())
	var b strings.Builder
	fmt.Fprintf(&b, "---\nreason: authority\n")
	if id != "" {
		fmt.Fprintf(&b, "task: %s\n", id)
	}
	fmt.Fprintf(&b, "created: %s\nby: %q\nkind: %s\nverb: %q\nrule: %s\n---\n", taskfile.FormatTime(now), e.Actor, e.Kind, verb, rule)
	fmt.Fprintf(&b, "# %s\n\n## Why\n\n%s\n\n", title, msg)
	sig := e.Signals
	b.WriteString("## Signals\n\n")
	fmt.Fprintf(&b, "- name from: %s\n- ORCH_AGENT: %s\n- worktree: %s\n- terminal: %v\n", sig.Source, orDash(sig.EnvAgent), orDash(sig.Worktree), sig.Terminal)
	if sig.WorktreeTask != "" {
		fmt.Fprintf(&b, "- worktree of task: %s\n", sig.WorktreeTask)
	}
	b.WriteString("\n" + footer + "\n")
	return gitstore.Change{Path: name, Data: []byte(b.String())}
}

// authorityWindow is how far back orch inbox lists refused attempts.
const authorityWindow = 7 * 24 * time.Hour

// checkIdentity applies the rules on who may say they are whom: with
// ORCH_AGENT set, --agent names that agent; in the worktree of a task
// claimed by an agent, a command that changes anything runs as that agent.
func (e *Engine) checkIdentity(readOnly bool) error {
	sig := e.Signals
	if sig.EnvAgent != "" && e.Actor != sig.EnvAgent {
		named := e.Actor
		e.Actor, e.Kind = sig.EnvAgent, KindAgent // the record names who tried
		return e.refuseAuthority(e.Verb, "", "identity",
			fmt.Sprintf("ORCH_AGENT is %s: this process acts as %s, and --agent may not name anyone else (it named %s)", sig.EnvAgent, sig.EnvAgent, named),
			Next{Advice: AdviseActAsYourself, Agent: sig.EnvAgent})
	}
	if readOnly || sig.WorktreeTask == "" {
		return nil
	}
	s := e.Store.SummaryByID(sig.WorktreeTask)
	if s == nil || s.Task.Queue != taskfile.Claimed || s.Task.ClaimedBy == "" || s.Task.ClaimedBy == e.Actor {
		return nil
	}
	return e.refuseAuthority(e.Verb, s.Task.ID, "identity",
		fmt.Sprintf("this is the worktree of %s, claimed by %s: orch changes nothing here as %s", s.Task.ID, s.Task.ClaimedBy, e.Actor),
		Next{Advice: AdviseEscalate, Task: s.Task.ID})
}

// ForActor fits an error to the actor before it is shown: an illegal
// transition lists, to an agent, only the verbs an agent may use (never a
// human's verb as the way on).
func (e *Engine) ForActor(err error) error {
	var il *IllegalTransitionError
	if e == nil || e.IsHuman() || !errors.As(err, &il) {
		return err
	}
	var mine []string
	for _, v := range il.Legal {
		if t := TransitionFor(Action(v)); t == nil || t.agentMay(il.Queue) {
			mine = append(mine, v)
		}
	}
	// What a human would do, the agent asks for.
	if escalate := string(ActionEscalate); len(mine) < len(il.Legal) && !slices.Contains(mine, escalate) && TransitionFor(ActionEscalate).Allows(il.Queue) {
		mine = append(mine, escalate)
	}
	cp := *il
	cp.Legal = mine
	return &cp
}

// worktreeTask finds the task whose branch the current linked worktree has
// checked out ("" in the main worktree, or on no task's branch).
func (e *Engine) worktreeTask() string {
	repo := e.Store.Repo
	if repo.WorkTree == "" || repo.WorkTree == repo.MainWorkTree {
		return ""
	}
	if s := e.taskOfBranch(repo.HeadBranch(), map[taskfile.Queue]bool{taskfile.Claimed: true}); s != nil {
		return s.Task.ID
	}
	return ""
}

// requireClaimant refuses an actor a verb that belongs to the task's
// claimant (pause, submit, respond, refuse).
func (e *Engine) requireClaimant(t *taskfile.Task, verb string) error {
	if t.ClaimedBy == "" || t.ClaimedBy == e.Actor {
		return nil
	}
	return e.refuseAuthority(verb, t.ID, "not_claimer", fmt.Sprintf("%s is claimed by %s, not %s: only the agent working on it may %s it", t.ID, t.ClaimedBy, e.Actor, verb),
		Next{Advice: AdviseOtherWork, Task: t.ID})
}

// workers are the actors that worked on a task in any round: those who
// claimed it (worked_by), submitted it, or were locked out after a
// rejection. None of them may review it.
func workers(t *taskfile.Task) []string {
	out := append([]string(nil), t.WorkedBy...)
	for _, n := range append([]string{t.ClaimedBy, t.SubmittedBy}, t.LockedOut...) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// String is "agent" or "human", for messages.
func (k ActorKind) String() string { return string(k) }

// checkReviewer applies review authority (docs/design.md §5.2): with
// review.reviewers set only they review among agents (a human always may),
// each within its scope (checkReviewerScope), and nobody reviews a task
// they worked on in any round. ground is what put the task in a scoped
// reviewer's scope, for the change to record ("" for anyone else).
func (e *Engine) checkReviewer(t *Task, verb Action) (ground string, err error) {
	if !e.IsHuman() && !e.Config.IsReviewer(e.Actor) {
		return "", e.refuseAuthority(string(verb), t.Task.ID, "reviewer",
			fmt.Sprintf("%s may not %s %s: review.reviewers names who reviews, and %s is not among them", e.Actor, verb, t.Task.ID, e.Actor),
			Next{Advice: AdviseNotReviewer})
	}
	if ground, err = e.checkReviewerScope(t, verb); err != nil {
		return "", err
	}
	if !e.IsHuman() && e.reviewClaimedByOther(&t.Task) {
		return "", e.refuseAuthority(string(verb), t.Task.ID, "review_claimed",
			fmt.Sprintf("%s is being reviewed by %s (a review claim, until %s): one reviewer reviews a submission at a time", t.Task.ID, t.Task.ReviewClaimedBy, taskfile.FormatTime(e.reviewLeaseEnd(&t.Task))),
			Next{Advice: AdviseReviewClaimed})
	}
	if slices.Contains(workers(&t.Task), e.Actor) {
		return "", e.refuseAuthority(string(verb), t.Task.ID, "self_review",
			fmt.Sprintf("%s worked on %s and may not %s it: nobody reviews their own work, in any round", e.Actor, t.Task.ID, verb),
			Next{Advice: AdviseSelfReview})
	}
	return ground, nil
}

// checkReviewerScope refuses an agent whose review.reviewers entry is
// scoped a task outside its scope, and otherwise returns the ground it acts
// on. A human may always review (docs/design.md §5.2), so a scope binds agents only.
func (e *Engine) checkReviewerScope(t *Task, verb Action) (ground string, err error) {
	if e.IsHuman() {
		return "", nil
	}
	r := e.Config.ReviewerEntry(e.Actor)
	if r == nil {
		return "", nil
	}
	role := roleOf(&t.Task, e.Config)
	ground, ok := r.Covers(role, t.Task.Labels)
	if ok {
		return ground, nil
	}
	labels := "with no label"
	if len(t.Task.Labels) > 0 {
		labels = "labelled " + strings.Join(t.Task.Labels, ", ")
	}
	return "", e.refuseAuthority(string(verb), t.Task.ID, "reviewer_scope",
		fmt.Sprintf("%s may not %s %s: review.reviewers scopes %s to %s, and %s is of role %s, %s", e.Actor, verb, t.Task.ID, e.Actor, r.ScopeText(), t.Task.ID, role, labels),
		Next{Advice: AdviseOutsideScope})
}
