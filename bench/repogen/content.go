package repogen

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// render writes the task file: its first version (incoming) or its final
// version.
func (t *genTask) render(rng *rand.Rand, final bool, now time.Time) []byte {
	q := taskfile.Incoming
	if final {
		q = t.Queue
	}
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%s: %s\n", k, v) }
	b.WriteString("---\n")
	kv("id", t.ID)
	kv("title", yamlString(t.title))
	kv("queue", string(q))
	kv("priority", t.prio)
	kv("role", t.role)
	branch := "task/" + t.ID + "-" + t.slug
	claimer := agents[t.n%len(agents)]
	other := agents[(t.n+1)%len(agents)]
	at := now
	if q == taskfile.Done && !t.finished.IsZero() {
		at = t.finished
	}
	claimedAt := taskfile.FormatTime(at.Add(-90 * time.Minute))
	submittedAt := taskfile.FormatTime(at.Add(-30 * time.Minute))
	pr := 100 + t.n
	switch q {
	case taskfile.Claimed:
		kv("branch", branch)
		kv("claimed_by", claimer)
		kv("claimed_at", claimedAt)
	case taskfile.Provisional, taskfile.Done:
		kv("branch", branch)
		kv("pr_number", fmt.Sprint(pr))
		kv("rejection_count", "0")
		kv("claimed_by", claimer)
		kv("claimed_at", claimedAt)
		kv("submitted_by", claimer)
		kv("submitted_at", submittedAt)
	case taskfile.Rejected, taskfile.Escalated:
		kv("branch", branch)
		kv("pr_number", fmt.Sprint(pr))
		kv("rejection_count", fmt.Sprint(t.rejCount))
		kv("claimed_by", other)
		if q == taskfile.Escalated {
			kv("locked_out", "["+strings.Join(agents, ", ")+"]")
		} else {
			kv("locked_out", "["+claimer+"]")
		}
	case taskfile.NeedsContinuation, taskfile.Blocked:
		kv("branch", branch)
		kv("claimed_by", claimer)
		kv("claimed_at", claimedAt)
	case taskfile.Failed, taskfile.Superseded:
		if t.n%2 == 0 {
			kv("branch", branch)
		}
	}
	if len(t.deps) > 0 {
		kv("depends_on", "["+strings.Join(t.deps, ", ")+"]")
	}
	if len(t.labels) > 0 {
		kv("labels", "["+strings.Join(t.labels, ", ")+"]")
	}
	kv("created", taskfile.FormatTime(t.created))
	if q == taskfile.Done && !t.finished.IsZero() {
		kv("finished_at", taskfile.FormatTime(t.finished))
	}
	if q == taskfile.Rejected || q == taskfile.Escalated {
		kv("rejected_at_commit", fmt.Sprintf("%040x", uint64(t.n)*2654435761))
	}
	if t.n%7 == 0 {
		b.WriteString("estimate: 3h   # rough guess, kept by orch\n")
	}
	b.WriteString("---\n")
	b.WriteString("# " + t.title + "\n\n")
	ts := taskfile.FormatTime(now.Add(-20 * time.Minute))
	if final {
		switch q {
		case taskfile.Rejected, taskfile.Escalated:
			for r := t.rejCount; r >= 1; r-- {
				fmt.Fprintf(&b, "## Review Feedback (rejection #%d)\n\n", r)
				fmt.Fprintf(&b, "### From GitHub PR review by alice (%s)\n\n", ts)
				fmt.Fprintf(&b, "- [ ] **R%d.1** BLOCKING `%s:%d`\n  %s.\n", r, files[t.n%len(files)], 100+t.n%900, sentence(rng, 14))
				fmt.Fprintf(&b, "- [ ] **R%d.2** suggestion `%s:%d`\n  %s.\n\n", r, files[(t.n+3)%len(files)], 200+t.n%700, sentence(rng, 10))
				fmt.Fprintf(&b, "### From lead via orch reject (%s)\n\n%s. Do NOT create a new PR — push to existing branch.\n\n", ts, sentence(rng, 12))
			}
		case taskfile.NeedsContinuation:
			fmt.Fprintf(&b, "## Pause note (%s, %s)\n\n%s.\n\n", claimer, ts, sentence(rng, 16))
		case taskfile.Blocked:
			fmt.Fprintf(&b, "## Refusal (%s)\n\n**MISSING_DEPENDENCY**: %s.\n\n", ts, sentence(rng, 12))
		case taskfile.Failed:
			fmt.Fprintf(&b, "## Failed (%s)\n\n%s.\n\n", ts, sentence(rng, 10))
		}
	}
	b.WriteString("## Context\n\n")
	for k, n := 0, 1+rng.Intn(3); k < n; k++ {
		b.WriteString(sentence(rng, 12+rng.Intn(20)) + ". ")
	}
	fmt.Fprintf(&b, "See `%s`.\n\n## Acceptance Criteria\n\n", files[(t.n+1)%len(files)])
	for k, n := 0, 2+rng.Intn(3); k < n; k++ {
		mark := " "
		if q == taskfile.Done {
			mark = "x"
		}
		fmt.Fprintf(&b, "- [%s] %s\n", mark, sentence(rng, 6+rng.Intn(6)))
	}
	return []byte(b.String())
}

type eventLog struct {
	clone string
	day   string
	n     int
	data  []byte
}

// add appends lines to this day's events file, starting a new file at 128
// KiB as orch does, and returns the file's path and content.
func (e *eventLog) add(when time.Time, lines []string) (string, []byte) {
	day := when.UTC().Format("2006-01-02")
	if day != e.day {
		e.day, e.n, e.data = day, 1, nil
	}
	if len(e.data) >= 128<<10 {
		e.n++
		e.data = nil
	}
	for _, l := range lines {
		e.data = append(e.data, l...)
		e.data = append(e.data, '\n')
	}
	name := fmt.Sprintf("events/%s-%s.jsonl", day, e.clone)
	if e.n > 1 {
		name = fmt.Sprintf("events/%s-%s-%d.jsonl", day, e.clone, e.n)
	}
	return name, e.data
}

// importAction is the action of the generated history's commits and
// events: a task put in its queue by the generator, not by a verb.
const importAction workflow.Action = "import"

func eventLine(when time.Time, id string, action workflow.Action, from, to taskfile.Queue, actor string) string {
	b, _ := json.Marshal(workflow.Event{Time: taskfile.FormatTime(when), Task: id, Action: action, From: from, To: to, Actor: actor})
	return string(b)
}

func yamlString(s string) string {
	if strings.ContainsAny(s, ":#'\"[]{},&*!|>%@`") || strings.HasPrefix(s, "-") {
		b, _ := json.Marshal(s)
		return string(b)
	}
	return s
}

func sentence(rng *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[rng.Intn(len(words))]
	}
	s := strings.Join(ws, " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

func pick(rng *rand.Rand, l []string) string { return l[rng.Intn(len(l))] }

// share is one value of a mix and its weight.
type share[T any] struct {
	v T
	w int
}

// weighted draws a value of mix, each as likely as its weight.
func weighted[T any](rng *rand.Rand, mix []share[T]) T {
	total := 0
	for _, m := range mix {
		total += m.w
	}
	n := rng.Intn(total)
	for _, m := range mix {
		if n < m.w {
			return m.v
		}
		n -= m.w
	}
	return mix[0].v
}
