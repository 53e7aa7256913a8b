package workflow

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// Action names what a commit of the state branch did, in its Orch-Action
// trailer and in its event: a verb of the transition table, or another
// change orch records. Each action that writes an event has one data type
// (see newData).
type Action string

// The verbs of the transition table (Transitions).
const (
	ActionNew      Action = gitstore.ActionNew
	ActionClaim    Action = "claim"
	ActionSubmit   Action = "submit"
	ActionApprove  Action = "approve"
	ActionReject   Action = "reject" // orch reject, and a GitHub review (orch pr poll, pr import)
	ActionReview   Action = "review"
	ActionPause    Action = "pause"
	ActionFail     Action = "fail"
	ActionRefuse   Action = "refuse"
	ActionDecide   Action = "decide"
	ActionEscalate Action = "escalate"
	ActionRequeue  Action = "requeue"
	ActionSweep    Action = "sweep"
	ActionReopen   Action = "reopen"
	ActionArchive  Action = "archive"
	ActionLand     Action = "land"
	ActionCheck    Action = "check" // review.check on a submission, before review
)

// The other actions that write an event.
const (
	ActionHeartbeat Action = "heartbeat"
	ActionRespond   Action = "respond"
	ActionUnlock    Action = "unlock"
	// ActionAmendRejection adds a note to the newest rejection round (orch
	// reject --amend).
	ActionAmendRejection Action = "reject.amend"
	// ActionRefuseInvalid records a refusal the validator turned down; the
	// task stays claimed.
	ActionRefuseInvalid Action = "refuse.invalid"
	// ActionAuthorityRefused records a refused attempt at what is not the
	// actor's to do (docs/design.md §5.5); orch inbox lists them.
	ActionAuthorityRefused Action = "authority.refused"
	// ActionSyncConflict records the conflicts of a sync's merge.
	ActionSyncConflict Action = "sync.conflict"
	// ActionClaimReview and ActionReleaseReview take and give back a
	// review claim (orch run's reviewers).
	ActionClaimReview   Action = "claim-review"
	ActionReleaseReview Action = "release-review"
	// ActionRun records one run of orch run: how it ended and what it
	// spent (tokens, cost), whatever became of its task.
	ActionRun Action = "run"
	// ActionSlotStopped records a slot of orch run that stopped: its setup
	// cannot run (orch inbox lists it).
	ActionSlotStopped Action = "slot.stopped"
)

// The actions of commits that write no event.
const (
	ActionEdit Action = gitstore.ActionEdit // a hand edit, or orch edit
	ActionInit Action = "init"
	ActionSync Action = "sync"
)

// Event is one line of the event log (events/*.jsonl on the state branch):
// when, which task, what action, the queues it moved between, who acted
// and how orch judged them, and the action's data. Writers and readers use
// this one type. Data stays encoded until a reader asks for it (Payload):
// decoding every event's data costs more than the rest of a scan, and most
// readers want the data of a few actions.
type Event struct {
	Time   string          `json:"ts"`
	Task   string          `json:"task,omitempty"`
	Action Action          `json:"action"`
	From   taskfile.Queue  `json:"from,omitempty"`
	To     taskfile.Queue  `json:"to,omitempty"`
	Actor  string          `json:"actor"`
	Data   json.RawMessage `json:"data,omitempty"`
	// ActorKind and Signals are how the actor was judged (docs/design.md §5.5).
	ActorKind ActorKind     `json:"actor_kind,omitempty"`
	Signals   *ActorSignals `json:"signals,omitempty"`
}

// Payload decodes the event's data into its action's type (newData): a
// *ClaimData for a claim, and so on; nil for an action that has none (one a
// newer orch wrote). A field of the wrong JSON type (a line written by hand)
// is skipped and reported in err, with the rest decoded, as json.Unmarshal
// does.
func (ev *Event) Payload() (EventData, error) {
	d := newData(ev.Action)
	if d == nil || len(ev.Data) == 0 {
		return d, nil
	}
	return d, json.Unmarshal(ev.Data, d)
}

// EachEvent calls fn for every event on the state branch, with its time
// parsed and without its actor's kind and signals (see scannedEvent): file
// by file, each file in the order its lines were written, so not in time
// order across clones (sort by time when the order matters). Lines that do
// not parse, and lines whose time does not, are skipped (orch check reports
// them).
func (e *Engine) EachEvent(fn func(ev *Event, at time.Time)) error {
	if err := e.RequireInit(); err != nil {
		return err
	}
	return e.scanEvents(func(ev *Event) {
		if t, err := taskfile.ParseTime(ev.Time); err == nil {
			fn(ev, t)
		}
	})
}

// fileReader reads a file of the state branch as a commit will leave it.
type fileReader interface {
	Read(path string) ([]byte, error)
	Has(path string) bool
}

// maxEventFile is where an events file is closed and a new one started, so
// that appending one line never means rewriting a large blob.
const maxEventFile = 128 << 10

// eventChange appends ev, with data (of ev's action) as its data, to this
// clone's events file of the day. Each clone writes its own files, so event
// logs from several machines merge as a union with no conflicts.
func (e *Engine) eventChange(snap fileReader, ev Event, data EventData) (gitstore.Change, error) {
	if ev.Actor == e.Actor && ev.ActorKind == "" {
		sig := e.Signals
		ev.ActorKind, ev.Signals = e.Kind, &sig
	}
	if data != nil {
		if data.Action() != ev.Action {
			return gitstore.Change{}, fmt.Errorf("internal error: a %s event with data of %T", ev.Action, data)
		}
		var err error
		if ev.Data, err = encodeData(data); err != nil {
			return gitstore.Change{}, err
		}
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return gitstore.Change{}, err
	}
	day := e.Now().UTC().Format("2006-01-02")
	clone := e.cloneID()
	name := func(n int) string {
		if n == 1 {
			return fmt.Sprintf("%s/%s-%s.jsonl", gitstore.EventsDir, day, clone)
		}
		return fmt.Sprintf("%s/%s-%s-%d.jsonl", gitstore.EventsDir, day, clone, n)
	}
	// The day's newest file is the last that exists; only it is read (a
	// busy day has many full ones before it).
	n := 1
	for n < 100000 && snap.Has(name(n+1)) {
		n++
	}
	path := name(n)
	var file []byte
	if cur, err := snap.Read(path); err == nil {
		if len(cur) < maxEventFile {
			file = cur
		} else {
			path = name(n + 1)
		}
	}
	file = append(append(file, line...), '\n')
	return gitstore.Change{Path: path, Data: file}, nil
}

// cloneID names this clone in event file names. It is random and kept in
// the private state; losing it only starts new event files.
func (e *Engine) cloneID() string {
	if e.clone != "" {
		return e.clone
	}
	if b, err := e.Store.ReadPrivate("clone-id"); err == nil {
		if s := strings.TrimSpace(string(b)); len(s) == 6 && strings.Trim(s, idAlphabet) == "" {
			e.clone = s
			return s
		}
	}
	var b strings.Builder
	for i := 0; i < 6; i++ {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(idAlphabet))))
		b.WriteByte(idAlphabet[n.Int64()])
	}
	_ = e.Store.WritePrivate("clone-id", []byte(b.String()+"\n"))
	e.clone = b.String()
	return e.clone
}

// scannedEvent is an event as scanEvents reads it: its actor's kind and
// signals are skipped, since no reader of the log needs them, and they are
// the costliest part of an event line to decode after its data.
type scannedEvent struct {
	Event
	ActorKind skipped `json:"actor_kind"`
	Signals   skipped `json:"signals"`
}

// skipped is a JSON value left undecoded.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// scanEvents calls fn for every event line on the state branch. Lines that
// do not parse are skipped (orch check reports them).
func (e *Engine) scanEvents(fn func(*Event)) error {
	snap := e.Store.Snapshot()
	files := snap.Files(gitstore.EventsDir)
	defer e.progress("reading the event log", len(files), len(files))
	for i, fe := range files {
		e.progress("reading the event log", i, len(files))
		if !strings.HasSuffix(fe.Path, ".jsonl") {
			continue
		}
		data, err := snap.ReadBlob(fe.Blob)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var ev scannedEvent
			if json.Unmarshal(line, &ev) == nil {
				fn(&ev.Event)
			}
		}
	}
	return nil
}

// eventBefore compares event times as times: as text, "10:00:42Z" would sort
// after "10:00:42.5Z" (FormatTime drops zero milliseconds).
func eventBefore(a, b string) bool {
	ta, errA := taskfile.ParseTime(a)
	tb, errB := taskfile.ParseTime(b)
	if errA != nil || errB != nil {
		return a < b
	}
	return ta.Before(tb)
}
