package e2e

import (
	"fmt"
	"testing"

	"github.com/orch-tool/orch/taskfile"
)

// claimOutput is `orch claim --json`, the fields the test reads.
type claimOutput struct {
	Task struct {
		ID        string `json:"id"`
		ClaimedBy string `json:"claimed_by"`
	} `json:"task"`
	Branch string `json:"branch"`
	Commit string `json:"commit"`
}

// TestClaimRace: 16 orch processes, each in its own linked worktree, claim
// from 1,000 ready tasks at once until nothing is left, while the git CLI
// commits on another branch in another worktree. Every task is claimed
// exactly once, by the process that was told so, with one commit per claim;
// every git commit survives; fsck is clean.
func TestClaimRace(t *testing.T) {
	workers, tasks, gitCommits := scale(16, 4), scale(1000, 60), scale(60, 10)
	r := NewRepo(t)
	ids := r.SeedTasks(tasks, taskfile.Incoming)
	if len(ids) != tasks {
		t.Fatalf("seeded %d tasks, want %d", len(ids), tasks)
	}
	r.MustOrch(r.Main, "list") // write the view once, before the race
	seeded := map[string]bool{}
	for _, id := range ids {
		seeded[id] = true
	}
	before := r.StateLog()
	gitWT := r.AddWorktree("git-wt", "side")
	wts := r.AddWorktrees("claimer-", workers)

	git := r.StartGitCommitter(gitWT, gitCommits)
	gitLoop := git.Loop
	t.Cleanup(func() { gitLoop.Stop() })

	results := RunWorkersUntil(workers, func(w, i int) (Result, bool) {
		res := r.Orch(wts[w], "claim", "--json", "--agent", fmt.Sprintf("claimer-%d", w))
		return res, res.Code == 0
	})
	StopAll(t, gitLoop)
	if _, fails := gitLoop.Stop(); len(fails) > 0 {
		t.Errorf("%d git commits failed beside orch; first: %s", len(fails), fails[0])
	}

	claimedBy := map[string]string{}
	commits := map[string]string{}
	for w, rs := range results {
		for k, res := range rs {
			last := k == len(rs)-1
			if last {
				if res.Code != 3 {
					t.Errorf("claimer %d ended with %v, want exit 3 (nothing to claim)", w, res)
				}
				continue
			}
			var out claimOutput
			if err := res.JSON(&out); err != nil {
				t.Errorf("claimer %d: %v: %v", w, res, err)
				continue
			}
			id := out.Task.ID
			if !seeded[id] {
				t.Errorf("claimer %d claimed %s, which was not seeded", w, id)
			}
			if prev, dup := claimedBy[id]; dup {
				t.Errorf("%s claimed twice: by %s and by claimer-%d", id, prev, w)
			}
			claimedBy[id] = fmt.Sprintf("claimer-%d", w)
			if out.Task.ClaimedBy != claimedBy[id] {
				t.Errorf("%s: claim answered claimed_by %q to claimer-%d", id, out.Task.ClaimedBy, w)
			}
			if prev, dup := commits[out.Commit]; dup {
				t.Errorf("commit %s reported for %s and %s", out.Commit, prev, id)
			}
			commits[out.Commit] = id
		}
	}
	if len(claimedBy) != tasks {
		t.Errorf("%d tasks claimed, want %d", len(claimedBy), tasks)
	}

	// The state branch: one claim commit per task after the seed, each the
	// one its claimer reported, in one line of history.
	log := r.StateLog()
	r.CheckLinear(log)
	if got := len(log) - len(before); got != tasks {
		t.Errorf("state branch grew by %d commits, want %d (one per claim)", got, tasks)
	}
	for _, c := range log[:len(log)-len(before)] {
		if c.Action != "claim" {
			t.Errorf("unexpected state commit %s: %q", c.Hash[:10], c.Subject)
			continue
		}
		if commits[c.Hash] != c.Task {
			t.Errorf("state commit %s claims %s but was reported for %q", c.Hash[:10], c.Task, commits[c.Hash])
		}
	}
	// Every task is claimed, by the claimer that was told so.
	for _, tk := range r.List() {
		if tk.Queue != "claimed" || tk.ClaimedBy != claimedBy[tk.ID] {
			t.Errorf("%s: queue %s, claimed_by %q, want claimed by %q", tk.ID, tk.Queue, tk.ClaimedBy, claimedBy[tk.ID])
		}
	}
	side := r.RevList("side")
	made := len(git.Made())
	if got := len(side) - 1; got < made {
		t.Errorf("branch side has %d commits beyond its base, want at least the %d the git CLI made", got, made)
	}
	r.Fsck()
	r.StatusClean()
}
