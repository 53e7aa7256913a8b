package workflow

import (
	"sort"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// Prime is what an agent's session starts with (orch prime, run by a
// harness's session hook): the task the actor has claimed, where it works
// on it, and what the newest review asks; or that nothing is claimed.
type Prime struct {
	Task     *gitstore.Summary
	Others   []string // further tasks the actor has claimed, by id
	Worktree string   // the worktree with the task's branch checked out ("" when none)
	// Round is the newest review round's number (0: none); Open lists
	// its blocking issues not yet answered.
	Round int
	Open  []taskfile.Issue
	Notes []string // the round's notes, one line each
}

// Prime finds the actor's current task: the one whose worktree orch runs
// in, else the most recently claimed by the actor.
func (e *Engine) Prime() (*Prime, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	var mine []*gitstore.Summary
	e.Store.EachSummaryIn(map[taskfile.Queue]bool{taskfile.Claimed: true}, func(s *gitstore.Summary) {
		if s.Task.ClaimedBy == e.Actor {
			mine = append(mine, s)
		}
	})
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].Task.ClaimedAt.After(mine[j].Task.ClaimedAt) })
	p := &Prime{}
	if here := e.worktreeTask(); here != "" {
		for i, s := range mine {
			if s.Task.ID == here {
				mine[0], mine[i] = mine[i], mine[0]
			}
		}
	}
	if len(mine) == 0 {
		return p, nil
	}
	p.Task = mine[0]
	for _, s := range mine[1:] {
		p.Others = append(p.Others, s.Task.ID)
	}
	if b := p.Task.Task.Branch; b != "" {
		if wts := e.Store.Repo.CheckedOutIn("refs/heads/" + b); len(wts) > 0 {
			p.Worktree = wts[0]
		}
	}
	t, err := e.Load(p.Task)
	if err != nil {
		return nil, err
	}
	if rounds := t.File.FeedbackRounds(); len(rounds) > 0 && !rounds[0].Approval {
		p.Round = rounds[0].Number
		for _, src := range rounds[0].Sources {
			for _, is := range src.Issues {
				if is.Blocking && !is.Resolved && len(is.Responses) == 0 {
					p.Open = append(p.Open, is)
				}
			}
			if src.Text != "" {
				p.Notes = append(p.Notes, src.From+": "+firstSentence(src.Text))
			}
		}
	}
	return p, nil
}
