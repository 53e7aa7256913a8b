package workflow

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClaimShare: agents claiming together each take tasks of their own
// share (the shares split the queue, none empty), the first of their share
// in claim order; that pick does not change when the others' claims are
// missing from the view (a stale fetch) or present; when the window holds
// none of the agent's share it takes one of the window; after a lost race
// one of the first few of its share; alone it takes the next task, or one
// of the next few after a lost race.
func TestClaimShare(t *testing.T) {
	if got, want := newClaimShare("b", []string{"c", "a", "b"}, 5, 0), (claimShare{agents: 3, rank: 1, window: 3 * claimShareWindow, own: 1}); got != want {
		t.Errorf("three agents, claims in flight: %+v, want %+v", got, want)
	}
	if got, want := newClaimShare("b", []string{"c", "a", "b"}, 5, 2), (claimShare{agents: 3, rank: 1, window: 3 * claimShareWindow, own: 5}); got != want {
		t.Errorf("three agents after two lost races: %+v, want %+v", got, want)
	}
	if got, want := newClaimShare("a", []string{"a"}, 1, 1), (claimShare{agents: 1, window: 4, own: 4}); got != want {
		t.Errorf("alone after a lost race: %+v, want %+v", got, want)
	}
	if !newClaimShare("a", []string{"a"}, 0, 0).takes("T-any") {
		t.Error("alone: a task is not in its share")
	}

	// Every ID belongs to exactly one agent's share, and every share has
	// some of 300 IDs.
	const agents = 4
	perRank := make([]int, agents)
	for i := range 300 {
		id := fmt.Sprintf("T-%06x", i*7919)
		owners := 0
		for r := range agents {
			if (claimShare{agents: agents, rank: r, window: 8}).takes(id) {
				owners++
				perRank[r]++
			}
		}
		if owners != 1 {
			t.Fatalf("%s: in %d shares", id, owners)
		}
	}
	for r, n := range perRank {
		if n < 300/agents/2 {
			t.Errorf("rank %d: %d of 300 tasks", r, n)
		}
	}

	// On a real repository: twelve ready tasks, claim order = creation.
	dir, _ := doctorRepo(t)
	e, err := Open(Options{Dir: dir, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := e.New(NewTask{Title: fmt.Sprintf("Task %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// pick is what a claim with share takes when the view holds other
	// clones' claim refs (pending) for the tasks taken.
	pick := func(share claimShare, taken ...string) string {
		t.Helper()
		e, err := Open(Options{Dir: dir, Actor: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		e.remoteClaims = map[string]*remoteClaim{}
		for _, id := range taken {
			e.remoteClaims[id] = &remoteClaim{ID: id, By: "other", Attempt: 1 << 30, Until: e.Now().Add(time.Hour)}
		}
		e.claimShare = share
		roles, err := e.agentRoles("")
		if err != nil {
			t.Fatal(err)
		}
		s, why := e.nextClaimable(roles)
		if s == nil {
			return "nothing: " + fmt.Sprint(why)
		}
		return s.Task.ID
	}
	var order []string // claim order
	for len(order) < 13 {
		id := pick(claimShare{}, order...)
		if strings.HasPrefix(id, "nothing") {
			break
		}
		order = append(order, id)
	}
	if len(order) != 12 {
		t.Fatalf("%d tasks in claim order, want 12: %s", len(order), pick(claimShare{}, order...))
	}
	firstOf := func(share claimShare, from []string) string {
		for _, id := range from {
			if share.takes(id) {
				return id
			}
		}
		return ""
	}
	const n = 3
	picked := map[string]bool{}
	for r := range n {
		share := claimShare{agents: n, rank: r, window: n * claimShareWindow}
		want := firstOf(share, order)
		if want == "" {
			continue // no task of this share among twelve: nothing to check
		}
		if got := pick(share); got != want {
			t.Errorf("rank %d of %d: took %s, want %s, the first of its share", r, n, got, want)
		}
		picked[want] = true
		// The others' claims in the view, or not: the same pick.
		var others []string
		for _, id := range order {
			if !share.takes(id) {
				others = append(others, id)
			}
		}
		if got := pick(share, others...); got != want {
			t.Errorf("rank %d of %d with the others' claims fetched: took %s, want %s", r, n, got, want)
		}
		// Its own first task taken: the next of its share.
		if next := firstOf(share, order[slices.Index(order, want)+1:]); next != "" {
			if got := pick(share, want); got != next {
				t.Errorf("rank %d of %d after its first: took %s, want %s", r, n, got, next)
			}
		}
	}
	// After a lost race, one of the first few of its share: the first
	// three (own 3), not always the same; never another's.
	for r := range n {
		share := claimShare{agents: n, rank: r, window: n * claimShareWindow, own: 3}
		var mine []string
		for _, id := range order {
			if share.takes(id) && len(mine) < 3 {
				mine = append(mine, id)
			}
		}
		if len(mine) < 2 {
			continue // too few of this share among twelve to choose
		}
		seen := map[string]bool{}
		for range 30 {
			got := pick(share)
			if !slices.Contains(mine, got) {
				t.Fatalf("rank %d of %d after a lost race: took %s, not one of its share's first %v", r, n, got, mine)
			}
			seen[got] = true
		}
		if len(seen) < 2 {
			t.Errorf("rank %d of %d after a lost race: always %v", r, n, seen)
		}
	}
	if len(picked) < 2 {
		t.Fatalf("the shares of %d agents hold %d of the twelve tasks' first picks", n, len(picked))
	}
	// A window that holds none of the share: one of the window.
	for r := range n {
		share := claimShare{agents: n, rank: r, window: 2}
		if share.takes(order[0]) || share.takes(order[1]) {
			continue
		}
		for range 20 {
			if got := pick(share); got != order[0] && got != order[1] {
				t.Errorf("rank %d, window 2 without its share: took %s, not one of %v", r, got, order[:2])
			}
		}
	}
	// A share never passes over a higher priority: a P0 made last is
	// every agent's pick, whatever its share.
	e, err = Open(Options{Dir: dir, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	urgent, err := e.New(NewTask{Title: "Urgent", Priority: "P0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for r := range n {
		if got := pick(claimShare{agents: n, rank: r, window: n * claimShareWindow}); got != urgent.Task.Task.ID {
			t.Errorf("rank %d of %d: took %s, not the one P0 task %s", r, n, got, urgent.Task.Task.ID)
		}
	}
	if got := pick(newClaimShare("tester", []string{"tester"}, 0, 0)); got != urgent.Task.Task.ID {
		t.Errorf("alone: took %s, not the P0 task", got)
	}
	for range 10 {
		if got := pick(newClaimShare("tester", []string{"tester"}, 0, 1)); got != urgent.Task.Task.ID {
			t.Fatalf("alone after a lost race: took %s, not the P0 task", got)
		}
	}
	// Alone: the next task; after a lost race, one of the next few (the
	// P0 taken by another clone).
	if got := pick(newClaimShare("tester", []string{"tester"}, 0, 0), urgent.Task.Task.ID); got != order[0] {
		t.Errorf("alone: took %s, want %s", got, order[0])
	}
	seen := map[string]bool{}
	for range 40 {
		got := pick(newClaimShare("tester", []string{"tester"}, 0, 1), urgent.Task.Task.ID)
		if !slices.Contains(order[:3], got) {
			t.Fatalf("alone after a lost race: took %s, not one of the next three", got)
		}
		seen[got] = true
	}
	if len(seen) < 2 {
		t.Errorf("alone after a lost race: always %v", seen)
	}
}
