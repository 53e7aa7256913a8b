package workflow

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/orch-tool/orch/ghreview"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// PRTarget is a submitted task with a pull request to poll.
type PRTarget struct {
	ID string
	PR int
}

// PRTargets lists the provisional tasks that have a pr_number.
func (e *Engine) PRTargets() []PRTarget {
	var out []PRTarget
	e.Store.EachSummaryIn(map[taskfile.Queue]bool{taskfile.Provisional: true}, func(s *gitstore.Summary) {
		if s.Task.PRNumber > 0 && s.Problem == "" {
			out = append(out, PRTarget{ID: s.Task.ID, PR: s.Task.PRNumber})
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
		return nil, &NotFoundError{What: "task", Ref: id, Hint: "orch list shows the tasks"}
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
		return e.rejectChange(t, Rejection{Sources: fb.Sources, Verdict: "CHANGES_REQUESTED",
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
	if err := checkTexts(namedText{"the note (-m)", opts.Note}); err != nil {
		return nil, err
	}
	s := e.Store.SummaryByID(id)
	if s == nil {
		return nil, &NotFoundError{What: "task", Ref: id, Hint: "orch list shows the tasks"}
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
