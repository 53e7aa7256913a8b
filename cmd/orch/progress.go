package main

import (
	"fmt"
	"time"
)

// progressDelay is how long an operation runs before its progress shows:
// the common command is over long before, and must not flicker.
const progressDelay = 300 * time.Millisecond

// progressNow is the clock of progress lines (tests replace it).
var progressNow = time.Now

// progressFunc returns the progress reporter for long operations (a cold
// reconcile of thousands of files, sync, sweep, stats): one line on stderr,
// rewritten in place at most ten times a second and erased at the end. It
// is nil, and nothing is shown, unless stderr is a terminal and --json is
// off, so scripts and agents never see it.
func (g *globalOptions) progressFunc() func(what string, done, total int) {
	if !g.io.Progress || g.JSON {
		return nil
	}
	w := g.io.Err // the terminal, also while a command's output is held back
	var start, last time.Time
	shown := false
	return func(what string, done, total int) {
		now := progressNow()
		if start.IsZero() {
			start = now
		}
		if done >= total {
			if shown {
				fmt.Fprint(w, "\r\033[K")
				shown = false
			}
			start = time.Time{}
			return
		}
		if now.Sub(start) < progressDelay || now.Sub(last) < 100*time.Millisecond {
			return
		}
		last, shown = now, true
		fmt.Fprintf(w, "\r\033[K%s %d/%d (%d%%)", what, done, total, done*100/total)
	}
}
