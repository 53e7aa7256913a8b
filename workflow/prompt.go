package workflow

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/prompt"
	"github.com/orch-tool/orch/taskfile"
)

// noteSections are the sections orch writes at the top of a task's body for
// the next reader; a prompt shows them in their own places, so they are cut
// from the task description it shows.
var noteSectionRE = lazyregexp.New(`^(Review Feedback \((?:rejection|landing|check) #\d+\)|Continuation Note \(.*\)|Refusal Overridden \(.*\)|Refusal \(.*\)|Failed \(.*\)|Decision \(.*\)|Reopened \(.*\)|Submission Note \(.*\))$`)

// Prompt renders the prompt for a task and role ("" picks reviewer for a
// submitted task, else implementer).
func (e *Engine) Prompt(id, role string) (string, string, error) {
	s := e.Store.SummaryByID(id)
	if s == nil {
		return "", "", &NotFoundError{What: "task", Ref: id, Next: Next{Advice: AdviseListTasks}}
	}
	return e.promptOf(s, role)
}

// promptOf is Prompt for a task looked up already.
func (e *Engine) promptOf(s *gitstore.Summary, role string) (string, string, error) {
	t, err := e.Load(s)
	if err != nil {
		return "", "", err
	}
	if role == "" {
		role = roleOf(&t.Task, e.Config)
		if t.Task.Queue == taskfile.Provisional {
			role = "reviewer"
		}
	}
	if !taskfile.ValidName(role) || strings.ContainsAny(role, " /") {
		return "", "", &UsageError{Msg: fmt.Sprintf("%q is not a role", printable(role))}
	}
	d := e.promptData(t, role)
	override, _ := e.Store.Snapshot().Read(gitstore.PromptsDir + "/" + role + ".md")
	tmplRole := role
	if len(override) == 0 && prompt.Default(role) == "" {
		// Roles without a template of their own work like an implementer.
		tmplRole = "implementer"
	}
	out, err := prompt.Render(tmplRole, override, d)
	if err != nil {
		return "", "", err
	}
	// Task text is an agent's and a person's: whatever control characters
	// a file holds (a hand edit, an orch older than text.Visible) are shown,
	// never passed to the next agent's terminal or model as they are.
	return text.Visible(out), role, nil
}

func (e *Engine) promptData(t *Task, role string) prompt.Data {
	task := &t.Task
	base := task.BaseBranch
	if base == "" {
		base = e.Config.BaseBranch
	}
	branch := task.Branch
	if branch == "" {
		branch = e.branchName(task, t.Path)
	}
	d := prompt.Data{
		Agent: e.Actor, Role: role,
		Task: prompt.Task{ID: task.ID, Title: task.Title, Queue: string(task.Queue), Priority: task.Priority, Branch: branch, BaseBranch: base,
			PRNumber: task.PRNumber, SubmittedBy: task.SubmittedBy, Path: filepath.ToSlash(filepath.Join(gitstore.ViewDirName, t.Path)),
			Body: description(t.File), DependsOn: task.DependsOn, Labels: task.Labels},
		Attempt:         max(task.Attempts, 1),
		RejectionCount:  task.RejectionCount,
		MaxRejections:   e.Config.Review.MaxRejections,
		RejectionsLeft:  e.Config.Review.MaxRejections - task.RejectionCount,
		NextRejection:   task.RejectionCount + 1,
		NoProgressCount: task.NoProgress,
		MaxNoProgress:   e.Config.Review.MaxNoProgress,
		NoProgressLeft:  e.Config.Review.MaxNoProgress - task.NoProgress,
		Round:           task.RejectionCount + 1,
		LockoutOn:       e.Config.Review.LockoutOn(),
		IsRetry:         task.RejectionCount > 0,
	}
	if task.Queue == taskfile.Incoming || task.Queue == taskfile.Rejected || task.Queue == taskfile.NeedsContinuation {
		d.Attempt = task.Attempts + 1
	}
	if task.Branch != "" {
		// The worktree that has the branch checked out is where all the
		// work happens; without one, the prompt says how to make it.
		if wts := e.Store.Repo.CheckedOutIn("refs/heads/" + task.Branch); len(wts) > 0 {
			d.Worktree = wts[0]
		}
	}
	rounds := t.File.FeedbackRounds()
	if len(rounds) > 0 && rounds[0].Landing && task.ApprovedCommit != "" {
		// Approved once, then sent back by the landing (or the check):
		// the reviewer needs only what changed since that approval.
		d.LandingRetry, d.ApprovedCommit = true, task.ApprovedCommit
	}
	if len(rounds) > 0 {
		r := prompt.NewRound(rounds[0])
		d.LatestRound = &r
		for _, old := range rounds[1:] {
			d.OlderRounds = append(d.OlderRounds, prompt.NewRound(old))
		}
	}
	// Notes are added newest first, above the review rounds: every note
	// before the first round was left since the newest rejection, and the
	// next agent needs all of them (a pause note, then the sweep of the
	// claim after it), not only the newest. A note older than the newest
	// round belongs to work the review has already judged.
	var notes []string
	pastRound := false
	for _, sec := range t.File.Sections() {
		if sec.Level != 2 {
			continue
		}
		switch {
		case strings.HasPrefix(sec.Title, "Review Feedback ("):
			pastRound = true
		case strings.HasPrefix(sec.Title, "Continuation Note (") && !pastRound:
			note := strings.TrimSpace(t.File.SectionText(sec))
			if len(notes) > 0 {
				// Older notes in one line each, as older review rounds
				// are: a task that crashed ten times must not hand the
				// next agent ten logs' tails.
				first, _, _ := strings.Cut(note, "\n")
				note = text.Clip(first, 200) + " (`orch show " + task.ID + "` has the whole note)"
			}
			notes = append(notes, "### "+strings.TrimPrefix(strings.TrimSuffix(sec.Title, ")"), "Continuation Note (")+"\n\n"+note)
			if len(notes) == 1 {
				d.ContinuationNote = note
			}
		case strings.HasPrefix(sec.Title, "Refusal Overridden (") && d.OverrideMessage == "":
			d.OverrideMessage = strings.TrimSpace(t.File.SectionText(sec))
		case strings.HasPrefix(sec.Title, "Submission Note (") && d.SubmitNote == "" && !pastRound:
			d.SubmitNote = strings.TrimSpace(t.File.SectionText(sec))
		case strings.HasPrefix(sec.Title, "Reopened (") && d.ReopenNote == "" && !pastRound:
			d.ReopenNote = strings.TrimSpace(t.File.SectionText(sec))
		}
	}
	if len(notes) > 1 {
		d.ContinuationNote = strings.Join(notes, "\n\n")
	}
	d.IsContinuation = !d.IsRetry && d.ContinuationNote != ""
	id := task.ID
	if d.LatestRound != nil {
		for _, is := range d.LatestRound.Blocking {
			if !is.Resolved && len(is.Responses) == 0 {
				d.Commands.Respond = append(d.Commands.Respond, fmt.Sprintf(`orch respond %s %s fixed -m "what you changed" --commit SHA`, id, is.ID))
			}
		}
	}
	submit := "orch submit " + id
	if task.PRNumber > 0 {
		submit += fmt.Sprintf(" --pr %d", task.PRNumber)
	}
	d.Commands.Submit = submit + ` -m "what changed"`
	d.Commands.Pause = "orch pause " + id + ` -m "done so far; next step"`
	d.Commands.Refuse = "orch refuse " + id + " -F refusal.json"
	d.Commands.Approve = "orch approve " + id
	d.Commands.Reject = "orch reject " + id + ` -m "what must change"`
	d.Commands.Review = "orch review " + id + ` -F -`
	d.Commands.Diff = "orch diff " + id
	return d
}

// description is the body without the note sections orch adds at the top.
func description(f *taskfile.File) string {
	body := f.Body()
	off := f.BodyOffset()
	var keep strings.Builder
	pos := off
	for _, sec := range f.Sections() {
		if sec.Level == 2 && noteSectionRE().MatchString(sec.Title) && sec.Start >= pos {
			keep.Write(f.Src[pos:sec.Start])
			pos = sec.End
		}
	}
	if pos < off+len(body) {
		keep.Write(f.Src[pos:])
	}
	text := strings.TrimSpace(keep.String())
	// Drop the "# Title" line: the prompt has its own heading.
	if strings.HasPrefix(text, "# ") {
		_, rest, _ := strings.Cut(text, "\n")
		text = strings.TrimSpace(rest)
	}
	if text == "" {
		text = "(no description: the title is the whole task)"
	}
	return text
}

// Prepared is what a claimed task needs before its work starts: its
// worktree and its prompt.
type Prepared struct {
	Worktree    string // its absolute path ("" when not asked for)
	NewWorktree bool   // made now, not found
	Prompt      string // for role ("" when not asked for)
}

// Prepare is the step after a claim, composed once for orch claim
// (--worktree, --prompt) and orch run: the task's worktree made or found
// again, then its prompt for role. A claim whose branch is not here fails
// with the worktree's RuleError no_branch.
func (e *Engine) Prepare(s *gitstore.Summary, role string, worktree, prompt bool) (*Prepared, error) {
	p := &Prepared{}
	if worktree {
		w, err := e.worktreeOf(s, "")
		if err != nil {
			return nil, err
		}
		p.Worktree, p.NewWorktree = w.Path, w.Created
	}
	if prompt {
		text, _, err := e.promptOf(s, role)
		if err != nil {
			return nil, err
		}
		p.Prompt = text
	}
	return p, nil
}
