//go:build unix

package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/orch-tool/orch/internal/text"
)

// run.notify: a command of the lead's, run when something needs a person
// or the run has nothing left to do: a task escalates, a slot stops, the
// queue drains (idle), a landing fails for the last time. As small as
// git's hooks: sh -c CMD in orch run's directory (-C), the event's JSON (as
// orch run --json prints it) on stdin, ORCH_EVENT and ORCH_TASK set,
// notifyTimeout at most. Its failure is an event (notify_failed); it
// never stops the run, and the run never waits for it, except at its end.

// notifyTimeout bounds one run of run.notify: its process group is killed
// then.
const notifyTimeout = 30 * time.Second

// notifies says whether an event is one run.notify hears.
func notifies(ev Event) bool {
	switch ev.Event {
	case "escalated", "slot_stopped", "idle":
		return true
	case "checked":
		return ev.Reason == "escalated"
	}
	return ev.Queue == "escalated" // a verdict that escalated
}

// notify queues run.notify's run on the event: one at a time, in the
// order of the events, on a goroutine of their own.
func (c *Coordinator) notify(ev Event) {
	cmd := c.opts.Run.Notify
	if cmd == "" || !notifies(ev) {
		return
	}
	encode := c.opts.Encode
	if encode == nil {
		encode = func(ev Event) ([]byte, error) { return json.Marshal(ev) }
	}
	in, err := encode(ev)
	if err != nil {
		c.emit(Event{Event: "notify_failed", Cause: err.Error(), Text: "run.notify: cannot encode the event: " + err.Error()})
		return
	}
	c.notifyMu.Lock()
	defer c.notifyMu.Unlock()
	c.notifyQueue = append(c.notifyQueue, notifyJob{ev, in})
	if c.notifyBusy {
		return
	}
	c.notifyBusy = true
	c.notifying.Add(1)
	go func() {
		defer c.notifying.Done()
		for {
			c.notifyMu.Lock()
			if len(c.notifyQueue) == 0 {
				c.notifyBusy = false
				c.notifyMu.Unlock()
				return
			}
			j := c.notifyQueue[0]
			c.notifyQueue = c.notifyQueue[1:]
			c.notifyMu.Unlock()
			if err := runNotify(cmd, c.opts.Dir, c.opts.Env, j.ev, j.in, notifyTimeout); err != nil {
				what := j.ev.Event
				if j.ev.Task != "" {
					what += " event of " + j.ev.Task
				} else {
					what += " event"
				}
				c.emit(Event{Event: "notify_failed", Task: j.ev.Task, Cause: err.Error(),
					Text: fmt.Sprintf("run.notify failed on the %s (orch run goes on): %v", what, err)})
			}
		}
	}()
}

// notifyJob is one event for run.notify, and its JSON.
type notifyJob struct {
	ev Event
	in []byte
}

// runNotify runs cmd under sh -c with the event on stdin.
func runNotify(cmd, dir string, env []string, ev Event, in []byte, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	x := exec.CommandContext(ctx, "sh", "-c", cmd)
	x.Dir = dir
	x.Env = append(append([]string(nil), env...), "ORCH_EVENT="+ev.Event, "ORCH_TASK="+ev.Task)
	x.Stdin = bytes.NewReader(append(in, '\n'))
	var out bytes.Buffer
	x.Stdout, x.Stderr = &out, &out
	x.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	x.Cancel = func() error { return syscall.Kill(-x.Process.Pid, syscall.SIGKILL) }
	x.WaitDelay = time.Second
	err := x.Run()
	if err == nil {
		return nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("it ran past %s and was killed", timeout)
	}
	if last := lastLine(strings.Split(strings.TrimSpace(out.String()), "\n")); last != "no output" {
		return fmt.Errorf("%v: %s", err, text.Visible(last))
	}
	return err
}
