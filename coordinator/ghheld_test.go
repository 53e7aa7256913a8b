package coordinator

import (
	"testing"
	"time"

	"github.com/orch-tool/orch/config"
)

// A pull request that could not merge is asked about again only after
// run.poll_prs, and forgotten then.
func TestGHHeld(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	q := &engineQueue{run: &config.Run{PollPRs: config.Duration(time.Minute)},
		ghWaited: map[string]time.Time{"T-new": now.Add(-30 * time.Second), "T-old": now.Add(-2 * time.Minute)}}
	held := q.ghHeld(now)
	if !held["T-new"] || held["T-old"] || len(held) != 1 {
		t.Errorf("held = %v, want T-new only", held)
	}
	if _, ok := q.ghWaited["T-old"]; ok {
		t.Error("T-old is still remembered")
	}
	// run.poll_prs 0 (no polling): five minutes.
	q = &engineQueue{run: &config.Run{}, ghWaited: map[string]time.Time{"T-a": now.Add(-4 * time.Minute), "T-b": now.Add(-6 * time.Minute)}}
	if held := q.ghHeld(now); !held["T-a"] || held["T-b"] {
		t.Errorf("default: held = %v, want T-a only", held)
	}
}
