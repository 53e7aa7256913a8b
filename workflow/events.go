package workflow

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/taskfile"
)

// LoggedEvent is one line of the event log as a reader outside this package
// gets it: the fields every event has, its time parsed, and its data left
// undecoded (each reader decodes the few fields it needs; decoding every
// event's data into maps cost more than the rest of a scan).
type LoggedEvent struct {
	Time   time.Time
	Task   string
	Action string
	From   string
	To     string
	Actor  string
	Data   json.RawMessage
}

// EachEvent calls fn for every event on the state branch: file by file, each
// file in the order its lines were written, so not in time order across
// clones (sort by Time when the order matters). Lines that do not parse,
// and lines whose time does not, are skipped (orch check reports them). fn
// must not keep ev: it is reused.
func (e *Engine) EachEvent(fn func(ev *LoggedEvent)) error {
	if err := e.RequireInit(); err != nil {
		return err
	}
	var le LoggedEvent
	return e.scanEvents(func(ev *rawEvent) {
		t, err := taskfile.ParseTime(ev.Time)
		if err != nil {
			return
		}
		le = LoggedEvent{Time: t, Task: ev.Task, Action: ev.Action, From: ev.From, To: ev.To, Actor: ev.Actor, Data: ev.Data}
		fn(&le)
	})
}

// Event is one line of the event log.
type Event struct {
	Time   string         `json:"ts"`
	Task   string         `json:"task,omitempty"`
	Action string         `json:"action"`
	From   string         `json:"from,omitempty"`
	To     string         `json:"to,omitempty"`
	Actor  string         `json:"actor"`
	Data   map[string]any `json:"data,omitempty"`
	// ActorKind and Signals are how the actor was judged (DESIGN §4a).
	ActorKind ActorKind     `json:"actor_kind,omitempty"`
	Signals   *ActorSignals `json:"signals,omitempty"`
}

// fileReader reads a file of the state branch as a commit will leave it.
type fileReader interface {
	Read(path string) ([]byte, error)
	Has(path string) bool
}

// maxEventFile is where an events file is closed and a new one started, so
// that appending one line never means rewriting a large blob.
const maxEventFile = 128 << 10

// eventChange appends ev to this clone's events file of the day. Each clone
// writes its own files, so event logs from several machines merge as a
// union with no conflicts.
func (e *Engine) eventChange(snap fileReader, ev Event) (gitstore.Change, error) {
	if ev.Actor == e.Actor && ev.ActorKind == "" {
		sig := e.Signals
		ev.ActorKind, ev.Signals = e.Kind, &sig
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
	var data []byte
	if cur, err := snap.Read(path); err == nil {
		if len(cur) < maxEventFile {
			data = cur
		} else {
			path = name(n + 1)
		}
	}
	data = append(append(data, line...), '\n')
	return gitstore.Change{Path: path, Data: data}, nil
}

// cloneID names this clone in event file names. It is random and kept in
// the private state; losing it only starts new event files.
func (e *Engine) cloneID() string {
	if e.clone != "" {
		return e.clone
	}
	p := filepath.Join(e.Store.PrivDir(), "clone-id")
	if b, err := privfile.Read(p); err == nil {
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
	_ = os.MkdirAll(filepath.Dir(p), 0o777)
	_ = os.WriteFile(p, []byte(b.String()+"\n"), 0o666)
	e.clone = b.String()
	return e.clone
}

// rawEvent is an event line with its data left undecoded.
type rawEvent struct {
	Time   string          `json:"ts"`
	Task   string          `json:"task"`
	Action string          `json:"action"`
	From   string          `json:"from"`
	To     string          `json:"to"`
	Actor  string          `json:"actor"`
	Data   json.RawMessage `json:"data"`
}

// scanEvents calls fn for every event line on the state branch. Lines that
// do not parse are skipped (orch check reports them).
func (e *Engine) scanEvents(fn func(*rawEvent)) error {
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
			var ev rawEvent
			if json.Unmarshal(line, &ev) == nil {
				fn(&ev)
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
