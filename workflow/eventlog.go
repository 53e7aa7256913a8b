package workflow

import (
	"encoding/json"
	"time"

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
