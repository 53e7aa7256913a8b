//go:build unix

package coordinator

import (
	"fmt"
	"time"
)

// The coordinator's own work beside its agents', one step at a time on a
// goroutine of its own (a check can take minutes): review.check on each
// submission before a reviewer may claim it, then landing the approved
// work on the base branch. Its outcomes are events like the agents'.

// HouseResult is what one step of the coordinator's own work did.
type HouseResult struct {
	Events []Event
	// Idle: there was nothing to do (no submission to check, nothing
	// approved, or landing waits for a person's checkout).
	Idle bool
	Err  error
}

// houseRecheck is how often an idle house looks again though the state
// branch did not move (a person's checkout cleaned up, say).
const houseRecheck = 30 * time.Second

// startHouse runs one step of the house's work when none runs.
func (c *Coordinator) startHouse(now time.Time, moved bool) bool {
	if c.houseBusy && moved {
		// The running step may have read the state before this move (an
		// approval): its "idle" would be stale.
		c.houseStale = true
	}
	if c.houseBusy || (c.houseIdle && !moved && now.Sub(c.houseAt) < houseRecheck) {
		return c.houseBusy
	}
	c.houseBusy, c.houseAt = true, now
	go func() { c.houseDone <- c.opts.Queue.House() }()
	return true
}

// houseEnded takes a house step's outcome.
func (c *Coordinator) houseEnded(r HouseResult) {
	c.houseBusy = false
	c.houseIdle = r.Idle && r.Err == nil && !c.houseStale
	c.houseStale = false
	for _, ev := range r.Events {
		c.emit(ev)
	}
	if r.Err != nil {
		c.emit(Event{Event: "error", Reason: "land", Text: fmt.Sprintf("the coordinator's own work failed (it tries again): %v", r.Err)})
	}
}
