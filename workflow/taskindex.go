package workflow

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// TaskIndex is what the rules of the loop read of storage: the tasks, one
// by ID or all of them, the claimable ones in claim order, whether a task's
// view file holds a hand edit orch could not commit, and a task branch's
// tip. Who may claim what and in what order, lockout, deadlock, escalation
// by count and by no progress, and review authority read nothing else, so
// the rule suite (rule_suite_test.go) runs them over tasks in memory as
// well as over a repository; the commands use *gitstore.Store. Writing
// (Update, the commit, the view) stays with the store: the rules produce a
// change (Engine.step), the store commits it.
type TaskIndex interface {
	SummaryByID(id string) *gitstore.Summary
	QueueByID(id string) (taskfile.Queue, bool)
	EachSummaryWhile(fn func(*gitstore.Summary) bool)
	// EachSummaryHeaderIn gives the headers of the tasks in queues, in no
	// particular order; a header's Summary() is the whole task.
	EachSummaryHeaderIn(queues map[taskfile.Queue]bool, fn func(*gitstore.SummaryHeader))
	BrokenFile(path string) error
	Conflicted(path string) []taskfile.Conflict
	ReadRef(name string) (plumbing.Hash, error)
}

var _ TaskIndex = (*gitstore.Store)(nil)

// tasks is the index the rules read: Tasks when set (a unit test), else
// the store.
func (e *Engine) tasks() TaskIndex {
	if e.Tasks != nil {
		return e.Tasks
	}
	return e.Store
}
