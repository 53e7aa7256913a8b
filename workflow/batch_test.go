package workflow

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/taskfile"
)

// batchRepo makes a repository with three tasks, the first two claimed by
// agent-a, and returns it opened as the lead (a human).
func batchRepo(t *testing.T) (*Engine, []string) {
	t.Helper()
	testgit.SetHome(t, "lead", "lead@example.com")
	dir := testgit.EmptyRepo(t)
	e, err := Open(Options{Dir: dir, Actor: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Init(InitOptions{}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, title := range []string{"One", "Two", "Three"} {
		r, err := e.New(NewTask{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Task.Task.ID)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := Open(Options{Dir: dir, Actor: "agent-a", Signals: ActorSignals{EnvAgent: "agent-a"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:2] {
		if _, err := a.Claim(ClaimOptions{Task: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(Options{Dir: dir, Actor: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, ids
}

func TestBatchOneCommit(t *testing.T) {
	e, ids := batchRepo(t)
	before := e.Store.Snapshot().Tip
	res, err := e.Batch(ActionRequeue, []string{ids[0], ids[1], ids[0]}, false, func(id string) (*Result, error) { return e.Requeue(id, "") })
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d results, want 2 (the repeated ID once)", len(res))
	}
	tip := e.Store.Snapshot().Tip
	log, err := e.Log("", 0)
	if err != nil {
		t.Fatal(err)
	}
	if log[0].Commit != tip.String() || log[1].Commit != before.String() {
		t.Errorf("the batch made more than one commit: %+v", log[:2])
	}
	for i, r := range res {
		if r.Commit != tip || r.From != taskfile.Claimed || r.To != taskfile.Incoming || r.Task.Task.ID != ids[i] || r.Task.Task.Queue != taskfile.Incoming {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	for _, id := range ids[:2] {
		l, err := e.Log(id, 1)
		if err != nil || len(l) != 1 || l[0].Commit != tip.String() || l[0].Task != id {
			t.Errorf("orch log %s does not show the batch: %+v %v", id, l, err)
		}
	}
	requeued := 0
	if err := e.EachEvent(func(ev *Event, _ time.Time) {
		if ev.Action == ActionRequeue {
			requeued++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if requeued != 2 {
		t.Errorf("%d requeue events, want one a task", requeued)
	}
}

// An illegal task among them refuses the batch: nothing changes, and the
// error names the task and keeps the rule's error (its exit code).
func TestBatchAllOrNothing(t *testing.T) {
	e, ids := batchRepo(t)
	before := e.Store.Snapshot().Tip
	_, err := e.Batch(ActionRequeue, ids, false, func(id string) (*Result, error) { return e.Requeue(id, "") })
	var be *BatchError
	var illegal *IllegalTransitionError
	if !errors.As(err, &be) || be.Task != ids[2] || be.N != 3 || be.Of != 3 || !errors.As(err, &illegal) {
		t.Fatalf("err = %v, want the third task's illegal transition", err)
	}
	if !strings.Contains(err.Error(), ids[2]) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("err = %v", err)
	}
	if tip := e.Store.Snapshot().Tip; tip != before {
		t.Errorf("the state branch moved: %s -> %s", before, tip)
	}
	for _, id := range ids[:2] {
		if q := e.Store.SummaryByID(id).Task.Queue; q != taskfile.Claimed {
			t.Errorf("%s is %s, want claimed still", id, q)
		}
	}
}

func TestBatchDryRun(t *testing.T) {
	e, ids := batchRepo(t)
	before := e.Store.Snapshot().Tip
	res, err := e.Batch(ActionFail, ids, true, func(id string) (*Result, error) { return e.Fail(id, "no longer needed") })
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].To != taskfile.Failed || !res[0].Commit.IsZero() {
		t.Errorf("dry run results: %+v", res)
	}
	if tip := e.Store.Snapshot().Tip; tip != before {
		t.Errorf("a dry run moved the state branch")
	}
	// A rule a verb checks before its change (the text) refuses the batch too.
	if _, err := e.Batch(ActionFail, ids, false, func(id string) (*Result, error) { return e.Fail(id, "") }); err == nil {
		t.Errorf("fail without a reason: no error")
	}
	if tip := e.Store.Snapshot().Tip; tip != before {
		t.Errorf("a refused batch moved the state branch")
	}
}
