package web

import (
	"fmt"
	"testing"

	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// TestBoardProgress: the board's header counts every task (the finished
// and the archived ones too, which the open columns do not show): done of
// all, what waits for a human, the landing queue.
func TestBoardProgress(t *testing.T) {
	dir := exampleRepo(t)
	// An approval: done, or approved when landing is on.
	as(t, dir, "lead", func(e *workflow.Engine) error {
		_, err := e.Approve("T-5ncg1r", "")
		return err
	})
	n := map[taskfile.Queue]int{}
	total := 0
	as(t, dir, "lead", func(e *workflow.Engine) error {
		all, err := e.List(workflow.ListFilter{Queues: taskfile.Queues, Archived: true})
		for _, s := range all {
			n[s.Task.Queue]++
			total++
		}
		return err
	})
	if n[taskfile.Done] == 0 || n[taskfile.Escalated] == 0 || n[taskfile.Blocked] == 0 {
		t.Fatalf("the example has no done, escalated or blocked task: %v", n)
	}
	ts := startServer(t, dir, testOptions(dir, "lead"))
	_, body := ts.get(t, nil, "/")
	human := n[taskfile.Escalated] + n[taskfile.Blocked]
	mustContain(t, "board", body,
		fmt.Sprintf("<b>%d/%d</b> done", n[taskfile.Done], total),
		fmt.Sprintf("<b>%d</b> wait", human),
		fmt.Sprintf(">%d escalated</a>", n[taskfile.Escalated]),
		fmt.Sprintf(">%d blocked</a>", n[taskfile.Blocked]),
		fmt.Sprintf(">%d approved</a> to land · %d to review", n[taskfile.Approved], n[taskfile.Provisional]))
	open := 0
	for q, c := range n {
		if q.Open() {
			open += c
		}
	}
	mustContain(t, "board", body, fmt.Sprintf("%d on the board", open))
	if open == total {
		t.Errorf("the example has no finished task: the header's count is not tested")
	}
}
