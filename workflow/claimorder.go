package workflow

import (
	"cmp"
	"container/heap"
	"slices"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// claimQueueOrder is the claim order's first key, and the one place it is
// written: a claim takes rejected work first (the branch and the feedback
// are waiting), then work another agent paused, then new work. Within a
// queue: priority (P0 first), then age (oldest first), then id
// (cmpClaimKeys). The help text and the docs are built from it
// (ClaimOrderText).
var claimQueueOrder = []taskfile.Queue{taskfile.Rejected, taskfile.NeedsContinuation, taskfile.Incoming}

// ClaimOrderText says the claim order in words.
func ClaimOrderText() string {
	s := make([]string, len(claimQueueOrder))
	for i, q := range claimQueueOrder {
		s[i] = string(q)
	}
	return strings.Join(s, ", then ") + " (with it, a claim whose lease ran out); within a queue by priority (P0 first), then age (oldest first), then id"
}

var claimQueueRank = func() map[taskfile.Queue]int {
	m := map[taskfile.Queue]int{}
	for i, q := range claimQueueOrder {
		m[q] = i
	}
	// A claim whose lease ran out is work another agent stopped: it comes
	// with needs_continuation (whyNot passes over a live one).
	m[taskfile.Claimed] = m[taskfile.NeedsContinuation]
	return m
}()

// claimQueues are the queues a claim takes from (those of claimQueueRank).
var claimQueues = func() map[taskfile.Queue]bool {
	m := map[taskfile.Queue]bool{}
	for q := range claimQueueRank {
		m[q] = true
	}
	return m
}()

// DepsDone reports whether every dependency of t is done, and lists those
// that are not.
func (e *Engine) DepsDone(t *taskfile.Task) (bool, []string) {
	var pending []string
	for _, d := range t.DependsOn {
		if q, ok := e.tasks().QueueByID(d); q != taskfile.Done && (ok || !e.archivedDone(d)) {
			pending = append(pending, d)
		}
	}
	return len(pending) == 0, pending
}

// Ready reports whether a claim could take task s now (ignoring who
// claims). s is the task's summary as the caller has it: orch list decodes
// each in turn, and looking a claimed task up again by ID decoded it a
// second time and kept it.
func (e *Engine) Ready(s *gitstore.Summary) bool {
	t := &s.Task
	if _, ok := claimQueueRank[t.Queue]; !ok {
		return false
	}
	if t.Queue == taskfile.Claimed && !e.leaseExpired(s) {
		return false
	}
	ok, _ := e.DepsDone(t)
	return ok
}

// claimKey is a task's place in claim order, computed once per task
// (comparing raw fields in the sort's comparator cost more than the rest of
// orch list). It holds the ranks and the creation time; the rare tie is
// broken by the task's id and path, read from the list being sorted, so
// that the keys stay small.
type claimKey struct {
	created int64
	rank    uint32 // board, claim and priority rank, a byte each, most significant first
	i       int32  // the task's index in the list being sorted
}

// newClaimKey is the key of a task; created is as gitstore.CreatedKey gives
// it (a header holds it so).
func newClaimKey(q taskfile.Queue, priority string, created int64, byQueue bool) claimKey {
	claim, board := 9, 0
	if r, ok := claimQueueRank[q]; ok {
		claim = r
	}
	if byQueue {
		board = q.Rank()
	}
	return claimKey{rank: uint32(board)<<16 | uint32(claim)<<8 | uint32(taskfile.PriorityRank(priority)), created: created}
}

// cmpClaimKeys compares two tasks' keys, then their ids and paths.
func cmpClaimKeys(a, b claimKey, idA, pathA, idB, pathB string) int {
	switch {
	case a.rank != b.rank:
		return cmp.Compare(a.rank, b.rank)
	case a.created != b.created:
		return cmp.Compare(a.created, b.created)
	}
	if c := cmp.Compare(idA, idB); c != 0 {
		return c
	}
	return cmp.Compare(pathA, pathB)
}

// sortClaimOrder sorts tasks in claim order (cmpClaimKeys), by queue in board
// order first when byQueue is set.
func sortClaimOrder(list []*gitstore.Summary, byQueue bool) {
	sortByClaimKey(list, func(s *gitstore.Summary) (claimKey, string, string) {
		return newClaimKey(s.Task.Queue, s.Task.Priority, gitstore.CreatedKey(s.Task.Created), byQueue), s.Task.ID, s.Path
	})
}

// sortHeadersClaimOrder is sortClaimOrder over headers, which hold what
// claim order sorts by.
func sortHeadersClaimOrder(list []*gitstore.SummaryHeader, byQueue bool) {
	sortByClaimKey(list, func(h *gitstore.SummaryHeader) (claimKey, string, string) {
		return newClaimKey(h.Queue, h.Priority, h.Created, byQueue), h.ID, h.Path
	})
}

// sortByClaimKey sorts list by the keys that key gives, with the id and
// path it gives for ties.
func sortByClaimKey[T any](list []T, key func(T) (k claimKey, id, path string)) {
	keys := make([]claimKey, len(list))
	for i, x := range list {
		keys[i], _, _ = key(x)
		keys[i].i = int32(i)
	}
	slices.SortFunc(keys, func(a, b claimKey) int {
		if a.rank != b.rank || a.created != b.created {
			return cmpClaimKeys(a, b, "", "", "", "")
		}
		_, idA, pathA := key(list[a.i])
		_, idB, pathB := key(list[b.i])
		return cmpClaimKeys(a, b, idA, pathA, idB, pathB)
	})
	sorted := make([]T, len(list))
	for j, k := range keys {
		sorted[j] = list[k.i]
	}
	copy(list, sorted)
}

// claimQueue hands out tasks not yet decoded in claim order, sorting only
// as far as it is asked: a claim usually takes the first (a heap's O(n)
// set-up instead of sorting thousands of open tasks).
type claimQueue struct {
	keys []claimKey
	list []*gitstore.SummaryHeader
}

func newClaimQueue(list []*gitstore.SummaryHeader) *claimQueue {
	q := &claimQueue{keys: make([]claimKey, len(list)), list: list}
	for i, h := range list {
		q.keys[i] = newClaimKey(h.Queue, h.Priority, h.Created, false)
		q.keys[i].i = int32(i)
	}
	heap.Init(q)
	return q
}

// next returns the next task in claim order, nil after the last.
func (q *claimQueue) next() *gitstore.SummaryHeader {
	if len(q.keys) == 0 {
		return nil
	}
	return q.list[heap.Pop(q).(claimKey).i]
}

func (q *claimQueue) Len() int { return len(q.keys) }

func (q *claimQueue) Less(i, j int) bool {
	a, b := q.keys[i], q.keys[j]
	if a.rank != b.rank || a.created != b.created {
		return cmpClaimKeys(a, b, "", "", "", "") < 0
	}
	ha, hb := q.list[a.i], q.list[b.i]
	return cmpClaimKeys(a, b, ha.ID, ha.Path, hb.ID, hb.Path) < 0
}

func (q *claimQueue) Swap(i, j int) { q.keys[i], q.keys[j] = q.keys[j], q.keys[i] }

func (q *claimQueue) Push(x any) { q.keys = append(q.keys, x.(claimKey)) }

func (q *claimQueue) Pop() any {
	k := q.keys[len(q.keys)-1]
	q.keys = q.keys[:len(q.keys)-1]
	return k
}
