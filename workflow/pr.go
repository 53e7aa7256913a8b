package workflow

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/orch-tool/orch/config"

	"github.com/orch-tool/orch/ghreview"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// prTarget is a submitted task with a pull request to poll.
type prTarget struct {
	ID string
	PR int
}

// prTargets lists the provisional tasks that have a pr_number.
func (e *Engine) prTargets() []prTarget {
	var out []prTarget
	e.Store.EachSummaryIn(map[taskfile.Queue]bool{taskfile.Provisional: true}, func(s *gitstore.Summary) {
		if s.Task.PRNumber > 0 && s.Problem == "" {
			out = append(out, prTarget{ID: s.Task.ID, PR: s.Task.PRNumber})
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// PRImport reports what importing a pull request's reviews did.
type PRImport struct {
	Task     string           `json:"task"`
	PR       int              `json:"pr_number,omitempty"`
	Outcome  ghreview.Outcome `json:"outcome"`
	Review   int64            `json:"review_id,omitempty"`
	Reviewer string           `json:"reviewer,omitempty"`
	Blocking int              `json:"blocking"`
	Comments int              `json:"comments"`
	To       string           `json:"to,omitempty"`
	Commit   string           `json:"commit,omitempty"`
	// Landed is a merged pull request's merge commit (land.mode:
	// github), recorded as the task's landed_commit.
	Landed string `json:"landed_commit,omitempty"`
}

// importedReviews tells which GitHub reviews a task holds already: its
// github_reviews field, or, in a file from before that field, the review's
// marker (never the text of a review: a body quoting a marker must not
// stop the real review).
func importedReviews(t *Task) func(int64) bool {
	if t.File.Has(taskfile.KeyGitHubReviews) {
		return func(id int64) bool { return slices.Contains(t.Task.GitHubReviews, strconv.FormatInt(id, 10)) }
	}
	return ghreview.ImportedIn(t.File.Src)
}

// ImportPR rejects a submitted task with the feedback of its pull request
// when the newest decisive review requests changes and was not imported
// before. Approved and comment-only pull requests are left alone.
func (e *Engine) ImportPR(id string, reviews []ghreview.Review, comments []ghreview.Comment) (*PRImport, error) {
	if err := checkTexts(gitHubTexts(reviews, comments)...); err != nil {
		return nil, err
	}
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	s := e.Store.SummaryByID(id)
	if s == nil {
		return nil, &NotFoundError{What: "task", Ref: id, Next: Next{Advice: AdviseListTasks}}
	}
	out := &PRImport{Task: id, PR: s.Task.PRNumber}
	t, err := e.Load(s)
	if err != nil {
		return nil, err
	}
	fb, outcome := ghreview.Decide(reviews, comments, importedReviews(t), t.Task.RejectionCount+1)
	out.Outcome = outcome
	if fb == nil {
		return out, nil
	}
	out.Review, out.Reviewer, out.Blocking, out.Comments = fb.Review.ID, fb.Review.User.Login, fb.Blocking, fb.Comments
	res, err := e.transition(id, ActionReject, func(t *Task) (*change, error) {
		// Decide again on the task as it is at this tip: a concurrent
		// import may have added the review meanwhile.
		fb, outcome := ghreview.Decide(reviews, comments, importedReviews(t), t.Task.RejectionCount+1)
		if fb == nil {
			out.Outcome = outcome
			return nil, nil
		}
		ids := append([]string(nil), t.Task.GitHubReviews...)
		for _, id := range fb.Included {
			if s := strconv.FormatInt(id, 10); !slices.Contains(ids, s) {
				ids = append(ids, s)
			}
		}
		return e.rejectChange(t, rejection{Sources: fb.Sources, Verdict: "CHANGES_REQUESTED",
			Edits:   []taskfile.Edit{taskfile.Set(taskfile.KeyGitHubReviews, taskfile.ListOf(ids))},
			Summary: fmt.Sprintf("GitHub review %d by %s requested changes (%d blocking, %d comment(s)).", fb.Review.ID, fb.Review.User.Login, fb.Blocking, fb.Comments),
			Data:    &RejectData{Source: "github", ReviewID: fb.Review.ID, Reviewer: fb.Review.User.Login}})
	})
	if err != nil {
		return nil, err
	}
	if res != nil && !res.Commit.IsZero() && res.From != res.To {
		out.To, out.Commit = string(res.To), res.Commit.String()
	}
	return out, nil
}

// SubmitCheck runs every check of submit (with opts) without committing
// anything, so that `submit --create-pr` never opens a pull request for a
// submission that would be refused.
func (e *Engine) SubmitCheck(id string, opts SubmitOptions) (*Task, error) {
	if err := checkTexts(namedText{"the note (-m)", &opts.Note}); err != nil {
		return nil, err
	}
	s := e.Store.SummaryByID(id)
	if s == nil {
		return nil, &NotFoundError{What: "task", Ref: id, Next: Next{Advice: AdviseListTasks}}
	}
	if err := e.editable(s); err != nil {
		return nil, err
	}
	if err := CheckTransition(ActionSubmit, id, s.Task.Queue); err != nil {
		return nil, err
	}
	t, err := e.Load(s)
	if err != nil {
		return nil, err
	}
	if err := e.requireClaimant(&t.Task, "submit"); err != nil {
		return nil, err
	}
	if err := e.submitGuards(t); err != nil {
		return nil, err
	}
	return t, nil
}

// PRRefusal is a pull request a poll could not import: gh could not read
// it, or its review was refused (a rule, a broken task file).
type PRRefusal struct {
	Task    string
	PR      int
	Message string
}

// PRPoll is what one orch pr poll did: the pull requests imported (or
// looked at), and those refused. Stopped is set when the repository itself
// failed half-way (what was imported before it is committed).
type PRPoll struct {
	Imports []*PRImport
	Refused []PRRefusal
	Stopped error
}

// PollPRs reads the reviews of every submitted task's pull request through
// gh, then imports those that request changes (orch pr poll); with
// land.mode: github it also reads each approved task's pull request and
// records what GitHub did (merged: done; closed unmerged: escalated;
// conflicting: a landing round, see landgithub.go). Each pull
// request stands on its own: one that cannot be read or imported is
// refused and the others go on. gh runs without the store lock held (it
// may take seconds). The error is gh's when it failed for every pull
// request (no network, not logged in): nothing was changed. scheduled is
// orch run's poll (run.poll_prs), which asks GitHub only where the
// repository names it.
func PollPRs(opts Options, scheduled bool) (*PRPoll, error) {
	var targets []prTarget
	var repoCfg, dir string
	e, err := Open(opts)
	if err != nil {
		return nil, err
	}
	if err := e.RequireInit(); err != nil {
		e.Close()
		return nil, err
	}
	targets, repoCfg = e.prTargets(), e.Config.GitHub.Repo
	landTargets := e.prLandTargets()
	landsOnGitHub := e.Config.Land.Mode == config.LandGitHub
	if dir = e.Store.Repo.WorkTree; dir == "" {
		dir = e.Store.Repo.GitDir
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	out := &PRPoll{}
	if len(targets)+len(landTargets) == 0 {
		return out, nil
	}
	if scheduled && repoCfg == "" && !landsOnGitHub {
		// orch run's run.poll_prs asks GitHub only where the repository
		// names it (github.repo, or landing through GitHub), so that a
		// queue that never named GitHub hears nothing of gh. A person's
		// orch pr poll still asks gh repo view.
		return out, nil
	}
	gh := ghreview.New(dir)
	repo, err := gh.Repo(repoCfg)
	if err != nil {
		return nil, GitHubFailure(err)
	}
	type prData struct {
		target   prTarget
		reviews  []ghreview.Review
		comments []ghreview.Comment
	}
	var data []prData
	var ghErr error // gh itself failed (not the data of one pull request)
	for _, t := range targets {
		rs, err := gh.Reviews(repo, t.PR)
		var cs []ghreview.Comment
		if err == nil {
			cs, err = gh.Comments(repo, t.PR)
		}
		if err != nil {
			var pe *ghreview.ParseError
			if !errors.As(err, &pe) && ghErr == nil {
				ghErr = err
			}
			out.Refused = append(out.Refused, PRRefusal{t.ID, t.PR, ghreview.CleanText(err.Error())})
			continue
		}
		data = append(data, prData{t, rs, cs})
	}
	var found []prFinding
	for _, t := range landTargets {
		v, err := gh.ViewPR(repo, t.pr)
		if err != nil {
			var pe *ghreview.ParseError
			if !errors.As(err, &pe) && ghErr == nil {
				ghErr = err
			}
			out.Refused = append(out.Refused, PRRefusal{t.c.Task, t.pr, ghreview.CleanText(err.Error())})
			continue
		}
		found = append(found, prSays(t.c, v))
	}
	if len(data)+len(found) == 0 && ghErr != nil {
		return nil, GitHubFailure(ghErr)
	}
	if e, err = Open(opts); err != nil {
		return nil, err
	}
	defer e.Close()
	for _, d := range data {
		s := e.Store.SummaryByID(d.target.ID)
		if s == nil || s.Task.Queue != taskfile.Provisional || s.Task.PRNumber != d.target.PR {
			continue // moved on while gh read GitHub
		}
		res, err := e.ImportPR(d.target.ID, d.reviews, d.comments)
		if err != nil {
			if !prRefusable(err) {
				out.Stopped = err
				return out, nil
			}
			out.Refused = append(out.Refused, PRRefusal{d.target.ID, d.target.PR, ghreview.CleanText(err.Error())})
			continue
		}
		out.Imports = append(out.Imports, res)
	}
	return out, e.pollLanded(found, out)
}

// prRefusable reports whether an import failed for a reason of its own
// pull request or task (a rule, a task file in conflict or broken), so that
// the poll goes on with the others; anything else is the repository's.
func prRefusable(err error) bool {
	var (
		rule     *RuleError
		illegal  *IllegalTransitionError
		conflict *ConflictError
		usage    *UsageError
		notFound *NotFoundError
		parse    *taskfile.ParseError
		invalid  *InvalidFileError
	)
	return errors.As(err, &rule) || errors.As(err, &illegal) || errors.As(err, &conflict) || errors.As(err, &usage) ||
		errors.As(err, &notFound) || errors.As(err, &parse) || errors.As(err, &invalid)
}

// GitHubFailure explains a gh problem; nothing was changed.
func GitHubFailure(err error) error {
	return &ExternalError{Msg: err.Error() + "; nothing was changed", Next: Next{Advice: AdviseCheckGH}}
}
