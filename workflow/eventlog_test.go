package workflow

import (
	"testing"
	"time"
)

func TestEachEvent(t *testing.T) {
	dir, _ := doctorRepo(t)
	e, err := Open(Options{Dir: dir, Actor: "tester", NoReconcile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var news int
	err = e.EachEvent(func(ev *Event, at time.Time) {
		if ev.Action == ActionNew {
			news++
			if ev.To != "incoming" || ev.Task == "" || ev.Actor != "tester" || time.Since(at) > time.Hour {
				t.Errorf("event %+v", *ev)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if news != 2 {
		t.Errorf("%d new events, want 2", news)
	}
}
