package workflow

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// ListFilter selects tasks for List. Every field given must match.
type ListFilter struct {
	Queues []taskfile.Queue
	Ready  bool // only tasks a claim by the actor could take now
	// Labels: the task has every one of them.
	Labels []string
	// Role, ClaimedBy: exactly this (the task's role, default_role when
	// it names none).
	Role, ClaimedBy string
	// Priorities: one of them (P0..P3).
	Priorities []string
	// Search: in the title or the body, ignoring case.
	Search string
	// Sort: claim (the default: by queue in board order, then claim
	// order), priority, created (newest first), id, title.
	Sort string
	// Archived: the archive's tasks too (list --all, the boards' finished
	// columns). They are read from the branch, every one: the one listing
	// that costs what the project's whole history holds.
	Archived bool
}

// ListSorts are the orders List knows.
var ListSorts = []string{"claim", "priority", "created", "id", "title"}

// List returns the tasks that pass the filter: by queue in board order, and
// in claim order within a queue (or in claim order overall with Ready).
func (e *Engine) List(f ListFilter) ([]*gitstore.Summary, error) {
	hs, err := e.ListHeaders(f)
	if err != nil {
		return nil, err
	}
	out := make([]*gitstore.Summary, len(hs))
	for i, h := range hs {
		out[i] = h.Summary()
	}
	return out, nil
}

// ListHeaders is List without decoding the tasks that claim order and the
// filter do not need whole (none without a filter that reads more than
// the header: orch list --json then decodes each task only as it writes
// it, and keeps none).
func (e *Engine) ListHeaders(f ListFilter) ([]*gitstore.SummaryHeader, error) {
	want := map[taskfile.Queue]bool{}
	for _, q := range f.Queues {
		want[q] = true
	}
	if f.Ready {
		// Only the claim queues can be ready: the others are not decoded.
		only := map[taskfile.Queue]bool{}
		for q := range claimQueues {
			if len(want) == 0 || want[q] {
				only[q] = true
			}
		}
		if len(only) == 0 {
			return nil, nil
		}
		want = only
	}
	var out []*gitstore.SummaryHeader
	search := strings.ToLower(strings.TrimSpace(f.Search))
	matchSearch := func(s *gitstore.Summary) bool {
		if search == "" || strings.Contains(strings.ToLower(s.Task.Title), search) {
			return true
		}
		// The body only when the title does not match: it is read from
		// the branch.
		t, err := e.Load(s)
		return err == nil && strings.Contains(strings.ToLower(string(t.File.Body())), search)
	}
	whole := f.Ready || search != "" || len(f.Labels) > 0 || f.Role != "" || f.ClaimedBy != "" || f.Sort == "title"
	if !whole {
		if len(want) == 0 && len(f.Priorities) == 0 {
			// Every task: appending would copy the list again and again.
			out = make([]*gitstore.SummaryHeader, 0, e.Store.SummaryCount())
		}
		e.Store.EachSummaryHeaderIn(want, func(h *gitstore.SummaryHeader) {
			if len(f.Priorities) == 0 || slices.Contains(f.Priorities, h.Priority) {
				out = append(out, h)
			}
		})
	} else {
		// Ready means what a claim by the actor would take, by the one rule
		// claim applies (whyNot): queue, dependencies, role, assignment,
		// lockout, and a view file that can be changed.
		roles, _ := e.agentRoles("")
		e.Store.EachSummaryHeaderIn(want, func(h *gitstore.SummaryHeader) {
			s := h.Summary()
			if !e.listMatch(s, &f) {
				return
			}
			if f.Ready {
				if rule, _ := e.whyNot(s, roles); rule != "" {
					return
				}
			}
			if !matchSearch(s) {
				return
			}
			out = append(out, h)
		})
	}
	if f.Archived && !f.Ready {
		archived, err := e.ArchivedTasks()
		if err != nil {
			return nil, err
		}
		for _, s := range archived {
			if (len(want) == 0 || want[s.Task.Queue]) && e.listMatch(s, &f) && matchSearch(s) {
				out = append(out, gitstore.HeaderOf(s))
			}
		}
	}
	sortHeadersClaimOrder(out, !f.Ready)
	switch f.Sort {
	case "priority":
		slices.SortStableFunc(out, func(a, b *gitstore.SummaryHeader) int {
			return cmp.Compare(taskfile.PriorityRank(a.Priority), taskfile.PriorityRank(b.Priority))
		})
	case "created":
		// Newest first; a task without a creation time last.
		newest := func(h *gitstore.SummaryHeader) int64 {
			if h.Created == gitstore.NoCreated {
				return math.MinInt64
			}
			return h.Created
		}
		slices.SortStableFunc(out, func(a, b *gitstore.SummaryHeader) int { return cmp.Compare(newest(b), newest(a)) })
	case "id":
		slices.SortStableFunc(out, func(a, b *gitstore.SummaryHeader) int { return cmp.Compare(a.ID, b.ID) })
	case "title":
		slices.SortStableFunc(out, func(a, b *gitstore.SummaryHeader) int {
			return cmp.Compare(strings.ToLower(a.Summary().Task.Title), strings.ToLower(b.Summary().Task.Title))
		})
	}
	return out, nil
}

// ShowsFinished reports whether a listing of queues qs shows a finished
// queue, whose tasks the archive holds too.
func ShowsFinished(qs []taskfile.Queue) bool {
	return slices.ContainsFunc(qs, func(q taskfile.Queue) bool { return !q.Open() })
}

// listMatch applies the filter's fields that the summary alone answers.
func (e *Engine) listMatch(s *gitstore.Summary, f *ListFilter) bool {
	t := &s.Task
	for _, l := range f.Labels {
		if !slices.Contains(t.Labels, l) {
			return false
		}
	}
	if f.Role != "" && roleOf(t, e.Config) != f.Role {
		return false
	}
	if f.ClaimedBy != "" && t.ClaimedBy != f.ClaimedBy {
		return false
	}
	if len(f.Priorities) > 0 && !slices.Contains(f.Priorities, t.Priority) {
		return false
	}
	return true
}
