package workflow

import (
	"slices"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/statecache"
	"github.com/orch-tool/orch/taskfile"
)

// Claim order: queue (claim rank), priority, creation (none last), then
// id and path for ties; the board's queue order first when asked. The
// sort of summaries, the sort of headers and the claim queue agree.
func TestClaimOrderKeys(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(path, id string, q taskfile.Queue, prio string, created time.Time) *gitstore.Summary {
		return &gitstore.Summary{Path: path, Task: taskfile.Task{ID: id, Queue: q, Priority: prio, Created: created}}
	}
	tasks := []*gitstore.Summary{
		mk("tasks/f.md", "T-f", taskfile.Incoming, "P2", time.Time{}),
		mk("tasks/e.md", "T-b", taskfile.Incoming, "P2", t0), // same id as d: the path decides
		mk("tasks/d.md", "T-b", taskfile.Incoming, "P2", t0),
		mk("tasks/c.md", "T-a", taskfile.Incoming, "P2", t0),
		mk("tasks/b.md", "T-z", taskfile.Incoming, "P2", t0.Add(-time.Hour)),
		mk("tasks/a.md", "T-y", taskfile.Incoming, "P0", t0.Add(time.Hour)),
		mk("tasks/g.md", "T-g", taskfile.Done, "P0", t0.Add(-2*time.Hour)),
		mk("tasks/h.md", "T-h", taskfile.Rejected, "P3", t0), // claimed before incoming; on the board after
	}
	paths := func(l []*gitstore.Summary) []string {
		var out []string
		for _, s := range l {
			out = append(out, s.Path)
		}
		return out
	}
	incoming := []string{"tasks/a.md", "tasks/b.md", "tasks/c.md", "tasks/d.md", "tasks/e.md", "tasks/f.md"}
	want := append(append([]string{"tasks/h.md"}, incoming...), "tasks/g.md")
	board := append(append(slices.Clone(incoming), "tasks/h.md"), "tasks/g.md")
	for _, byQueue := range []bool{false, true} {
		want := want
		if byQueue {
			want = board
		}
		l := slices.Clone(tasks)
		sortClaimOrder(l, byQueue)
		if got := paths(l); !slices.Equal(got, want) {
			t.Errorf("byQueue %v: %v, want %v", byQueue, got, want)
		}
		var hs []*gitstore.SummaryHeader
		for _, s := range tasks {
			hs = append(hs, statecache.HeaderOf(s))
		}
		sortHeadersClaimOrder(hs, byQueue)
		var got []string
		for _, h := range hs {
			got = append(got, h.Path)
		}
		if !slices.Equal(got, want) {
			t.Errorf("headers, byQueue %v: %v, want %v", byQueue, got, want)
		}
	}
	var hs []*gitstore.SummaryHeader
	for _, s := range tasks {
		hs = append(hs, statecache.HeaderOf(s))
	}
	q := newClaimQueue(hs)
	var got []string
	for h := q.next(); h != nil; h = q.next() {
		got = append(got, h.Path)
	}
	if !slices.Equal(got, want) {
		t.Errorf("claim queue: %v, want %v", got, want)
	}
}
