package web

import (
	"fmt"
	"html/template"
	"sort"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/refusal"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// charts are the pictures of the stats page, computed once per tip.
type charts struct {
	Queues         template.HTML // tasks per queue over time
	QueuesNote     string
	Rejections     template.HTML // tasks by rejection count
	Rounds         template.HTML // review rounds to approval
	Refusals       template.HTML // refusals by reason
	ClaimToApprove template.HTML // time from first claim to approval
	Median         string        // median time from claim to approval
	Approvals      int
}

// timelineSamples is how many points the queue timeline has.
const timelineSamples = 60

// transition is one event that moved a task between queues.
type transition struct {
	at       time.Time
	from, to string
}

func buildCharts(e *workflow.Engine, st *workflow.Stats, now time.Time) (*charts, error) {
	c := &charts{}
	current := map[string]int{}
	rejections := make([]int, 5) // 0, 1, 2, 3, 4+
	e.Store.EachSummaryIn(nil, func(s *gitstore.Summary) {
		if s.Problem != "" && s.Task.Queue == "" {
			return
		}
		current[string(s.Task.Queue)]++
		rejections[min(s.Task.RejectionCount, 4)]++
	})
	var moves []transition
	firstClaim := map[string]time.Time{}
	var rounds []int
	var claimToApprove []time.Duration
	type approval struct {
		task string
		at   time.Time
	}
	var approvals []approval
	err := e.EachEvent(func(ev *workflow.Event, at time.Time) {
		switch {
		case ev.Action == workflow.ActionArchive:
			// The task left the branch: before this it stood in its queue.
			moves = append(moves, transition{at: at, from: string(ev.From)})
		case ev.From != ev.To && (ev.From != "" || ev.To != ""):
			moves = append(moves, transition{at: at, from: string(ev.From), to: string(ev.To)})
		}
		if ev.Action == workflow.ActionClaim {
			if t, ok := firstClaim[ev.Task]; !ok || at.Before(t) {
				firstClaim[ev.Task] = at
			}
		}
		if ev.To != taskfile.Done {
			return // only approvals' data is read
		}
		data, _ := ev.Payload() // a field of the wrong type is skipped
		if r, ok := workflow.ApprovalRounds(ev, data); ok {
			rounds = append(rounds, r+1)
			approvals = append(approvals, approval{ev.Task, at})
		}
	})
	if err != nil {
		return nil, err
	}
	for _, a := range approvals {
		if t, ok := firstClaim[a.task]; ok && !a.at.Before(t) {
			claimToApprove = append(claimToApprove, a.at.Sub(t))
		}
	}
	c.Approvals = len(approvals)
	c.Queues, c.QueuesNote = queueTimeline(current, moves, now)

	rb := []bar{{Label: "0", Value: rejections[0]}, {Label: "1", Value: rejections[1]}, {Label: "2", Value: rejections[2]}, {Label: "3", Value: rejections[3]}, {Label: "4+", Value: rejections[4]}}
	c.Rejections = vbars("tasks by number of rejections", rb)

	rc := make([]int, 5) // 1, 2, 3, 4, 5+
	for _, r := range rounds {
		rc[min(max(r, 1), 5)-1]++
	}
	c.Rounds = vbars("approvals by review rounds", []bar{{Label: "1", Value: rc[0]}, {Label: "2", Value: rc[1]}, {Label: "3", Value: rc[2]}, {Label: "4", Value: rc[3]}, {Label: "5+", Value: rc[4]}})

	byReason := map[string]int{}
	for _, r := range st.Refusals.ByReason {
		byReason[r.Key] = r.Count
	}
	var rf []bar
	for _, r := range refusal.Reasons() {
		rf = append(rf, bar{Label: string(r), Value: byReason[string(r)]})
		delete(byReason, string(r))
	}
	var other []string
	for k := range byReason {
		other = append(other, k)
	}
	sort.Strings(other)
	for _, k := range other { // reasons written by hand or by a newer orch
		rf = append(rf, bar{Label: k, Value: byReason[k]})
	}
	c.Refusals = hbars("refusals by reason", rf)

	buckets := []struct {
		label string
		upTo  time.Duration
	}{{"<1h", time.Hour}, {"1–4h", 4 * time.Hour}, {"4–12h", 12 * time.Hour}, {"12–24h", 24 * time.Hour}, {"1–3d", 72 * time.Hour}, {"3–7d", 168 * time.Hour}, {">7d", 1<<63 - 1}}
	counts := make([]int, len(buckets))
	for _, d := range claimToApprove {
		for i, b := range buckets {
			if d < b.upTo {
				counts[i]++
				break
			}
		}
	}
	var cb []bar
	for i, b := range buckets {
		cb = append(cb, bar{Label: b.label, Value: counts[i]})
	}
	c.ClaimToApprove = vbars("time from first claim to approval", cb)
	if len(claimToApprove) > 0 {
		sort.Slice(claimToApprove, func(i, j int) bool { return claimToApprove[i] < claimToApprove[j] })
		c.Median = humanDuration(claimToApprove[len(claimToApprove)/2])
	}
	return c, nil
}

// queueTimeline draws the number of tasks in each queue over time. The
// queues of now are known exactly (the task files); the past is found by
// undoing the logged transitions from now backwards, so the chart ends at
// the board as it stands even when the log is incomplete (tasks made before
// the log, or by hand); a count that undoing would take below zero is shown
// as zero.
func queueTimeline(current map[string]int, moves []transition, now time.Time) (template.HTML, string) {
	sort.Slice(moves, func(i, j int) bool { return moves[i].at.Before(moves[j].at) })
	start := now
	if len(moves) > 0 && moves[0].at.Before(now) {
		start = moves[0].at
	}
	n := timelineSamples
	if !start.Before(now) {
		n = 1
	}
	times := make([]time.Time, n)
	for i := range times {
		if n == 1 {
			times[i] = now
			continue
		}
		times[i] = start.Add(time.Duration(float64(now.Sub(start)) * float64(i) / float64(n-1)))
	}
	counts := map[string][]int{}
	for _, q := range taskfile.Queues {
		counts[string(q)] = make([]int, n)
	}
	cur := map[string]int{}
	for k, v := range current {
		cur[k] = v
	}
	j := len(moves) - 1
	for i := n - 1; i >= 0; i-- {
		// Undo every move after times[i].
		for ; j >= 0 && moves[j].at.After(times[i]); j-- {
			m := moves[j]
			if m.to != "" {
				cur[m.to]--
			}
			if m.from != "" {
				cur[m.from]++
			}
		}
		for q, c := range counts {
			c[i] = max(cur[q], 0)
		}
	}
	var ss []series
	for _, q := range taskfile.Queues {
		ss = append(ss, series{Name: string(q), Class: "q-" + string(q), Counts: counts[string(q)]})
	}
	note := ""
	if len(moves) == 0 {
		note = "The event log holds no transitions yet: this is the board as it stands."
	}
	return stacked("tasks per queue over time", times, ss), note
}

// humanDuration is a duration as a person reads it: 40s, 12m, 3h 20m, 2d 4h.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		h := int(d.Hours())
		if m := int(d.Minutes()) % 60; m > 0 {
			return fmt.Sprintf("%dh %dm", h, m)
		}
		return fmt.Sprintf("%dh", h)
	}
	days := int(d.Hours()) / 24
	if h := int(d.Hours()) % 24; h > 0 && days < 10 {
		return fmt.Sprintf("%dd %dh", days, h)
	}
	return fmt.Sprintf("%dd", days)
}
