//go:build unix

package coordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orch-tool/orch/coordinator/harness"
)

// fakeQueue hands out tasks and takes a run as done when its agent wrote
// <dir>/<task>.done (as an agent's orch submit would move the task).
type fakeQueue struct {
	mu        sync.Mutex
	dir       string
	tasks     []string
	reviews   []string
	attempts  map[string]int
	abandoned map[string][]End
	done      []string
	lost      map[string]bool
	renewed   map[string]int
	stopped   map[string]string // slots stopped, and why
}

func newFakeQueue(t *testing.T, tasks ...string) *fakeQueue {
	return &fakeQueue{dir: t.TempDir(), tasks: tasks, attempts: map[string]int{}, abandoned: map[string][]End{}, lost: map[string]bool{}, renewed: map[string]int{}}
}

func (q *fakeQueue) job(s *Slot, id, role string) *Job {
	q.attempts[id]++
	return &Job{Slot: s, Task: id, Title: "task " + id, Attempt: q.attempts[id], Role: role, Worktree: q.dir, Prompt: "do " + id + "\n"}
}

func (q *fakeQueue) Claim(s *Slot) (*Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.tasks) == 0 {
		return nil, nil
	}
	id := q.tasks[0]
	q.tasks = q.tasks[1:]
	return q.job(s, id, "implementer"), nil
}

func (q *fakeQueue) ClaimReview(s *Slot) (*Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.reviews) == 0 {
		return nil, nil
	}
	id := q.reviews[0]
	q.reviews = q.reviews[1:]
	return q.job(s, id, "reviewer"), nil
}

func (q *fakeQueue) Renew(j *Job) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.renewed[j.Task]++
	if q.lost[j.Task] {
		return ErrLost
	}
	return nil
}

func (q *fakeQueue) Finish(j *Job, r RunRecord) (Outcome, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, err := os.Stat(filepath.Join(q.dir, j.Task+".done")); err == nil {
		q.done = append(q.done, j.Task)
		return Outcome{Event: "submitted", Text: j.Task + " submitted"}, true, nil
	}
	return Outcome{}, false, nil
}

func (q *fakeQueue) Abandon(j *Job, end End) (Outcome, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.abandoned[j.Task] = append(q.abandoned[j.Task], end)
	return Outcome{Event: "paused", Text: j.Task + " paused: " + end.Reason}, nil
}

func (q *fakeQueue) Provisional() (int, error)                     { return 0, nil }
func (q *fakeQueue) Left() (map[string]int, error)                 { return nil, nil }
func (q *fakeQueue) RunChanged() string                            { return "" }
func (q *fakeQueue) ClaimedSince(*Slot, time.Time) ([]*Job, error) { return nil, nil }
func (q *fakeQueue) Moved() bool                                   { return false }
func (q *fakeQueue) PollPRs() error                                { return nil }
func (q *fakeQueue) Archive() error                                { return nil }
func (q *fakeQueue) Done()                                         {}
func (q *fakeQueue) House() HouseResult                            { return HouseResult{Idle: true} }
func (q *fakeQueue) SlotStopped(s *Slot, why string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped == nil {
		q.stopped = map[string]string{}
	}
	q.stopped[s.Name] = why
	return nil
}

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) add(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		out = append(out, ev.Event)
	}
	return out
}

func (r *recorder) has(kind, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		if ev.Event == kind && (reason == "" || ev.Reason == reason) {
			return true
		}
	}
	return false
}

func testRun(slots ...*Slot) *Run {
	r := &Run{KillGrace: 300 * time.Millisecond, Backoff: time.Hour, RenewEvery: time.Hour, MaxCrashes: 2}
	for _, s := range slots {
		if s.Reviewer {
			r.Reviewers = append(r.Reviewers, s)
		} else {
			r.Agents = append(r.Agents, s)
		}
	}
	return r
}

func runFor(t *testing.T, q *fakeQueue, r *Run, d time.Duration) (*recorder, error) {
	t.Helper()
	exe, _ := os.Executable()
	rec := &recorder{}
	c, err := New(Options{Run: r, Queue: q, Orch: exe, PrivDir: q.dir, Env: append(os.Environ(), "FAKE_DIR="+q.dir),
		UntilIdle: true, Events: rec.add, Poll: 20 * time.Millisecond, Recheck: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err = c.Run(ctx)
	return rec, err
}

const submitScript = `touch "$FAKE_DIR/$ORCH_TASK.done"`

func TestCoordinatorRunsEveryTask(t *testing.T) {
	q := newFakeQueue(t, "T-1", "T-2", "T-3", "T-4", "T-5")
	r := testRun(&Slot{Name: "a", Cmd: submitScript}, &Slot{Name: "b", Cmd: submitScript})
	rec, err := runFor(t, q, r, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(q.done)
	if fmt.Sprint(q.done) != "[T-1 T-2 T-3 T-4 T-5]" {
		t.Errorf("done %v; events %v", q.done, rec.kinds())
	}
	if !rec.has("idle", "") {
		t.Errorf("no idle event: %v", rec.kinds())
	}
}

func TestCoordinatorEnvAndPrompt(t *testing.T) {
	q := newFakeQueue(t, "T-env")
	script := `{ cat; echo "$ORCH_AGENT $ORCH_TASK $ORCH_ROLE $ORCH_ATTEMPT"; cat "$ORCH_PROMPT_FILE"; echo "$ORCH_LOG"; } > "$FAKE_DIR/env.out"; ` + submitScript
	rec, err := runFor(t, q, testRun(&Slot{Name: "a", Cmd: script}), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(q.dir, "env.out"))
	want := "do T-env\na T-env implementer 1\ndo T-env\n" + filepath.Join(q.dir, "logs", "T-env", "1.log") + "\n"
	if string(b) != want {
		t.Errorf("agent saw %q, want %q (events %v)", b, want, rec.kinds())
	}
}

func TestCoordinatorCrashPauses(t *testing.T) {
	q := newFakeQueue(t, "T-c")
	rec, err := runFor(t, q, testRun(&Slot{Name: "a", Cmd: `echo working; echo "it broke" >&2; exit 3`}), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ends := q.abandoned["T-c"]
	if len(ends) != 1 || ends[0].Reason != "crash" || ends[0].ExitCode != 3 || fmt.Sprint(ends[0].Tail) != "[working it broke]" {
		t.Errorf("abandoned %+v; events %v", ends, rec.kinds())
	}
}

func TestCoordinatorTimeoutAndStall(t *testing.T) {
	for _, tc := range []struct {
		reason string
		setup  func(r *Run)
		script string
	}{
		{"timeout", func(r *Run) { r.TaskTimeout = 300 * time.Millisecond }, `while :; do echo busy; sleep 0.05; done`},
		{"stall", func(r *Run) { r.StallTimeout = 300 * time.Millisecond }, `echo one line; sleep 60`},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			q := newFakeQueue(t, "T-h")
			r := testRun(&Slot{Name: "a", Cmd: tc.script})
			tc.setup(r)
			start := time.Now()
			rec, err := runFor(t, q, r, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if ends := q.abandoned["T-h"]; len(ends) != 1 || ends[0].Reason != tc.reason {
				t.Errorf("abandoned %+v; events %v", ends, rec.kinds())
			}
			if time.Since(start) > 20*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}

func TestCoordinatorRateLimit(t *testing.T) {
	// With a reset time, the slots of the same harness wait until then;
	// the others go on.
	q := newFakeQueue(t, "T-r", "T-x", "T-y")
	limited := &Slot{Name: "a", Harness: "h", Cmd: `if [ "$ORCH_TASK" = T-r ]; then echo "usage limit reached, try again in 1h"; exit 1; fi; ` + submitScript, RateLimit: regexp.MustCompile(`usage limit`)}
	same := &Slot{Name: "b", Harness: "h", Cmd: `sleep 0.3; ` + submitScript}
	other := &Slot{Name: "c", Harness: "other", Cmd: `sleep 0.3; ` + submitScript}
	r := testRun(limited, same, other)
	ctx := 4 * time.Second
	rec, _ := runFor(t, q, r, ctx)
	if ends := q.abandoned["T-r"]; len(ends) != 1 || ends[0].Reason != "rate_limit" {
		t.Errorf("abandoned %+v; events %v", ends, rec.kinds())
	}
	waits := map[string]bool{}
	rec.mu.Lock()
	for _, ev := range rec.events {
		if ev.Event == "backoff" {
			waits[ev.Slot] = true
		}
	}
	rec.mu.Unlock()
	if !waits["a"] || !waits["b"] || waits["c"] {
		t.Errorf("backoff for %v, want a and b", waits)
	}
	// The other harness's slot went on with the other tasks.
	if len(q.done) == 0 {
		t.Errorf("nothing done meanwhile: %v", rec.kinds())
	}
}

func TestCoordinatorDrainAndStop(t *testing.T) {
	exe, _ := os.Executable()
	for _, stop := range []bool{false, true} {
		q := newFakeQueue(t, "T-1", "T-2", "T-3")
		rec := &recorder{}
		c, err := New(Options{Run: testRun(&Slot{Name: "a", Cmd: `sleep 0.5; ` + submitScript}), Queue: q, Orch: exe, PrivDir: q.dir,
			Env: append(os.Environ(), "FAKE_DIR="+q.dir), Events: rec.add, Poll: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() { done <- c.Run(context.Background()) }()
		for !rec.has("started", "") {
			time.Sleep(10 * time.Millisecond)
		}
		c.Drain()
		if stop {
			c.Stop()
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return")
		}
		if stop {
			if ends := q.abandoned["T-1"]; len(ends) != 1 || ends[0].Reason != "stopped" {
				t.Errorf("stop: abandoned %+v; events %v", ends, rec.kinds())
			}
		} else if fmt.Sprint(q.done) != "[T-1]" || len(q.tasks) != 2 {
			t.Errorf("drain: done %v, left %v; events %v", q.done, q.tasks, rec.kinds())
		}
	}
}

// A run whose task is lost (its lease taken over) is ended, and the task
// is left alone.
func TestCoordinatorLostLease(t *testing.T) {
	q := newFakeQueue(t, "T-l")
	q.lost["T-l"] = true
	r := testRun(&Slot{Name: "a", Cmd: `sleep 60`})
	r.RenewEvery = 100 * time.Millisecond
	rec, err := runFor(t, q, r, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.abandoned["T-l"]) != 0 || len(q.done) != 0 || !rec.has("killing", "lost") {
		t.Errorf("abandoned %v done %v events %v", q.abandoned, q.done, rec.kinds())
	}
}

// movingQueue is a fakeQueue whose state branch moves at every look, as it
// does under many busy agents, and which counts the claims asked of it.
type movingQueue struct {
	*fakeQueue
	moved  bool
	claims int
}

func (q *movingQueue) Moved() bool { return q.moved }

func (q *movingQueue) Claim(s *Slot) (*Job, error) {
	q.claims++
	return q.fakeQueue.Claim(s)
}

// TestIdleSlotLooksAgainOncePerIdleLook: a slot that found nothing does
// not claim again at every move of the branch (each look takes the store's
// lock from the agents), but once per idleLook while the branch moves, and
// not at all while it stays; work that came meanwhile is found at the next
// look, and a pending look keeps --until-idle from ending.
func TestIdleSlotLooksAgainOncePerIdleLook(t *testing.T) {
	q := &movingQueue{fakeQueue: newFakeQueue(t), moved: true}
	exe, _ := os.Executable()
	c, err := New(Options{Run: testRun(&Slot{Name: "a", Cmd: "sleep 5"}), Queue: q, Orch: exe, PrivDir: q.dir,
		Env: append(os.Environ(), "FAKE_DIR="+q.dir), Poll: 10 * time.Millisecond, Recheck: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if c.state, err = openRunState(q.dir); err != nil {
		t.Fatal(err)
	}
	defer c.state.close()
	start := time.Now()
	at := func(d time.Duration) time.Time { return start.Add(d) }
	for d := time.Duration(0); d < idleLook; d += 10 * time.Millisecond {
		c.fill(at(d))
	}
	if q.claims != 1 {
		t.Fatalf("%d claims in the first idleLook of moves, want 1", q.claims)
	}
	if !c.waiting(at(idleLook - time.Millisecond)) {
		t.Error("a look owed to a move does not keep --until-idle waiting")
	}
	q.mu.Lock()
	q.tasks = []string{"T-1"}
	q.mu.Unlock()
	c.fill(at(idleLook))
	if q.claims != 2 || c.slots[0].job == nil || c.slots[0].job.Task != "T-1" {
		t.Fatalf("after idleLook: %d claims, job %v; want the second claim to take T-1", q.claims, c.slots[0].job)
	}
	c.killAll("stopped")
	<-c.exits
	c.finish(c.slots[0])

	// Still branch: no look at all, however long.
	q.moved = false
	n := q.claims
	c.fill(at(2 * idleLook))
	for d := 3 * idleLook; d < 10*idleLook; d += idleLook {
		c.fill(at(d))
	}
	if q.claims != n+1 {
		t.Errorf("%d claims on a still branch after finding nothing, want 1", q.claims-n)
	}
}

// A reset time past run.max_wait is not waited for: the slot stops and
// says why (its task went back to the queue). One far off (2099) is not
// believed at all, and the slot backs off within run.max_wait.
func TestCoordinatorResetTimeCapped(t *testing.T) {
	in3days := time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339)
	q := newFakeQueue(t, "T-r")
	limited := &Slot{Name: "a", Harness: "h", Cmd: `echo "rate limit reached, resets at ` + in3days + `"; exit 1`, RateLimit: regexp.MustCompile(`rate limit`)}
	r := testRun(limited)
	r.MaxWait = 2 * time.Hour
	rec, err := runFor(t, q, r, 10*time.Second)
	var stopped *SlotsStoppedError
	if !errors.As(err, &stopped) || !strings.Contains(q.stopped["a"], "past run.max_wait (2h0m0s)") {
		t.Errorf("err %v, stopped %v; want slot a stopped past run.max_wait (events %v)", err, q.stopped, rec.kinds())
	}
	if rec.has("backoff", "") {
		t.Errorf("waited: %v", rec.kinds())
	}

	q = newFakeQueue(t, "T-r")
	limited = &Slot{Name: "a", Harness: "h", Cmd: `echo "rate limit reached, resets at 2099-01-01T00:00Z"; exit 1`, RateLimit: regexp.MustCompile(`rate limit`)}
	r = testRun(limited)
	r.MaxWait = 2 * time.Hour
	start := time.Now()
	rec, _ = runFor(t, q, r, 2*time.Second)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	seen := false
	for _, ev := range rec.events {
		if ev.Event != "backoff" {
			continue
		}
		seen = true
		until, err := time.Parse(time.RFC3339, ev.Until)
		if err != nil {
			t.Fatal(err)
		}
		if until.After(start.Add(r.MaxWait + time.Minute)) {
			t.Errorf("waits until %v, past run.max_wait (%v)", until, r.MaxWait)
		}
	}
	if !seen {
		t.Errorf("no backoff: %v", rec.events)
	}
}

// A backoff says once that no reset time was given, whether the harness's
// words say it already (a 429 read from claude's or codex's output) or
// not (a slot's own rate_limit pattern).
func TestBackoffWords(t *testing.T) {
	for _, c := range []struct{ words, want string }{
		{"rate limited (429), no reset time given", "a backs off for 1s (rate limited (429), no reset time given)"},
		{"", "a backs off for 1s (rate limited, no reset time given)"},
	} {
		rec := &recorder{}
		s := &slotState{Slot: &Slot{Name: "a"}}
		co := &Coordinator{opts: Options{Run: &Run{Backoff: time.Second, MaxWait: time.Hour}, Events: rec.add}, slots: []*slotState{s}}
		co.backOff(s, harness.Result{Cause: harness.RateLimit, Words: c.words})
		if len(rec.events) != 1 || rec.events[0].Text != c.want {
			t.Errorf("words %q: events %+v, want one saying %q", c.words, rec.events, c.want)
		}
	}
}
