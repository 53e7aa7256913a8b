package web

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// boardLimit is how many cards a column shows unless asked for all: a
// column of thousands of cards is a scroll nobody reads, and every live
// update would fetch it again. The column's header says how many there
// are and links to all of them.
const boardLimit = 100

// HasAct reports whether the board shows a column a human must act on.
func (p *boardPage) HasAct() bool {
	for _, c := range p.Columns {
		if c.Act {
			return true
		}
	}
	return false
}

type boardPage struct {
	Running  []runningRow // what orch run runs on this clone now
	Progress progress
	Columns  []column
	All      bool
	Tasks    int // tasks shown in the columns, before the limit
	AllHref  string
	Limited  bool
}

type column struct {
	// Act: a column a human must act on (escalated, blocked), which the
	// board keeps in view however many columns the others are.
	Act      bool
	Queue    string
	Count    int
	Cards    []card
	More     int
	MoreHref string
	Href     string
}

// card is one task on the board: what orch board shows, and the role and
// age the terminal has no room for.
type card struct {
	ID         string
	Title      string
	Priority   string
	Role       string
	Who        string // @claimant, @submitter (provisional), "for" assignee
	WhoTitle   string
	Rejections int
	Age        string
	AgeTitle   string
	Escalated  bool
	Waiting    bool // depends on tasks not done
	Problem    string
	// Check is the state of the task's checks, for approved work (and a
	// submission when review.check is set): CheckClass is ok, stale,
	// fail or none. LandPos is its place in the landing queue (1: next).
	Check, CheckTitle, CheckClass string
	LandPos                       int
}

// board is the board: one column per queue, in board order, cards in claim
// order (orch list's order, as orch board shows them). ?all=1 adds done,
// failed and superseded; ?queue=Q (repeatable) picks queues; ?limit=N
// caps each column (0: no cap).
func (s *Server) board(r *http.Request, e *workflow.Engine, memo map[string]any, f *frame) (view, error) {
	q := r.URL.Query()
	p := &boardPage{All: q.Get("all") == "1"}
	want := map[taskfile.Queue]bool{}
	for _, name := range q["queue"] {
		qq := taskfile.Queue(name)
		if !qq.Valid() {
			f.Title, f.Error, f.Hint = "Bad request", "there is no queue "+strconv.Quote(name), "the queues are: "+taskfile.QueueNames()
			return view{name: "error", status: http.StatusBadRequest}, nil
		}
		want[qq] = true
	}
	limit := boardLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			f.Title, f.Error, f.Hint = "Bad request", "limit must be a number of cards (0: all)", ""
			return view{name: "error", status: http.StatusBadRequest}, nil
		}
		limit = n
	}
	var qs []taskfile.Queue
	for _, qq := range taskfile.Queues {
		if want[qq] || (len(want) == 0 && (p.All || qq.Open())) {
			qs = append(qs, qq)
		}
	}
	now := s.opts.Now()
	list, err := e.List(workflow.ListFilter{Queues: qs, Archived: workflow.ShowsFinished(qs)})
	if err != nil {
		return view{}, err
	}
	at := map[taskfile.Queue]int{}
	p.Columns = make([]column, len(qs))
	for i, qq := range qs {
		at[qq] = i
		p.Columns[i] = column{Act: qq == taskfile.Escalated || qq == taskfile.Blocked, Queue: string(qq), Href: "/?" + url.Values{"queue": {string(qq)}, "limit": {"0"}}.Encode()}
	}
	for _, sm := range list {
		i, ok := at[sm.Task.Queue]
		if !ok {
			continue
		}
		c := &p.Columns[i]
		c.Count++
		p.Tasks++
		if limit > 0 && len(c.Cards) >= limit {
			c.More++
			continue
		}
		c.Cards = append(c.Cards, newCard(e, sm, now))
	}
	if i, ok := at[taskfile.Approved]; ok {
		landingOrder(e, p.Columns[i].Cards)
	}
	for i := range p.Columns {
		if p.Columns[i].More > 0 {
			p.Limited = true
			p.Columns[i].MoreHref = p.Columns[i].Href
		}
	}
	if !p.All && len(want) == 0 {
		p.AllHref = "/?all=1"
	}
	if p.Running, err = running(e, memo, now); err != nil {
		return view{}, err
	}
	if p.Progress, err = memoized(memo, "progress", func() (progress, error) { return countProgress(e) }); err != nil {
		return view{}, err
	}
	f.Title, f.Nav = "Board", "board"
	return view{name: "board", data: p}, nil
}

// progress is the board's header: every task of the state branch, the
// archive's included, whatever the columns show.
type progress struct {
	Total, Done, Failed, Superseded int
	// What waits for a human: escalated and blocked tasks.
	Human, Escalated, Blocked int
	// The landing queue, and what waits for review.
	Approved, Provisional int
}

func countProgress(e *workflow.Engine) (progress, error) {
	var p progress
	n := map[taskfile.Queue]int{}
	// The headers hold the queue: no task is decoded to be counted.
	e.Store.EachSummaryHeaderIn(nil, func(h *statecache.SummaryHeader) {
		n[h.Queue]++
		p.Total++
	})
	snap := e.Store.Snapshot()
	for _, q := range []taskfile.Queue{taskfile.Done, taskfile.Failed, taskfile.Superseded} {
		ids, err := snap.ArchivedIDs(q)
		if err != nil {
			return p, err
		}
		n[q] += len(ids)
		p.Total += len(ids)
	}
	p.Done, p.Failed, p.Superseded = n[taskfile.Done], n[taskfile.Failed], n[taskfile.Superseded]
	p.Escalated, p.Blocked = n[taskfile.Escalated], n[taskfile.Blocked]
	p.Human = p.Escalated + p.Blocked
	p.Approved, p.Provisional = n[taskfile.Approved], n[taskfile.Provisional]
	return p, nil
}

func newCard(e *workflow.Engine, s *gitstore.Summary, now time.Time) card {
	t := &s.Task
	c := card{ID: t.ID, Title: t.Title, Priority: t.Priority, Role: t.Role, Rejections: t.RejectionCount,
		Escalated: t.Queue == taskfile.Escalated, Problem: s.Problem}
	if c.ID == "" {
		c.ID = "?"
	}
	if c.Title == "" {
		c.Title = "(untitled)"
	}
	if c.Role == "" && e.Config.DefaultRole != "" {
		c.Role = e.Config.DefaultRole
	}
	if !t.Created.IsZero() {
		c.Age, c.AgeTitle = age(now, t.Created), "created "+when(t.Created)
	}
	// Who holds it, as orch board says: the claimant, the submitter while
	// it awaits review, else whom it is kept for.
	switch {
	case t.ReviewClaimedBy != "" && t.Queue == taskfile.Provisional:
		c.Who, c.WhoTitle = "reviewing: "+t.ReviewClaimedBy, "review claimed by "+t.ReviewClaimedBy+" (orch run)"
	case t.ClaimedBy != "":
		c.Who, c.WhoTitle = "@"+t.ClaimedBy, "claimed by "+t.ClaimedBy
		if !t.ClaimedAt.IsZero() {
			c.WhoTitle += " " + age(now, t.ClaimedAt) + " ago"
		}
	case t.Queue == taskfile.Provisional && t.SubmittedBy != "":
		c.Who, c.WhoTitle = "@"+t.SubmittedBy, "submitted by "+t.SubmittedBy
	case t.AssignedTo != "":
		c.Who, c.WhoTitle = "for "+t.AssignedTo, "assigned to "+t.AssignedTo
	}
	if t.Queue == taskfile.Approved || t.Queue == taskfile.Provisional && e.Config.Review.Check != "" {
		c.Check, c.CheckTitle, c.CheckClass = checkState(e, t)
	}
	if len(t.DependsOn) > 0 && (t.Queue == taskfile.Incoming || t.Queue == taskfile.Rejected || t.Queue == taskfile.NeedsContinuation) {
		ok, _ := e.DepsDone(t)
		c.Waiting = !ok
	}
	return c
}

// checkState says where a task's checks stand (docs/design.md §8): the
// landing failures it has had, of land.max_failures; whether review.check
// passed on its branch's tip (checked_commit), on an older tip, or not
// yet; and that land.check runs when it lands.
func checkState(e *workflow.Engine, t *taskfile.Task) (text, title, class string) {
	tip := ""
	if t.Branch != "" {
		if h, err := e.Store.ReadRef("refs/heads/" + t.Branch); err == nil && !h.IsZero() {
			tip = h.String()
		}
	}
	var says []string
	if e.Config.Land.Check != "" {
		says = append(says, "land.check ("+e.Config.Land.Check+") runs on the merged result when it lands")
	}
	switch {
	case t.LandFailures > 0:
		text, class = "landing failed "+itoa(t.LandFailures)+"/"+itoa(e.Config.Land.MaxFailures), "fail"
		says = append([]string{"the landing failed " + itoa(t.LandFailures) + " time(s); at " + itoa(e.Config.Land.MaxFailures) + " it escalates (the task's Review Feedback (landing #N) says why)"}, says...)
	case t.CheckedCommit != "" && t.CheckedCommit == tip:
		text, class = "checked "+shortHash(t.CheckedCommit), "ok"
		says = append([]string{"review.check passed on the branch's tip " + t.CheckedCommit}, says...)
	case t.CheckedCommit != "":
		text, class = "checked "+shortHash(t.CheckedCommit)+", branch moved", "stale"
		says = append([]string{"review.check passed on " + t.CheckedCommit + "; the branch is now at " + shortHash(tip)}, says...)
	case e.Config.Review.Check != "":
		text, class = "check pending", "none"
		says = append([]string{"review.check has not passed on this branch yet"}, says...)
	case e.Config.Land.Check != "":
		text, class = "checked when it lands", "none"
	default:
		text, class = "no check", "none"
		says = append(says, "no review.check or land.check is configured")
	}
	return text, strings.Join(says, "; "), class
}

// landingOrder sorts the approved column's cards in the order orch land
// takes them (priority, then the oldest approval) and numbers them; a
// task orch land would not take (one that does not validate) goes last.
func landingOrder(e *workflow.Engine, cards []card) {
	pos := map[string]int{}
	for i, s := range e.LandQueue() {
		pos[s.Task.ID] = i + 1
	}
	for i := range cards {
		cards[i].LandPos = pos[cards[i].ID]
	}
	sort.SliceStable(cards, func(i, k int) bool {
		a, b := cards[i].LandPos, cards[k].LandPos
		return a != 0 && (b == 0 || a < b)
	})
}
