package workflow

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

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
	Escalations         Breakdown      `json:"escalations"`
}

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
	st := &Stats{Decisions: map[string]int{}}
	if !since.IsZero() {
		st.Since = taskfile.FormatTime(since)
	}
	rejAgent, rejTask := counter{}, counter{}
	refReason, refAgent, refTask := counter{}, counter{}, counter{}
	escReason, escAgent, escTask := counter{}, counter{}, counter{}
	blockers := counter{}
	blockerText := map[string]string{}
	rounds, approvals := 0, 0
	err := e.scanEvents(func(ev *rawEvent) {
		if !since.IsZero() {
			t, err := taskfile.ParseTime(ev.Time)
			if err != nil || t.Before(since) {
				return
			}
		}
		st.Events++
		var d struct {
			Author    string `json:"author"`
			Reason    string `json:"reason"`
			Blocking  string `json:"blocking_factor"`
			Decision  string `json:"decision"`
			Verdict   string `json:"verdict"`
			Rounds    int    `json:"rounds"`
			Escalated string `json:"escalated"`
		}
		if len(ev.Data) > 0 {
			_ = json.Unmarshal(ev.Data, &d)
		}
		rejected := ev.Action == "reject" || (ev.Action == "review" && d.Verdict == VerdictChangesRequested)
		if rejected {
			st.Rejections.Total++
			if d.Author != "" {
				rejAgent[d.Author]++
			}
			rejTask[ev.Task]++
		}
		switch ev.Action {
		case "refuse":
			st.Refusals.Total++
			refReason[d.Reason]++
			refAgent[ev.Actor]++
			refTask[ev.Task]++
			if b := strings.TrimSpace(d.Blocking); b != "" {
				k := strings.ToLower(strings.Join(strings.Fields(b), " "))
				blockers[k]++
				if _, ok := blockerText[k]; !ok { // shown as first written, spacing folded
					blockerText[k] = strings.Join(strings.Fields(b), " ")
				}
			}
		case "refuse.invalid":
			st.InvalidRefusals++
		case "decide":
			st.Decisions[d.Decision]++
		}
		if ev.To == string(taskfile.Done) && (ev.Action == "approve" || ev.Action == "review") {
			approvals++
			rounds += d.Rounds + 1
		}
		if ev.To == string(taskfile.Escalated) {
			reason := d.Escalated
			if reason == "" {
				reason = d.Reason
			}
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
	return st, nil
}
