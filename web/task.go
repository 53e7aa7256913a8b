package web

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

type taskPage struct {
	ID, Title, Queue, Priority, Path string
	Problem                          string
	Fields                           []field
	Body                             template.HTML
	Raw                              string
	Rounds                           []taskfile.Round
	// Submissions are the submit notes (orch submit -m), Verdicts every
	// decision on the work with its note (the event log).
	Submissions []note
	Verdicts    []verdict
	// Runs are the task's runs under orch run, and what they spent.
	Runs                    []runSpent
	Tokens                  int64
	Cost                    float64
	Waiting                 []string
	Branch, BranchTip, Base string
	BranchMissing           bool
	PR                      int
	PRHref                  string
	History                 []workflow.LogEntry
	// Landing: where the task's checks stand (approved, and provisional
	// when review.check is set), and the commit that holds its work.
	Check, CheckTitle, CheckClass string
	Landed                        string
	// Diff is the branch's work, for a task that has some to review or
	// that holds some: provisional, approved, done (nil otherwise).
	Diff    *diffView
	Refusal *refusalView
	Legal   []string
	// The actions this task's queue allows (shown when the browser may
	// act), and what was typed into a form that failed, kept.
	Can       map[string]bool
	Decisions []string
	Form      url.Values
}

// field is one frontmatter key, as written in the file.
type field struct {
	Key, Value string
	Orch       bool // owned by orch: changed only through verbs
}

// refusalView is a refusal that waits for orch decide.
type refusalView struct {
	By, Time, Default, Decide string
	Text                      template.HTML
}

// task is one task: its frontmatter as a table, its body rendered, its
// review rounds with every issue and answer, its branch and pull request,
// and its history on the state branch (orch log ID).
func (s *Server) task(r *http.Request, e *workflow.Engine, memo map[string]any, f *frame) (view, error) {
	// After an action (Post/Redirect/Get): say what it did. Only known
	// words are shown, so that a crafted link cannot put its own text in
	// the banner.
	q := r.URL.Query()
	if did := q.Get("did"); slices.Contains(actionVerbs, did) {
		f.Flash = did + ": done"
		from, to, commit := taskfile.Queue(q.Get("from")), taskfile.Queue(q.Get("to")), q.Get("commit")
		if from.Valid() && to.Valid() && isHex(commit) {
			f.Flash = did + ": " + string(from) + " → " + string(to) + " (commit " + commit + ")"
		}
	}
	return s.taskView(r, e, memo, f)
}

func isHex(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *Server) taskView(r *http.Request, e *workflow.Engine, memo map[string]any, f *frame) (view, error) {
	ref := r.PathValue("id")
	sm, _, err := e.LookupArchived(ref) // a card of the finished columns may be archived
	if err != nil {
		var amb *workflow.AmbiguousError
		if errors.As(err, &amb) {
			f.Title, f.Error, f.Hint = "Ambiguous", amb.Error(), "use more characters of the ID"
			return view{name: "error", status: http.StatusNotFound}, nil
		}
		return view{}, err
	}
	t, err := e.Load(sm)
	if err != nil {
		return view{}, err
	}
	tk := &sm.Task
	p := &taskPage{ID: tk.ID, Title: tk.Title, Queue: string(tk.Queue), Priority: tk.Priority, Path: sm.Path, Problem: sm.Problem}
	owned := map[string]bool{}
	for _, k := range taskfile.OrchOwned {
		owned[k] = true
	}
	for _, k := range t.File.Keys() {
		v, _ := t.File.Raw(k)
		p.Fields = append(p.Fields, field{Key: k, Value: v, Orch: owned[k]})
	}
	p.Rounds = t.File.FeedbackRounds()
	p.Submissions = submissionNotes(t.File)
	cut := map[int]bool{}
	for _, r := range p.Rounds {
		cut[r.Line] = true
	}
	for _, n := range p.Submissions {
		cut[n.line] = true
	}
	p.Body = markdown(bodyWithout(t.File, cut))
	if evs, err := eventsByTask(e, memo); err != nil {
		return view{}, err
	} else if te := evs[tk.ID]; te != nil {
		p.Verdicts, p.Runs, p.Tokens, p.Cost = te.Verdicts, te.Runs, te.Tokens, te.Cost
	}
	p.Raw = string(t.File.Src)
	if ok, pending := e.DepsDone(tk); !ok && tk.Queue.Open() {
		p.Waiting = pending
	}
	p.Branch, p.Base = tk.Branch, tk.BaseBranch
	if p.Base == "" {
		p.Base = e.Config.BaseBranch
	}
	if p.Branch != "" {
		if h, err := e.Store.ReadRef("refs/heads/" + p.Branch); err == nil && !h.IsZero() {
			p.BranchTip = h.String()
		} else {
			p.BranchMissing = true
		}
	}
	if p.PR = tk.PRNumber; p.PR > 0 && validRepoName(e.Config.GitHub.Repo) {
		p.PRHref = "https://github.com/" + e.Config.GitHub.Repo + "/pull/" + itoa(p.PR)
	}
	switch tk.Queue {
	case taskfile.Provisional, taskfile.Approved, taskfile.Done:
		p.Diff = taskDiff(e, tk)
	}
	if tk.Queue == taskfile.Approved || tk.Queue == taskfile.Provisional && e.Config.Review.Check != "" {
		p.Check, p.CheckTitle, p.CheckClass = checkState(e, tk)
	}
	if isHex(tk.LandedCommit) {
		p.Landed = tk.LandedCommit
	}
	if p.History, err = e.Log(tk.ID, 0); err != nil {
		return view{}, err
	}
	if pr, err := e.RefusalAwaiting(sm); err != nil {
		return view{}, err
	} else if pr != nil {
		p.Refusal = &refusalView{By: pr.By, Time: pr.Time, Default: pr.DefaultDecision, Decide: pr.Decide}
		if pr.Record != nil {
			p.Refusal.Text = markdown(workflow.RefusalText(pr.Record))
		}
	}
	p.Legal = workflow.LegalVerbs(tk.Queue)
	p.Can = map[string]bool{}
	for _, v := range actionVerbs {
		if slices.Contains(p.Legal, v) && sm.Problem == "" {
			p.Can[v] = true
		}
	}
	// decide answers a refusal awaiting a decision; a blocked task whose
	// refusal was accepted has nothing left to decide.
	if p.Refusal == nil {
		delete(p.Can, "decide")
	}
	p.Decisions = workflow.Decisions
	f.Title = tk.ID + " " + tk.Title
	return view{name: "task", data: p}, nil
}

// validRepoName accepts owner/name as GitHub spells them, so that a config
// value cannot turn the pull request's link into another address.
func validRepoName(s string) bool {
	owner, name, ok := strings.Cut(s, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return false
	}
	for _, c := range s {
		if !(c == '/' || c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// bodyWithout is the body without the sections that start at lines: its
// review rounds, which the page shows issue by issue above it, and its
// submit notes (the whole file is on the page too, as written).
func bodyWithout(f *taskfile.File, lines map[int]bool) string {
	src := f.Src
	var b strings.Builder
	at := f.BodyOffset()
	for _, sec := range f.Sections() {
		if sec.Level != 2 || !lines[sec.StartLine] {
			continue
		}
		if sec.Start < at || sec.End > len(src) {
			continue
		}
		b.Write(src[at:sec.Start])
		at = sec.End
	}
	b.Write(src[at:])
	return b.String()
}
