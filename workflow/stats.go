package workflow

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
)

// Count is one entry of a ranking.
type Count struct {
	Key   string `json:"key"`
	Count int    `json:"count"`
}

// Breakdown counts events by reason, agent and task.
type Breakdown struct {
	Total    int     `json:"total"`
	ByReason []Count `json:"by_reason,omitempty"`
	ByAgent  []Count `json:"by_agent"`
	ByTask   []Count `json:"by_task"`
}

// Stats is what `orch stats` reports, computed from the event log.
type Stats struct {
	Since               string         `json:"since,omitempty"`
	Events              int            `json:"events"`
	Rejections          Breakdown      `json:"rejections"`
	Refusals            Breakdown      `json:"refusals"`
	InvalidRefusals     int            `json:"invalid_refusals"`
	CommonBlockers      []Count        `json:"common_blockers"`
	Decisions           map[string]int `json:"decisions"`
	OverrideRate        float64        `json:"override_rate"`
	Approvals           int            `json:"approvals"`
	AvgRoundsToApproval float64        `json:"avg_review_rounds_to_approval"`
	Reviews             ReviewStats    `json:"reviews"`
	Responses           ResponseStats  `json:"responses"`
	Warnings            []Warning      `json:"warnings"`
	Escalations         Breakdown      `json:"escalations"`
	// Spend is what orch run's runs spent, as their CLIs counted.
	Spend Spend `json:"spend"`
}

// Spend is tokens and cost of orch run's runs: in all, and by task, agent
// and day (UTC), each list largest cost first (then most tokens).
type Spend struct {
	SpendTotal
	ByTask  []SpendBy `json:"by_task"`
	ByAgent []SpendBy `json:"by_agent"`
	ByDay   []SpendBy `json:"by_day"`
}

// SpendTotal is what some runs spent together.
type SpendTotal struct {
	Runs         int     `json:"runs"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

func (t *SpendTotal) add(d *RunRecordData) {
	t.Runs++
	t.InputTokens += d.Input
	t.OutputTokens += d.Output
	t.CostUSD += d.CostUSD
}

// SpendBy is what the runs of one task, agent or day spent.
type SpendBy struct {
	Key string `json:"key"`
	SpendTotal
}

// spendTally sums runs by key.
type spendTally map[string]*SpendTotal

func (t spendTally) add(key string, d *RunRecordData) {
	if t[key] == nil {
		t[key] = &SpendTotal{}
	}
	t[key].add(d)
}

// top is the tally, largest cost first, then most tokens, then key (n > 0:
// at most n).
func (t spendTally) top(n int) []SpendBy {
	out := []SpendBy{}
	for k, v := range t {
		out = append(out, SpendBy{k, *v})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.CostUSD != b.CostUSD {
			return a.CostUSD > b.CostUSD
		}
		if x, y := a.InputTokens+a.OutputTokens, b.InputTokens+b.OutputTokens; x != y {
			return x > y
		}
		return a.Key < b.Key
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// ReviewStats are the review loop's metrics (review-feedback-loop.md,
// "Metrics to track"): issues per structured review, suggestions adopted or
// skipped, and each reviewer's rate of requested changes. Its parts are
// types of their own so that orch stats --json prints them as they are,
// beside its own form of Recent (each review with its task).
type ReviewStats struct {
	ReviewTotals
	// Recent is the issue count of each review, newest first (--top of
	// them).
	Recent []ReviewCount `json:"recent"`
	SuggestionUptake
	// ByReviewer counts every review decision (orch review, reject,
	// approve, and GitHub reviews that requested changes) by reviewer.
	ByReviewer []ReviewerStats `json:"by_reviewer"`
}

// ReviewTotals count the structured reviews (orch review) and the issues
// they raised.
type ReviewTotals struct {
	// Total counts structured reviews, by verdict.
	Total     int            `json:"total"`
	ByVerdict map[string]int `json:"by_verdict"`
	// Issues counts the new issues they raised, by severity.
	Issues             int            `json:"issues"`
	BySeverity         map[string]int `json:"by_severity"`
	Blocking           int            `json:"blocking"`
	Suggestions        int            `json:"suggestions"`
	AvgIssuesPerReview float64        `json:"avg_issues_per_review"`
}

// SuggestionUptake is, on re-reviews, the open suggestions the developer
// fixed (adopted) or not (skipped: deferred, rejected, unanswered), and
// the re-reviews that noted "All suggestions skipped".
type SuggestionUptake struct {
	SuggestionsAdopted     int     `json:"suggestions_adopted"`
	SuggestionsSkipped     int     `json:"suggestions_skipped"`
	SuggestionAdoptionRate float64 `json:"suggestion_adoption_rate"`
	AllSuggestionsSkipped  int     `json:"all_suggestions_skipped"`
}

// ReviewCount is one structured review's issues.
type ReviewCount struct {
	Task        string `json:"task"`
	Round       int    `json:"round"`
	Reviewer    string `json:"reviewer"`
	Time        string `json:"time"`
	Verdict     string `json:"verdict"`
	Issues      int    `json:"issues"`
	Blocking    int    `json:"blocking"`
	Suggestions int    `json:"suggestions"`
	Reopened    int    `json:"reopened"`
	Resolved    int    `json:"resolved"`
}

// ReviewerStats is one reviewer's decisions.
type ReviewerStats struct {
	Reviewer         string  `json:"reviewer"`
	Reviews          int     `json:"reviews"`
	ChangesRequested int     `json:"changes_requested"`
	RejectionRate    float64 `json:"rejection_rate"`
	// Flagged: the rate is unusually high (see ReviewerFlagRate).
	Flagged bool `json:"flagged"`
}

// ResponseStats count the developers' answers to review issues (orch
// respond), each answer to an issue in a round once (the newest).
type ResponseStats struct {
	Total    int `json:"total"`
	Fixed    int `json:"fixed"`
	Deferred int `json:"deferred"`
	Rejected int `json:"rejected"`
	// Blocking issues answered, and the share of them rejected.
	BlockingAnswered      int                `json:"blocking_answered"`
	BlockingRejected      int                `json:"blocking_rejected"`
	BlockingRejectedShare float64            `json:"blocking_rejected_share"`
	ByDeveloper           []DeveloperAnswers `json:"by_developer"`
}

// DeveloperAnswers is one developer's answers.
type DeveloperAnswers struct {
	Developer             string  `json:"developer"`
	Fixed                 int     `json:"fixed"`
	Deferred              int     `json:"deferred"`
	Rejected              int     `json:"rejected"`
	BlockingAnswered      int     `json:"blocking_answered"`
	BlockingRejected      int     `json:"blocking_rejected"`
	BlockingRejectedShare float64 `json:"blocking_rejected_share"`
	// Flagged: rejects most blocking issues (see DeveloperFlagShare).
	Flagged bool `json:"flagged"`
	// Tasks where it rejected a blocking issue, for the lead to read the
	// justifications (flagged developers only).
	Tasks []string `json:"blocking_rejected_in"`
}

// Warning is a pattern a lead should look at.
type Warning struct {
	Kind    string `json:"kind"` // developer_rejects_blocking | reviewer_rejection_rate
	Who     string `json:"who"`
	Message string `json:"message"`
}

// The thresholds of the warnings.
//
// A developer is flagged when it rejects most (more than half) of the
// blocking issues it answered, over at least DeveloperFlagMin of them. The
// review protocol's risk table answers "Developer rejects everything" with
// a rejection-rate trigger for a PM review; its number is garbled,
// and a blocking issue may be rejected only with strong justification, so
// orch flags a developer for whom rejecting is the rule rather than the
// exception.
//
// A reviewer is flagged when it requested changes in more than
// ReviewerFlagRate (three quarters) of its review decisions, over at least
// ReviewerFlagMin of them. The loop expects a first review to send work back
// often (one or two rounds to approval), so half is ordinary; a reviewer who
// almost never approves is nitpicking (the loop the protocol sets out to
// stop) or is sent work that needs another fix than review.
const (
	DeveloperFlagShare = 0.5
	DeveloperFlagMin   = 2
	ReviewerFlagRate   = 0.75
	ReviewerFlagMin    = 4
)

type counter map[string]int

func (c counter) top(n int) []Count {
	out := make([]Count, 0, len(c))
	for k, v := range c {
		out = append(out, Count{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Key < out[j].Key
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// Stats reads every event since the given time (zero: all).
func (e *Engine) Stats(since time.Time, top int) (*Stats, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	st := &Stats{Decisions: map[string]int{}, Reviews: ReviewStats{ReviewTotals: ReviewTotals{ByVerdict: map[string]int{}, BySeverity: map[string]int{}}}}
	rv := &reviewerTally{by: map[string]*ReviewerStats{}}
	answers := map[answerKey]answer{}
	if !since.IsZero() {
		st.Since = taskfile.FormatTime(since)
	}
	rejAgent, rejTask := counter{}, counter{}
	refReason, refAgent, refTask := counter{}, counter{}, counter{}
	escReason, escAgent, escTask := counter{}, counter{}, counter{}
	blockers := counter{}
	blockerText := map[string]string{}
	byTask, byAgent, byDay := spendTally{}, spendTally{}, spendTally{}
	rounds, approvals := 0, 0
	rejected := func(task, author string) {
		st.Rejections.Total++
		if author != "" {
			rejAgent[author]++
		}
		rejTask[task]++
	}
	err := e.scanEvents(func(ev *Event) {
		if !since.IsZero() {
			t, err := taskfile.ParseTime(ev.Time)
			if err != nil || t.Before(since) {
				return
			}
		}
		st.Events++
		// The data of the actions counted here is decoded (a field of the
		// wrong type, in a line written by hand, is skipped and the rest
		// counted); the others' (claims, submissions, new tasks: most of a
		// log) is not read.
		var data EventData
		switch ev.Action {
		case ActionReview, ActionReject, ActionApprove, ActionRespond, ActionRefuse, ActionDecide, ActionEscalate:
			data, _ = ev.Payload()
		case ActionRefuseInvalid:
			st.InvalidRefusals++
		case ActionRun:
			data, _ = ev.Payload()
		}
		rv.add(ev, data)
		switch d := data.(type) {
		case *ReviewData:
			rc := ReviewCount{Task: ev.Task, Reviewer: ev.Actor, Time: ev.Time, Verdict: d.Verdict, Round: d.Round, Issues: len(d.Issues), Reopened: len(d.Reopen), Resolved: len(d.Resolved)}
			for _, is := range d.Issues {
				if is.Blocking {
					rc.Blocking++
				} else {
					rc.Suggestions++
				}
				st.Reviews.BySeverity[strings.ToUpper(is.Severity)]++
			}
			rv.reviews = append(rv.reviews, rc)
			if sg := d.Suggestions; sg != nil {
				st.Reviews.SuggestionsAdopted += len(sg.Adopted)
				st.Reviews.SuggestionsSkipped += len(sg.Skipped)
				if sg.AllSkipped {
					st.Reviews.AllSuggestionsSkipped++
				}
			}
			if d.Rejection != nil {
				rejected(ev.Task, d.Rejection.Author)
			}
		case *RejectData:
			rejected(ev.Task, d.Author)
		case *RespondData:
			round := -1 // events before rounds were recorded: one answer per issue
			if d.Round != nil {
				round = *d.Round
			}
			k := answerKey{ev.Actor, ev.Task, d.Issue, round}
			if old, ok := answers[k]; !ok || !eventBefore(ev.Time, old.time) {
				answers[k] = answer{time: ev.Time, status: strings.ToUpper(d.Status), blocking: d.Blocking}
			}
		case *RefuseData:
			st.Refusals.Total++
			refReason[string(d.Reason)]++
			refAgent[ev.Actor]++
			refTask[ev.Task]++
			if b := strings.TrimSpace(d.BlockingFactor); b != "" {
				k := strings.ToLower(text.OneLine(b))
				blockers[k]++
				if _, ok := blockerText[k]; !ok { // shown as first written, spacing folded
					blockerText[k] = text.OneLine(b)
				}
			}
		case *DecideData:
			st.Decisions[d.Decision]++
		case *RunRecordData:
			st.Spend.add(d)
			byTask.add(ev.Task, d)
			byAgent.add(d.Agent, d)
			if len(ev.Time) >= 10 {
				byDay.add(ev.Time[:10], d)
			}
		}
		if r, ok := ApprovalRounds(ev, data); ok {
			approvals++
			rounds += r + 1
		}
		if ev.To == taskfile.Escalated {
			reason := escalationReason(data)
			if reason == "" {
				reason = "manual"
			}
			st.Escalations.Total++
			escReason[reason]++
			escAgent[ev.Actor]++
			escTask[ev.Task]++
		}
	})
	if err != nil {
		return nil, err
	}
	st.Rejections.ByAgent, st.Rejections.ByTask = rejAgent.top(top), rejTask.top(top)
	st.Refusals.ByReason, st.Refusals.ByAgent, st.Refusals.ByTask = refReason.top(0), refAgent.top(top), refTask.top(top)
	st.Escalations.ByReason, st.Escalations.ByAgent, st.Escalations.ByTask = escReason.top(0), escAgent.top(top), escTask.top(top)
	for _, c := range blockers.top(top) {
		st.CommonBlockers = append(st.CommonBlockers, Count{blockerText[c.Key], c.Count})
	}
	if st.CommonBlockers == nil {
		st.CommonBlockers = []Count{}
	}
	decided := 0
	for _, n := range st.Decisions {
		decided += n
	}
	if decided > 0 {
		st.OverrideRate = float64(st.Decisions["override"]) / float64(decided)
	}
	st.Approvals = approvals
	if approvals > 0 {
		st.AvgRoundsToApproval = float64(rounds) / float64(approvals)
	}
	st.Spend.ByTask, st.Spend.ByAgent, st.Spend.ByDay = byTask.top(top), byAgent.top(0), byDay.top(0)
	sort.Slice(st.Spend.ByDay, func(i, j int) bool { return st.Spend.ByDay[i].Key > st.Spend.ByDay[j].Key })
	st.Reviews.finish(rv, top)
	st.Responses.finish(answers, top)
	st.Warnings = warnings(rv, answers)
	return st, nil
}

// reviewerTally counts review decisions by reviewer, and keeps the
// structured reviews.
type reviewerTally struct {
	by      map[string]*ReviewerStats
	reviews []ReviewCount
}

// add counts an event that is a review decision: orch review (any
// verdict), reject (by the person who ran it, or for a GitHub review, its
// reviewer) and approve. data is the event's Payload.
func (rv *reviewerTally) add(ev *Event, data EventData) {
	who, changes := ev.Actor, false
	switch d := data.(type) {
	case *ReviewData:
		changes = d.Verdict == VerdictChangesRequested
	case *RejectData:
		changes = true
		if d.Reviewer != "" {
			who = d.Reviewer
		}
	case *ApproveData:
	default:
		return
	}
	r := rv.by[who]
	if r == nil {
		r = &ReviewerStats{Reviewer: who}
		rv.by[who] = r
	}
	r.Reviews++
	if changes {
		r.ChangesRequested++
	}
}

func (s *ReviewStats) finish(rv *reviewerTally, top int) {
	s.Total = len(rv.reviews)
	for _, r := range rv.reviews {
		s.ByVerdict[r.Verdict]++
		s.Issues += r.Issues
		s.Blocking += r.Blocking
		s.Suggestions += r.Suggestions
	}
	if s.Total > 0 {
		s.AvgIssuesPerReview = float64(s.Issues) / float64(s.Total)
	}
	if n := s.SuggestionsAdopted + s.SuggestionsSkipped; n > 0 {
		s.SuggestionAdoptionRate = float64(s.SuggestionsAdopted) / float64(n)
	}
	s.Recent = append([]ReviewCount{}, rv.reviews...)
	sort.SliceStable(s.Recent, func(i, j int) bool { return eventBefore(s.Recent[j].Time, s.Recent[i].Time) })
	if top > 0 && len(s.Recent) > top {
		s.Recent = s.Recent[:top]
	}
	s.ByReviewer = []ReviewerStats{}
	for _, r := range rv.by {
		r.RejectionRate = float64(r.ChangesRequested) / float64(r.Reviews)
		r.Flagged = r.Reviews >= ReviewerFlagMin && r.RejectionRate > ReviewerFlagRate
		s.ByReviewer = append(s.ByReviewer, *r)
	}
	sort.Slice(s.ByReviewer, func(i, j int) bool {
		a, b := s.ByReviewer[i], s.ByReviewer[j]
		if a.Reviews != b.Reviews {
			return a.Reviews > b.Reviews
		}
		return a.Reviewer < b.Reviewer
	})
	if top > 0 && len(s.ByReviewer) > top {
		s.ByReviewer = s.ByReviewer[:top]
	}
}

// answerKey is one developer's answer to one issue in one round: answering
// again (a second response to the same issue) replaces the first.
type answerKey struct {
	developer, task, issue string
	round                  int
}

type answer struct {
	time, status string
	blocking     bool
}

// developerAnswers tallies the answers by developer, with the tasks where
// each rejected a blocking issue.
func developerAnswers(answers map[answerKey]answer) map[string]*DeveloperAnswers {
	by := map[string]*DeveloperAnswers{}
	for k, a := range answers {
		d := by[k.developer]
		if d == nil {
			d = &DeveloperAnswers{Developer: k.developer}
			by[k.developer] = d
		}
		switch a.status {
		case "FIXED":
			d.Fixed++
		case "DEFERRED":
			d.Deferred++
		case "REJECTED":
			d.Rejected++
		}
		if a.blocking {
			d.BlockingAnswered++
			if a.status == "REJECTED" {
				d.BlockingRejected++
				if !slices.Contains(d.Tasks, k.task) {
					d.Tasks = append(d.Tasks, k.task)
				}
			}
		}
	}
	for _, d := range by {
		if d.BlockingAnswered > 0 {
			d.BlockingRejectedShare = float64(d.BlockingRejected) / float64(d.BlockingAnswered)
		}
		d.Flagged = d.BlockingAnswered >= DeveloperFlagMin && d.BlockingRejectedShare > DeveloperFlagShare
		sort.Strings(d.Tasks)
		if !d.Flagged {
			d.Tasks = nil
		}
	}
	return by
}

func (s *ResponseStats) finish(answers map[answerKey]answer, top int) {
	s.ByDeveloper = []DeveloperAnswers{}
	for _, d := range developerAnswers(answers) {
		s.Fixed += d.Fixed
		s.Deferred += d.Deferred
		s.Rejected += d.Rejected
		s.BlockingAnswered += d.BlockingAnswered
		s.BlockingRejected += d.BlockingRejected
		s.ByDeveloper = append(s.ByDeveloper, *d)
	}
	s.Total = len(answers)
	if s.BlockingAnswered > 0 {
		s.BlockingRejectedShare = float64(s.BlockingRejected) / float64(s.BlockingAnswered)
	}
	sort.Slice(s.ByDeveloper, func(i, j int) bool {
		a, b := s.ByDeveloper[i], s.ByDeveloper[j]
		na, nb := a.Fixed+a.Deferred+a.Rejected, b.Fixed+b.Deferred+b.Rejected
		if na != nb {
			return na > nb
		}
		return a.Developer < b.Developer
	})
	if top > 0 && len(s.ByDeveloper) > top {
		s.ByDeveloper = s.ByDeveloper[:top]
	}
}

// warnings lists every flagged developer and reviewer (not only the --top
// ones), developers first, each by name.
func warnings(rv *reviewerTally, answers map[answerKey]answer) []Warning {
	out := []Warning{}
	devs := developerAnswers(answers)
	names := make([]string, 0, len(devs))
	for n := range devs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if d := devs[n]; d.Flagged {
			out = append(out, Warning{Kind: "developer_rejects_blocking", Who: n,
				Message: fmt.Sprintf("%s rejected %d of the %d blocking issues it answered (%.0f%%): more than half; read the justifications (orch show %s)",
					n, d.BlockingRejected, d.BlockingAnswered, 100*d.BlockingRejectedShare, strings.Join(d.Tasks, ", orch show "))})
		}
	}
	names = names[:0]
	for n := range rv.by {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := rv.by[n]
		if r.Reviews >= ReviewerFlagMin && float64(r.ChangesRequested) > ReviewerFlagRate*float64(r.Reviews) {
			out = append(out, Warning{Kind: "reviewer_rejection_rate", Who: n,
				Message: fmt.Sprintf("%s requested changes in %d of %d reviews (%.0f%%): more than %.0f%% is unusually high; look for nitpicking, or for tasks that need another fix than review",
					n, r.ChangesRequested, r.Reviews, 100*float64(r.ChangesRequested)/float64(r.Reviews), 100*ReviewerFlagRate)})
		}
	}
	return out
}
