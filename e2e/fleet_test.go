package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/orch-tool/orch/taskfile"
)

// TestFleetClaims: three clones of one bare remote, three claimers in each,
// every claim through `orch claim --sync`, under both claim arbiters. Every
// task is claimed exactly once, no call gives up, every clone converges on
// one state after sync, the remote holds one claim ref per claimed task and
// git fsck is clean. (Rates belong in bench/fleet, not here.)
func TestFleetClaims(t *testing.T) {
	for _, arbiter := range []string{"state_branch", "claim_ref"} {
		t.Run(arbiter, func(t *testing.T) { fleetClaims(t, arbiter, 3, 3, scale(27, 12)) })
	}
}

func fleetClaims(t *testing.T, arbiter string, clones, claimers, tasks int) {
	r := NewRepo(t)
	ids := r.SeedTasks(tasks, taskfile.Incoming)
	r.MustOrch(r.Main, "list")
	cfg := filepath.Join(r.Main, ".orchestrator", "config.yaml")
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// orch init wrote every key with its default: change that line.
	edited := regexp.MustCompile(`(?m)^claim_arbiter: [a-z_]+`).ReplaceAllLiteralString(string(data), "claim_arbiter: "+arbiter)
	if !strings.Contains(edited, "claim_arbiter: "+arbiter) {
		t.Fatalf("config.yaml has no claim_arbiter line:\n%s", data)
	}
	if err := os.WriteFile(cfg, []byte(edited), 0o666); err != nil {
		t.Fatal(err)
	}
	r.MustOrch(r.Main, "check") // a person's edit of the config, committed on purpose
	if out := r.Git(r.Main, "show", "orch:config.yaml"); !strings.Contains(out, "claim_arbiter: "+arbiter) {
		t.Fatalf("the config edit was not committed:\n%s", out)
	}
	remote, cloneDirs, dirs := r.fleet(clones, claimers)
	results := RunWorkersUntil(len(dirs), func(w, i int) (Result, bool) {
		res := r.Orch(dirs[w], "claim", "--sync", "--json", "--agent", fmt.Sprintf("agent-%d", w))
		return res, res.Code == 0
	})

	claimedBy := map[string]string{}
	for w, rs := range results {
		for k, res := range rs {
			if k == len(rs)-1 {
				if res.Code != 3 {
					t.Errorf("claimer %d ended with %v, want exit 3 (nothing to claim): no call may give up", w, res)
				}
				continue
			}
			var doc struct {
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
			}
			if err := res.JSON(&doc); err != nil || doc.Task.ID == "" {
				t.Fatalf("claimer %d: %v (%v)", w, res, err)
			}
			if prev, dup := claimedBy[doc.Task.ID]; dup {
				t.Errorf("%s claimed twice: by %s and agent-%d", doc.Task.ID, prev, w)
			}
			claimedBy[doc.Task.ID] = fmt.Sprintf("agent-%d", w)
		}
	}
	if len(claimedBy) != len(ids) {
		t.Errorf("%d tasks claimed, want all %d", len(claimedBy), len(ids))
	}

	r.converge(remote, cloneDirs)
	for _, task := range r.List() {
		if want := claimedBy[task.ID]; task.Queue != "claimed" || task.ClaimedBy != want {
			t.Errorf("%s is %s by %q on the synced state, want claimed by %q", task.ID, task.Queue, task.ClaimedBy, want)
		}
	}
	refs := strings.Fields(r.Git(remote, "for-each-ref", "--format=%(refname)", "refs/orch/claims/"))
	sort.Strings(refs)
	if len(refs) != len(ids) {
		t.Errorf("the remote has %d claim refs, want one per claimed task (%d)", len(refs), len(ids))
	}
}

// TestFleetVerdicts: three clones of one bare remote, two reviewers in
// each, every reviewer going through every submitted task (each in its own
// order) with `orch approve --sync` or `orch reject --sync`. Each task gets
// exactly one verdict: one call answers 0, every other is refused by the
// rule (exit 4, the task is no longer provisional), none gives up, and
// after sync every clone holds the verdict that was answered, with one
// feedback round for a rejection. git fsck stays clean.
func TestFleetVerdicts(t *testing.T) {
	const clones, reviewers = 3, 2
	r := NewRepo(t)
	ids := r.SeedTasks(scale(24, 8), taskfile.Provisional)
	landOff(t, r) // the seeded tasks have no branches to land
	r.MustOrch(r.Main, "list")
	remote, cloneDirs, dirs := r.fleet(clones, reviewers)
	verdict := func(w int) string { // half the reviewers approve, half reject
		if w%2 == 0 {
			return "approve"
		}
		return "reject"
	}
	taskOf := func(w, i int) string { return ids[(i+w*len(ids)/len(dirs))%len(ids)] } // each reviewer starts elsewhere
	results := RunWorkers(len(dirs), len(ids), func(w, i int) Result {
		id := taskOf(w, i)
		args := []string{verdict(w), id, "--sync", "--agent", fmt.Sprintf("reviewer-%d", w)}
		if verdict(w) == "reject" {
			args = append(args, "-m", fmt.Sprintf("Not yet, says reviewer-%d.", w))
		}
		return r.Orch(dirs[w], args...)
	})
	won := map[string]string{} // task -> the verdict answered
	for w, rs := range results {
		for i, res := range rs {
			id := taskOf(w, i)
			switch res.Code {
			case 0:
				if prev, dup := won[id]; dup {
					t.Errorf("%s got two verdicts: %s and %s by reviewer-%d", id, prev, verdict(w), w)
				}
				won[id] = verdict(w)
			case 4:
				if !strings.Contains(res.Stderr, "cannot "+verdict(w)+" "+id) {
					t.Errorf("reviewer-%d on %s: exit 4 for another reason: %s", w, id, res.Stderr)
				}
			default:
				t.Errorf("reviewer-%d on %s: %v (no call may give up)", w, id, res)
			}
		}
	}
	if len(won) != len(ids) {
		t.Errorf("%d tasks got a verdict, want all %d", len(won), len(ids))
	}
	r.converge(remote, cloneDirs)
	for _, task := range r.List() {
		want := map[string]string{"approve": "done", "reject": "rejected"}[won[task.ID]]
		if task.Queue != want {
			t.Errorf("%s is %s on the synced state, want %s (%s answered)", task.ID, task.Queue, want, won[task.ID])
		}
		if want == "rejected" {
			if n := strings.Count(r.Git(r.Main, "show", "orch:"+strings.TrimPrefix(task.Path, ".orchestrator/")), "## Review Feedback (rejection"); n != 1 {
				t.Errorf("%s has %d feedback rounds, want 1", task.ID, n)
			}
		}
	}
}

// fleet pushes the repository to a new bare remote and makes clones clones
// of it (each synced once), each worked from by perClone processes: dirs
// has one entry per process.
func (r *Repo) fleet(clones, perClone int) (remote string, cloneDirs, dirs []string) {
	remote = filepath.Join(r.Root, "remote.git")
	r.Git(r.Root, "init", "-q", "--bare", remote)
	r.Git(r.Main, "remote", "add", "origin", remote)
	r.Git(r.Main, "push", "-q", "origin", "main")
	r.MustOrch(r.Main, "sync")
	for c := 0; c < clones; c++ {
		dir := filepath.Join(r.Root, fmt.Sprintf("clone-%d", c))
		r.Git(r.Root, "clone", "-q", remote, dir)
		r.MustOrch(dir, "sync")
		cloneDirs = append(cloneDirs, dir)
		for k := 0; k < perClone; k++ {
			dirs = append(dirs, dir)
		}
	}
	return remote, cloneDirs, dirs
}

// converge runs two rounds of orch sync in the main repository and every
// clone, then checks that they all hold one state tip and that git fsck
// of the remote is clean.
func (r *Repo) converge(remote string, cloneDirs []string) {
	r.t.Helper()
	for round := 0; round < 2; round++ {
		for _, dir := range append([]string{r.Main}, cloneDirs...) {
			r.MustOrch(dir, "sync")
		}
	}
	tips := map[string]bool{}
	for _, dir := range append([]string{r.Main}, cloneDirs...) {
		tips[r.Git(dir, "rev-parse", "refs/heads/orch")] = true
	}
	if len(tips) != 1 {
		r.t.Errorf("the clones did not converge: %d different state tips", len(tips))
	}
	if out := r.TryGit(remote, "fsck", "--strict"); !out.OK() {
		r.t.Errorf("git fsck on the remote: %v", out)
	}
}
