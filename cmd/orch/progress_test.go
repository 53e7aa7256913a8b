package main

import (
	"bytes"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	now := time.Unix(1000, 0)
	progressNow = func() time.Time { return now }
	defer func() { progressNow = time.Now }()
	step := func(d time.Duration) { now = now.Add(d) }

	cases := []struct {
		name     string
		terminal bool
		json     bool
		want     string
	}{
		{"terminal", true, false, "\r\033[Ksyncing 2/10 (20%)\r\033[Ksyncing 4/10 (40%)\r\033[K"},
		{"not a terminal", false, false, ""},
		{"json", true, true, ""},
	}
	for _, c := range cases {
		var errb bytes.Buffer
		g := &globalOptions{io: &streams{Err: &errb, Progress: c.terminal}, JSON: c.json}
		p := g.progressFunc()
		if p == nil {
			if c.want != "" {
				t.Fatalf("%s: no progress reporter", c.name)
			}
			continue
		}
		p("syncing", 0, 10) // starts the clock: nothing yet
		step(100 * time.Millisecond)
		p("syncing", 1, 10) // before the delay: nothing
		step(250 * time.Millisecond)
		p("syncing", 2, 10) // shown
		step(50 * time.Millisecond)
		p("syncing", 3, 10) // too soon after the last line
		step(100 * time.Millisecond)
		p("syncing", 4, 10)  // shown
		p("syncing", 10, 10) // erased
		if got := errb.String(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}

	// A short operation shows nothing at all, not even the erase.
	var errb bytes.Buffer
	g := &globalOptions{io: &streams{Err: &errb, Progress: true}}
	p := g.progressFunc()
	p("sweeping", 0, 3)
	step(10 * time.Millisecond)
	p("sweeping", 3, 3)
	if errb.Len() != 0 {
		t.Errorf("short operation printed %q", errb.String())
	}
}
