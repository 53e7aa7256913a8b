package workflow

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// TestClaimQueueMatchesSort: the heap a claim walks must give exactly the
// order SortClaimOrder gives, ties (same priority and time) included.
func TestClaimQueueMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	queues := []taskfile.Queue{taskfile.Incoming, taskfile.Rejected, taskfile.NeedsContinuation}
	prios := []string{"P0", "P1", "P2", "P3"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := 0; round < 50; round++ {
		n := rng.Intn(300)
		var sums []*gitstore.Summary
		var heads []*gitstore.SummaryHeader
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("T-%06d", rng.Intn(50))
			created := time.Time{}
			if rng.Intn(4) > 0 {
				created = base.Add(time.Duration(rng.Intn(5)) * time.Hour)
			}
			q, p := queues[rng.Intn(len(queues))], prios[rng.Intn(len(prios))]
			path := fmt.Sprintf("tasks/%s-%d.md", id, i)
			sums = append(sums, &gitstore.Summary{Path: path, Task: taskfile.Task{ID: id, Queue: q, Priority: p, Created: created}})
			heads = append(heads, &gitstore.SummaryHeader{Path: path, ID: id, Queue: q, Priority: p, Created: created})
		}
		SortClaimOrder(sums, false)
		order := newClaimQueue(heads)
		for i, s := range sums {
			h := order.next()
			if h == nil || h.Path != s.Path {
				t.Fatalf("round %d, place %d: heap gives %+v, sort gives %s", round, i, h, s.Path)
			}
		}
		if h := order.next(); h != nil {
			t.Fatalf("round %d: heap gives an extra %s", round, h.Path)
		}
	}
}
