package workflow

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"strings"
	"time"

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

func queueRank(q taskfile.Queue) int {
	for i, k := range taskfile.Queues {
		if k == q {
			return i
		}
	}
	return len(taskfile.Queues)
}

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
// second time and kept it (4 MB at 100,000 tasks).
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
// orch list at 10,000 tasks).
type claimKey struct {
	board, claim, prio int
	created            int64
	id, path           string
	i                  int // the task's index in the list being sorted
}

func newClaimKey(q taskfile.Queue, priority string, created time.Time, id, path string, byQueue bool) claimKey {
	k := claimKey{claim: 9, prio: taskfile.PriorityRank(priority), created: math.MaxInt64, id: id, path: path}
	if r, ok := claimQueueRank[q]; ok {
		k.claim = r
	}
	if byQueue {
		k.board = queueRank(q)
	}
	if !created.IsZero() {
		k.created = created.UnixNano()
	}
	return k
}

func cmpClaimKeys(a, b claimKey) int {
	switch {
	case a.board != b.board:
		return cmp.Compare(a.board, b.board)
	case a.claim != b.claim:
		return cmp.Compare(a.claim, b.claim)
	case a.prio != b.prio:
		return cmp.Compare(a.prio, b.prio)
	case a.created != b.created:
		return cmp.Compare(a.created, b.created)
	}
	if c := cmp.Compare(a.id, b.id); c != 0 {
		return c
	}
	return cmp.Compare(a.path, b.path)
}

// sortClaimOrder sorts tasks in claim order (cmpClaimKeys), by queue in board
// order first when byQueue is set.
func sortClaimOrder(list []*gitstore.Summary, byQueue bool) {
	sortByClaimKey(list, func(s *gitstore.Summary) claimKey {
		return newClaimKey(s.Task.Queue, s.Task.Priority, s.Task.Created, s.Task.ID, s.Path, byQueue)
	})
}

// sortHeadersClaimOrder is sortClaimOrder over headers, which hold what
// claim order sorts by.
func sortHeadersClaimOrder(list []*gitstore.SummaryHeader, byQueue bool) {
	sortByClaimKey(list, func(h *gitstore.SummaryHeader) claimKey {
		return newClaimKey(h.Queue, h.Priority, h.Created, h.ID, h.Path, byQueue)
	})
}

func sortByClaimKey[T any](list []T, key func(T) claimKey) {
	keys := make([]claimKey, len(list))
	for i, x := range list {
		keys[i] = key(x)
		keys[i].i = i
	}
	slices.SortFunc(keys, cmpClaimKeys)
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
		q.keys[i] = newClaimKey(h.Queue, h.Priority, h.Created, h.ID, h.Path, false)
		q.keys[i].i = i
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

func (q *claimQueue) Less(i, j int) bool { return cmpClaimKeys(q.keys[i], q.keys[j]) < 0 }

func (q *claimQueue) Swap(i, j int) { q.keys[i], q.keys[j] = q.keys[j], q.keys[i] }

func (q *claimQueue) Push(x any) { q.keys = append(q.keys, x.(claimKey)) }

func (q *claimQueue) Pop() any {
	k := q.keys[len(q.keys)-1]
	q.keys = q.keys[:len(q.keys)-1]
	return k
}
