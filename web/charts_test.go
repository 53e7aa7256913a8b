package web

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/testgit"
	"github.com/orch-tool/orch/workflow"
)

// TestChartsOfOldLog: the stats page's charts of an event log orch wrote at
// 9036398, before events were typed (workflow/testdata/events-9036398), are
// what that commit's code drew (testdata/charts-9036398.json).
func TestChartsOfOldLog(t *testing.T) {
	testgit.SetHome(t, "lead", "lead@example.com")
	dir := testgit.EmptyRepo(t)
	e, err := workflow.Open(workflow.Options{Dir: dir, Actor: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Init(workflow.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../workflow/testdata/events-9036398/events/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no event files (%v)", err)
	}
	var changes []gitstore.Change
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		changes = append(changes, gitstore.Change{Path: gitstore.EventsDir + "/" + filepath.Base(f), Data: b})
	}
	if _, err := e.Store.Update(func(*gitstore.Snapshot) (*gitstore.CommitRequest, error) {
		return &gitstore.CommitRequest{Changes: changes, Message: "fixture\n", Author: e.Signature()}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st, err := e.Stats(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := buildCharts(e, st, time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/charts-9036398.json")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("ORCH_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile("testdata/charts-9036398.json", append(got, '\n'), 0o666); err != nil {
			t.Fatal(err)
		}
		want = append(got, '\n')
	}
	if !bytes.Equal(append(got, '\n'), want) {
		t.Errorf("charts differ from the old code's:\n%s", got)
	}
	if c.Approvals != 5 || c.Median == "" {
		t.Errorf("%d approvals, median %q: the log has 5", c.Approvals, c.Median)
	}
}
