package answer

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// benchSummaries are n tasks as bench/gen makes them: every queue, a few
// labels and dependencies, times set.
func benchSummaries(n int) []*gitstore.Summary {
	at := time.Date(2026, 2, 6, 10, 0, 0, 0, time.UTC)
	out := make([]*gitstore.Summary, n)
	for i := range out {
		q := taskfile.Queues[i%len(taskfile.Queues)]
		t := taskfile.Task{ID: fmt.Sprintf("T-%06x", i*7919), Title: fmt.Sprintf("Make the retry of request %d idempotent & logged", i),
			Queue: q, Priority: fmt.Sprintf("P%d", i%4), Role: "implementer", RejectionCount: i % 3, Attempts: i % 5,
			Labels: []string{"bench", "area-" + fmt.Sprint(i%7)}, Created: at.Add(time.Duration(i) * time.Minute)}
		if q != taskfile.Incoming {
			t.Branch, t.BaseBranch, t.ClaimedBy, t.ClaimedAt = "task/"+t.ID, "main", "agent-a", at.Add(time.Hour)
			t.WorkedBy = []string{"agent-a"}
		}
		if i%5 == 0 {
			t.DependsOn = []string{fmt.Sprintf("T-%06x", (i+1)*7919)}
		}
		out[i] = &gitstore.Summary{Path: "tasks/" + t.ID + "-make-the-retry.md", Task: t}
	}
	return out
}

// The task objects of orch list --json at 10,000 tasks.
func BenchmarkTaskList10k(b *testing.B) {
	sums := benchSummaries(10000)
	fields := json.RawMessage(`{}`)
	buf := make([]byte, 0, 8<<20)
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for _, s := range sums {
			t := NewTask(s, true, fields, 0)
			buf = t.AppendJSON(buf)
			buf = append(buf, ',')
		}
	}
	b.SetBytes(int64(len(buf)))
}
