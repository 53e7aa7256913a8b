package workflow

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// syntheticSummaries are n tasks spread over the queues, priorities, roles,
// lockouts and dependencies the way a busy board is, with the claimable ones
// at the end of claim order so that the pick walks most of the list.
func syntheticSummaries(n int) []*gitstore.Summary {
	queues := []taskfile.Queue{taskfile.Incoming, taskfile.Rejected, taskfile.NeedsContinuation, taskfile.Incoming, taskfile.Incoming}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]*gitstore.Summary, n)
	for i := range out {
		id := fmt.Sprintf("T-%06d", i)
		t := taskfile.Task{ID: id, Title: "Task " + id, Queue: queues[i%len(queues)], Priority: taskfile.Priorities[i%4],
			Created: base.Add(time.Duration(n-i) * time.Minute)}
		switch i % 4 {
		case 0:
			t.Role = "reviewer"
		case 1:
			t.LockedOut = []string{"agent-a"}
		case 2:
			t.DependsOn = []string{fmt.Sprintf("T-%06d", (i+1)%n)}
		}
		if i >= n-n/100 { // the last 1%: claimable by agent-a
			t.Role, t.LockedOut, t.DependsOn, t.Priority = "", nil, nil, "P3"
		}
		out[i] = &gitstore.Summary{Path: "tasks/" + id + ".md", Task: t}
	}
	return out
}

// benchEngine is an engine on an empty repository: whyNot's lookups (broken
// files, dependencies) go to a real store, which holds none of the tasks.
func benchEngine(b *testing.B) *Engine {
	b.Helper()
	dir := b.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "--allow-empty", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	e, err := Open(Options{Dir: dir, Actor: "agent-a"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// BenchmarkClaimOrder sorts the claim queues in claim order: what claim and
// list --ready do before anything else.
func BenchmarkClaimOrder(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		all := syntheticSummaries(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			list := make([]*gitstore.Summary, n)
			b.ReportAllocs()
			for b.Loop() {
				copy(list, all)
				sortClaimOrder(list, false)
			}
		})
	}
}

// BenchmarkClaimPick is the whole selection of a claim, as claim makes it
// (pickClaimable): the claim-order heap over the open tasks' headers, then
// the first task the agent may take.
func BenchmarkClaimPick(b *testing.B) {
	e := benchEngine(b)
	roles := []string{e.Config.DefaultRole}
	for _, n := range []int{1000, 10000} {
		all := syntheticSummaries(n)
		heads := make([]*gitstore.SummaryHeader, n)
		whole := make(map[*gitstore.SummaryHeader]*gitstore.Summary, n)
		for i, s := range all {
			heads[i] = &gitstore.SummaryHeader{Path: s.Path, ID: s.Task.ID, Queue: s.Task.Queue, Priority: s.Task.Priority, Created: gitstore.CreatedKey(s.Task.Created)}
			whole[heads[i]] = s
		}
		load := func(h *gitstore.SummaryHeader) *gitstore.Summary { return whole[h] }
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			list := make([]*gitstore.SummaryHeader, n)
			b.ReportAllocs()
			for b.Loop() {
				copy(list, heads)
				if pick, _ := e.pickClaimable(list, load, roles); pick == nil {
					b.Fatal("nothing claimable")
				}
			}
		})
	}
}
