package workflow

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/testgit"
)

// The event log and commit messages orch wrote at 9036398, before events and
// trailers were typed, and what that commit's code read from them
// (testdata/events-9036398/scenario.sh says how they were made). Today's
// code must read them the same.
const oldLog = "testdata/events-9036398"

// oldLogEngine opens a repository whose state branch holds the old event
// log.
func oldLogEngine(t *testing.T) *Engine {
	t.Helper()
	testgit.SetHome(t, "tester", "t@example.com")
	dir := testgit.EmptyRepo(t)
	e, err := Open(Options{Dir: dir, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.Init(InitOptions{}); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(oldLog, "events", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no event files in %s (%v)", oldLog, err)
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
	return e
}

// sameAsOld compares got, as JSON, with the file the old code wrote.
func sameAsOld(t *testing.T, name string, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(oldLog, "want", name))
	if err != nil {
		t.Fatal(err)
	}
	if b = append(b, '\n'); !bytes.Equal(b, want) {
		t.Errorf("%s differs from what the old code read:\n%s", name, lineDiff(string(want), string(b)))
	}
}

// lineDiff shows the first lines where a and b differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return ""
}

// TestOldEventLogReadsTheSame: stats (whole and since a time, with --top),
// the events as EachEvent hands them, and the latest refusals (orch inbox,
// show, decide) read from the old log are what the old code read.
func TestOldEventLogReadsTheSame(t *testing.T) {
	e := oldLogEngine(t)
	all, err := e.Stats(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameAsOld(t, "stats.json", all)

	type seen struct {
		Time                          time.Time
		Task, Action, From, To, Actor string
	}
	var evs []seen
	refused := map[string]bool{}
	actions := map[Action]bool{}
	if err := e.EachEvent(func(ev *Event, at time.Time) {
		evs = append(evs, seen{at, ev.Task, string(ev.Action), string(ev.From), string(ev.To), ev.Actor})
		if ev.Action == ActionRefuse {
			refused[ev.Task] = true
		}
		actions[ev.Action] = true
		// Every old line decodes into its action's type, whole.
		d, err := ev.Payload()
		if err != nil || d == nil {
			t.Errorf("%s event of %s: data %T, %v", ev.Action, ev.Task, d, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	sameAsOld(t, "events.json", evs)
	for a := range eventActions {
		if !actions[a] && !newerThanOldLog[a] {
			t.Errorf("the old log has no %s event: scenario.sh should make one", a)
		}
	}

	part, err := e.Stats(evs[len(evs)/2].Time, 2)
	if err != nil {
		t.Fatal(err)
	}
	sameAsOld(t, "stats-since.json", part)

	recs, err := e.latestRefusals(refused)
	if err != nil {
		t.Fatal(err)
	}
	pending := map[string]*PendingRefusal{}
	for id, r := range recs {
		pending[id] = pendingRefusal(id, r)
	}
	sameAsOld(t, "refusals.json", pending)
}

// eventActions are the actions that write an event.
var eventActions = map[Action]bool{
	ActionNew: true, ActionClaim: true, ActionSubmit: true, ActionApprove: true, ActionReject: true, ActionReview: true,
	ActionPause: true, ActionFail: true, ActionRefuse: true, ActionDecide: true, ActionEscalate: true, ActionRequeue: true,
	ActionSweep: true, ActionReopen: true, ActionArchive: true, ActionHeartbeat: true, ActionRespond: true, ActionUnlock: true,
	ActionAmendRejection: true, ActionRefuseInvalid: true, ActionAuthorityRefused: true, ActionSyncConflict: true,
	ActionLand: true, ActionCheck: true,
}

// newerThanOldLog are the event actions orch writes that the old log's
// orch did not know (landing).
var newerThanOldLog = map[Action]bool{ActionLand: true, ActionCheck: true}

// TestOldEventLinesRoundTrip: each old line's data, decoded into its type
// and written again as orch writes data, is the same bytes: every key of
// every action has its place in the types, with the omitempty it needs.
func TestOldEventLinesRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(oldLog, "events", "*.jsonl"))
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var ev Event
			if err := json.Unmarshal(line, &ev); err != nil {
				t.Fatal(err)
			}
			d, err := ev.Payload()
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			data, err := encodeData(d)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, ev.Data) {
				t.Errorf("%s event of %s:\nold %s\nnew %s", ev.Action, ev.Task, ev.Data, data)
			}
			again, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, line) {
				t.Errorf("envelope:\nold %s\nnew %s", line, again)
			}
			n++
		}
	}
	if n < 100 {
		t.Fatalf("%d lines", n)
	}
}

// TestOldCommitsLogTheSame: orch log's fields of every old commit message,
// read with today's trailer decoder, are what the old code read.
func TestOldCommitsLogTheSame(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(oldLog, "commits.json"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	if err := json.Unmarshal(b, &msgs); err != nil {
		t.Fatal(err)
	}
	type logged struct {
		Task, Action, From, To, Actor, Subject, LockedOut, Unlocked, Created string
	}
	var got []logged
	for _, m := range msgs {
		tr := gitstore.ParseTrailers(m)
		en := logEntry(&gitrepo.CommitInfo{Message: m}, tr)
		got = append(got, logged{en.Task, en.Action, en.From, en.To, en.Actor, en.Subject, en.LockedOut, en.Unlocked, tr.Get(gitstore.TrailerCreated)})
	}
	sameAsOld(t, "log.json", got)
}
