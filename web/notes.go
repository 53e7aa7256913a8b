package web

import (
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// note is a note a task's file holds in a section of its own: a submit
// note (orch submit -m), whose and when as its heading says.
type note struct {
	Heading string
	Text    template.HTML
	line    int
}

// submissionNotes are the body's "## Submission Note (who, when)"
// sections, oldest first, as orch submit -m writes them.
func submissionNotes(f *taskfile.File) []note {
	var out []note
	src := f.Src
	for _, sec := range f.Sections() {
		if sec.Level != 2 || !strings.HasPrefix(sec.Title, "Submission Note (") {
			continue
		}
		if sec.HeadingEnd > sec.End || sec.End > len(src) {
			continue
		}
		who := strings.TrimSuffix(strings.TrimPrefix(sec.Title, "Submission Note ("), ")")
		out = append(out, note{Heading: who, Text: markdown(string(src[sec.HeadingEnd:sec.End])), line: sec.StartLine})
	}
	return out
}

// verdict is one decision on a task's work, from the event log: an
// approval with its notes, a rejection or a review (their text is in the
// file's rounds), a landing or a check and what became of it.
type verdict struct {
	Time    time.Time
	Actor   string
	Action  string
	Verdict string
	Round   int
	Note    string
}

// runSpent is one run of orch run on a task, from the event log.
type runSpent struct {
	Time     time.Time
	Agent    string
	Role     string
	Attempt  int
	Duration time.Duration
	End      string // the run's cause in words, or its exit status
	Tokens   int64
	Cost     float64
}

// taskEvents is what the event log says of one task, for its pages.
type taskEvents struct {
	Verdicts []verdict
	Runs     []runSpent
	Tokens   int64
	Cost     float64
}

// eventsByTask reads the event log once per tip (it is the page's one
// scan of it), and keeps per task what its pages show.
func eventsByTask(e *workflow.Engine, memo map[string]any) (map[string]*taskEvents, error) {
	return memoized(memo, "events-by-task", func() (map[string]*taskEvents, error) {
		out := map[string]*taskEvents{}
		err := e.EachEvent(func(ev *workflow.Event, at time.Time) {
			switch ev.Action {
			case workflow.ActionApprove, workflow.ActionReject, workflow.ActionReview, workflow.ActionLand, workflow.ActionCheck, workflow.ActionRun:
			default:
				return
			}
			if ev.Task == "" {
				return
			}
			data, _ := ev.Payload() // a field hand-written wrong: the rest is shown
			te := out[ev.Task]
			if te == nil {
				te = &taskEvents{}
				out[ev.Task] = te
			}
			v := verdict{Time: at, Actor: ev.Actor, Action: string(ev.Action)}
			switch d := data.(type) {
			case *workflow.ApproveData:
				v.Verdict, v.Note = d.Verdict, d.Notes
			case *workflow.RejectData:
				v.Verdict, v.Round = "CHANGES_REQUESTED", d.Round
			case *workflow.ReviewData:
				v.Verdict, v.Round = d.Verdict, d.Round
			case *workflow.LandData:
				v.Verdict, v.Note = landVerdict(d)
			case *workflow.CheckData:
				v.Verdict, v.Note = landVerdict(&d.LandData)
			case *workflow.RunRecordData:
				r := runSpent{Time: at, Agent: d.Agent, Role: d.Role, Attempt: d.Attempt, Duration: time.Duration(d.DurationMS) * time.Millisecond,
					End: d.Words, Tokens: d.Input + d.Output + d.CacheRead + d.CacheWrite, Cost: d.CostUSD}
				if r.End == "" {
					r.End = d.Cause
				}
				te.Runs = append(te.Runs, r)
				te.Tokens += r.Tokens
				te.Cost += r.Cost
				return
			default:
				return
			}
			te.Verdicts = append(te.Verdicts, v)
		})
		for _, te := range out {
			// Event files are read clone by clone: time order is the page's.
			sort.SliceStable(te.Verdicts, func(i, k int) bool { return te.Verdicts[i].Time.Before(te.Verdicts[k].Time) })
			sort.SliceStable(te.Runs, func(i, k int) bool { return te.Runs[i].Time.Before(te.Runs[k].Time) })
		}
		return out, err
	})
}

// landVerdict says what a landing or a check did.
func landVerdict(d *workflow.LandData) (string, string) {
	what := "landing"
	if d.Kind == "check" {
		what = "check"
	}
	switch {
	case d.Failure != "":
		return what + " failed (" + d.Failure + ")", d.Why
	case d.Commit != "":
		return "landed", "as " + shortHash(d.Commit) + " on " + d.Base
	case what == "check":
		return "check passed", "on " + shortHash(d.Tip)
	}
	return what, d.Why
}
