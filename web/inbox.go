package web

import (
	"net/http"
	"sort"
	"time"

	"github.com/orch-tool/orch/workflow"
)

type inboxPage struct {
	Escalated []inboxItem
	Refused   []inboxItem
	Authority []inboxItem
}

// inboxItem is one thing waiting for a human, as orch inbox lists it; a
// refusal carries its whole record, so that it can be decided from here
// (the task's page has the decision's form).
type inboxItem struct {
	workflow.InboxItem
	When    string
	Refusal *refusalView
}

// inbox is orch inbox: open escalations with their message, refusals
// awaiting orch decide, and the agents' refused attempts of the last week.
func (s *Server) inbox(r *http.Request, e *workflow.Engine, memo map[string]any, f *frame) (view, error) {
	items, err := memoized(memo, "inbox", e.Inbox)
	if err != nil {
		return view{}, err
	}
	p := &inboxPage{}
	for _, it := range items {
		v := inboxItem{InboxItem: it, When: when(it.Created)}
		if rf := it.Refusal; rf != nil {
			v.Refusal = &refusalView{By: rf.By, Time: rf.Time, Default: rf.DefaultDecision, Decide: rf.Decide}
			if rf.Record != nil {
				v.Refusal.Text = markdown(workflow.RefusalText(rf.Record))
			}
		}
		switch it.Reason {
		case "authority":
			p.Authority = append(p.Authority, v)
		case "refused":
			p.Refused = append(p.Refused, v)
		default:
			p.Escalated = append(p.Escalated, v)
		}
	}
	// The newest refused attempts first: what an agent just tried.
	sort.SliceStable(p.Authority, func(i, j int) bool { return p.Authority[i].Created.After(p.Authority[j].Created) })
	f.Title, f.Nav = "Inbox", "inbox"
	return view{name: "inbox", data: p}, nil
}

type statsPage struct {
	S         *workflow.Stats
	C         *charts
	Decisions []workflow.Count
	Verdicts  []workflow.Count
}

// stats is orch stats with pictures: tasks per queue over time, rejections
// per task and rounds to approval, refusals by reason, time from claim to
// approval.
func (s *Server) stats(r *http.Request, e *workflow.Engine, memo map[string]any, f *frame) (view, error) {
	st, err := memoized(memo, "stats", func() (*workflow.Stats, error) { return e.Stats(time.Time{}, 10) })
	if err != nil {
		return view{}, err
	}
	// The timeline ends now: computed per tip, it ends at the tip's
	// newest change, which is the board as it stands.
	c, err := memoized(memo, "charts", func() (*charts, error) { return buildCharts(e, st, s.opts.Now()) })
	if err != nil {
		return view{}, err
	}
	p := &statsPage{S: st, C: c, Decisions: sortedCounts(st.Decisions), Verdicts: sortedCounts(st.Reviews.ByVerdict)}
	f.Title, f.Nav = "Stats", "stats"
	return view{name: "stats", data: p}, nil
}

func sortedCounts(m map[string]int) []workflow.Count {
	out := make([]workflow.Count, 0, len(m))
	for k, v := range m {
		out = append(out, workflow.Count{Key: k, Count: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
