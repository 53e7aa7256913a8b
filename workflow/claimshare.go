package workflow

import (
	"hash/fnv"
	"slices"
)

// claimShare divides the ready tasks among agents claiming from one remote
// at the same time (claim --sync). Without it, clones that fetched the same
// state all go for the same next task and all but one lose the race for its
// claim ref (each loss a push, a fetch and another try); and a clone's view
// lacks what the others claimed since its last fetch, so the next task in
// it is often one just taken.
//
// Each agent takes the first ready task, in claim order, whose ID hashes to
// its rank among the agents claiming (by name). Its share does not depend
// on when it fetched: a view that lacks the others' latest claims still
// leads it to none of them. It looks only among the first window ready
// tasks (eight per agent: in a stale view most of the first are the
// others', taken already) of the first task's queue and priority, and when
// none of those is its own, takes one of them at random. In a fresh view
// an agent passes over about as many tasks as there are agents claiming,
// as the random spread before it did; in the worst case, a window less
// one; never rejected work for new work, nor a task of a higher priority.
//
// After a lost race it takes one of the first few of its share at random
// (own): the agents' counts come from the claim refs each has seen, so
// agents that start together count differently and some share a rank
// until their claims are seen; each race lost widens the choice.
type claimShare struct {
	agents int // agents claiming, this one included (≤1: alone)
	rank   int // this agent's place among them
	window int // ready tasks, in claim order, a claim chooses among (≤1: the next)
	own    int // of its share's first tasks in the window, how many it chooses among (≤1: the first)
}

// claimShareWindow is the window per agent claiming.
const claimShareWindow = 8

// newClaimShare is actor's share among the agents claiming (actor among
// them), lost the races this claim lost so far and inFlight the claims
// seen in flight (claim refs the state branch does not show yet). Alone,
// every task is its share and it takes the next, or one of the next
// 1+inFlight+2*lost: beside claims in flight the next is likely taken.
// Among others, its share's first, or one of its first 1+2*lost: the
// others' claims in flight are not in its share.
func newClaimShare(actor string, agents []string, inFlight, lost int) claimShare {
	if len(agents) <= 1 {
		n := 1 + inFlight + 2*lost
		return claimShare{agents: 1, window: n, own: n}
	}
	slices.Sort(agents)
	return claimShare{agents: len(agents), rank: slices.Index(agents, actor), window: claimShareWindow * len(agents), own: 1 + 2*lost}
}

// takes reports whether task id is in this agent's share.
func (sh claimShare) takes(id string) bool {
	if sh.agents <= 1 {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32()%uint32(sh.agents)) == sh.rank
}
