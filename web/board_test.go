package web

import (
	"fmt"
	"strings"
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

// TestBoardApproved: the approved column is the landing queue, in the
// order orch land takes it, each card with where its checks stand.
func TestBoardApproved(t *testing.T) {
	dir := exampleRepo(t)
	branch := provisionalWithWork(t, dir)
	as(t, dir, "lead", func(e *workflow.Engine) error {
		if _, err := e.Approve("T-3vfp8e", ""); err != nil {
			return err
		}
		_, err := e.Approve("T-5ncg1r", "")
		return err
	})
	var order []string
	as(t, dir, "lead", func(e *workflow.Engine) error {
		for _, s := range e.LandQueue() {
			order = append(order, s.Task.ID)
		}
		return nil
	})
	if len(order) != 2 {
		t.Fatalf("the landing queue is %q, want both approvals (land.mode local)", order)
	}
	ts := startServer(t, dir, testOptions(dir, "lead"))
	_, body := ts.get(t, nil, "/?queue=approved")
	first, second := strings.Index(body, `data-id="`+order[0]+`"`), strings.Index(body, `data-id="`+order[1]+`"`)
	if first < 0 || second < first {
		t.Errorf("the approved column is not in landing order %q:\n%s", order, clipBody(body))
	}
	mustContain(t, "approved column", body, "#1 to land</span> no check", "#2 to land</span> no check")
	_, page := ts.get(t, nil, "/task/"+order[0])
	mustContain(t, "approved task", page, `<p class="check c-none">no check</p>`, "no review.check or land.check is configured")

	// Each state of the checks, on the task as it would be.
	tip := strings.TrimSpace(git(t, dir, "rev-parse", branch))
	as(t, dir, "lead", func(e *workflow.Engine) error {
		tk := e.Store.SummaryByID("T-3vfp8e").Task
		e.Config.Review.Check = "go test ./..."
		e.Config.Land.Check = "make check"
		for _, c := range []struct {
			checked  string
			failures int
			text     string
			class    string
		}{
			{"", 0, "check pending", "none"},
			{tip, 0, "checked " + tip[:7], "ok"},
			{strings.Repeat("1", 40), 0, "checked 1111111, branch moved", "stale"},
			{"", 2, "landing failed 2/3", "fail"},
		} {
			tk.CheckedCommit, tk.LandFailures = c.checked, c.failures
			text, title, class := checkState(e, &tk)
			if text != c.text || class != c.class || !strings.Contains(title, "land.check (make check) runs") {
				t.Errorf("checked %q, %d failures: %q %q (%s), want %q (%s)", c.checked, c.failures, text, class, title, c.text, c.class)
			}
		}
		return nil
	})
}
