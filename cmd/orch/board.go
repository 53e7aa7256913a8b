package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/trace"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/termboard"
	"github.com/orch-tool/orch/workflow"
)

type boardOptions struct {
	g          *globalOptions
	Queues     []string
	All        bool
	Width      int
	Watch      bool
	Interval   time.Duration
	WatchCount int
}

func newBoardCmd(g *globalOptions) *cobra.Command {
	o := &boardOptions{g: g}
	cmd := &cobra.Command{
		Use:   "board [--all | --queue Q...] [--width N] [--watch [--interval D]]",
		Short: "Show the queues as columns",
		Long: `Show the queues as columns, in board order: for each task its ID, priority,
rejection count, title and who holds it. Escalated tasks are marked with "!"
(and in red on a colour terminal). By default the open queues are shown;
--all adds done, failed and superseded (the archive's tasks too), --queue
picks queues (repeatable, or comma-separated).

The board fits the terminal (COLUMNS overrides it, 100 when stdout is not a
terminal, --width sets it); queues that do not fit side by side wrap into
several bands. --watch redraws the board whenever the state branch moves
(checked every --interval) until interrupted; with --json it prints one JSON
document, on one line, per change.`,
		Example: `  orch board
  orch board --all --width 120
  orch board --queue provisional --queue rejected
  orch board --watch
  orch board --json`,
		Args: exactArgs(0, "board [--all | --queue Q...] [--width N] [--watch [--interval D]]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runBoard(o) },
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.Queues, "queue", "q", nil, "only this queue (repeatable)")
	f.BoolVarP(&o.All, "all", "a", false, "show every queue, done, failed and superseded too")
	f.IntVarP(&o.Width, "width", "w", 0, "lay the board out in `N` columns (default: the terminal's width)")
	f.BoolVar(&o.Watch, "watch", false, "redraw whenever the state branch moves, until interrupted")
	f.DurationVar(&o.Interval, "interval", time.Second, "with --watch, how often to look at the state branch")
	// For tests: stop after N boards. The environment variable lets a
	// script run the help's example, orch board --watch, as written.
	watchCount, _ := strconv.Atoi(os.Getenv("ORCH_BOARD_WATCH_COUNT"))
	f.IntVar(&o.WatchCount, "watch-count", watchCount, "with --watch, stop after `N` boards (for tests; env ORCH_BOARD_WATCH_COUNT)")
	_ = f.MarkHidden("watch-count")
	return cmd
}

// boardQueues are the columns to show: the queues asked for, in board
// order, or the open queues (every queue with --all).
func (o *boardOptions) boardQueues() ([]taskfile.Queue, error) {
	if o.All && len(o.Queues) > 0 {
		return nil, &workflow.UsageError{Msg: "give --all or --queue, not both", Hint: "usage: orch board [--all | --queue Q...]"}
	}
	asked, err := parseQueues(o.Queues)
	if err != nil {
		return nil, err
	}
	want := map[taskfile.Queue]bool{}
	for _, q := range asked {
		want[q] = true
	}
	var qs []taskfile.Queue
	for _, q := range taskfile.Queues {
		if want[q] || (len(want) == 0 && (o.All || q.Open())) {
			qs = append(qs, q)
		}
	}
	return qs, nil
}

func runBoard(o *boardOptions) error {
	qs, err := o.boardQueues()
	if err != nil {
		return err
	}
	if o.Width < 0 {
		return &workflow.UsageError{Msg: fmt.Sprintf("--width %d: the width must be positive", o.Width), Hint: "orch board --width 100"}
	}
	if o.Interval <= 0 {
		return &workflow.UsageError{Msg: fmt.Sprintf("--interval %s: the interval must be positive", o.Interval), Hint: "orch board --watch --interval 2s"}
	}
	if o.WatchCount < 0 {
		return &workflow.UsageError{Msg: "--watch-count must not be negative", Hint: "orch board --watch --watch-count 2"}
	}
	if !o.Watch {
		_, _, err := o.draw(qs, 0)
		return err
	}
	return o.watch(qs)
}

// watch draws the board, then redraws it each time the state branch's tip
// moves (and, on a terminal, when the window is resized) until SIGINT or
// SIGTERM, or --watch-count boards.
func (o *boardOptions) watch(qs []taskfile.Queue) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	resized := make(chan os.Signal, 1)
	if o.g.io.OutTTY && !o.g.JSON {
		signal.Notify(resized, syscall.SIGWINCH)
		defer signal.Stop(resized)
	}
	o.g.longRunning = true // one store per board: no mapping each (gitstore.Options.InMemoryCache)
	drawn := 0
	last, ref, err := o.draw(qs, drawn)
	if err != nil {
		return err
	}
	drawn++
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for o.WatchCount == 0 || drawn < o.WatchCount {
		select {
		case <-ctx.Done():
			return nil
		case <-resized:
		case <-tick.C:
			// Reading the ref is a stat and a small read (loose ref, else
			// packed-refs): no lock, no reconcile, until it moves.
			tip, err := o.g.discover().ReadRef(ref)
			if err != nil || tip == last {
				continue
			}
		}
		if last, ref, err = o.draw(qs, drawn); err != nil {
			return err
		}
		drawn++
	}
	return nil
}

// draw opens the store, prints board number n (0 is the first) and returns
// the tip it shows and the state branch's ref.
func (o *boardOptions) draw(qs []taskfile.Queue, n int) (tip plumbing.Hash, ref string, err error) {
	g := o.g
	err = g.run(func(e *workflow.Engine) (printer, error) {
		if err := e.RequireInit(); err != nil {
			return nil, err
		}
		list, err := e.List(workflow.ListFilter{Queues: qs, Archived: workflow.ShowsFinished(qs)})
		if err != nil {
			return nil, err
		}
		cols := termboard.Group(qs, list)
		trace.Phase("board")
		if g.JSON {
			b := g.appendBoardJSON(nil, e, cols)
			return func(out *output) error {
				tip, ref = e.Store.Snapshot().Tip, e.Store.Ref
				return out.emitJSON(b)
			}, nil
		}
		return func(out *output) error {
			tip, ref = e.Store.Snapshot().Tip, e.Store.Ref
			width := o.width()
			color := g.io.OutTTY && !g.io.NoColor
			var b strings.Builder
			switch {
			case o.Watch && g.io.OutTTY:
				// Clear the screen, and say what is going on.
				b.WriteString(termboard.ClearScreen)
				status := fmt.Sprintf("orch board: %s at %s, %s (Ctrl-C quits)", strings.TrimPrefix(ref, "refs/heads/"), shortHash(tip), time.Now().Format("15:04:05"))
				b.WriteString(termboard.Status(status, width, color) + "\n\n")
			case n > 0:
				b.WriteString("\n" + strings.Repeat("=", width) + "\n\n")
			}
			b.WriteString(termboard.Render(cols, width, color))
			_, err := out.Out.Write([]byte(b.String()))
			return err
		}, nil
	})
	return tip, ref, err
}

func shortHash(h plumbing.Hash) string {
	if h.IsZero() {
		return "(none)"
	}
	return h.String()[:7]
}

// width is the board's width: --width, else COLUMNS, else the terminal's,
// else 100.
func (o *boardOptions) width() int {
	if o.Width > 0 {
		return o.Width
	}
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	if f, ok := o.g.io.Out.(*os.File); ok && o.g.io.OutTTY {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	return 100
}

// boardAnswer is orch board's JSON answer (written by appendBoardJSON):
// the columns, each with its tasks as orch list --json shows them.
type boardAnswer struct {
	Count  int               `json:"count"`
	Queues []boardColumnJSON `json:"queues"`
}

type boardColumnJSON struct {
	Queue string        `json:"queue"`
	Count int           `json:"count"`
	Tasks []answer.Task `json:"tasks"`
}

// appendBoardJSON writes the board as one JSON document on one line:
// {"schema_version":V,"count":N,"queues":[{"queue":Q,"count":N,"tasks":[...]}...]},
// each task as orch list --json prints it.
func (g *globalOptions) appendBoardJSON(b []byte, e *workflow.Engine, cols []termboard.Column) []byte {
	b = answer.AppendHead(b)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, int64(len(cols)), 10)
	b = append(b, `,"queues":[`...)
	var all []*gitstore.Summary
	for _, c := range cols {
		all = append(all, c.Tasks...)
	}
	tjs := g.tasks(e, all)
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"queue":`...)
		b = answer.AppendString(b, string(c.Queue))
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, int64(len(c.Tasks)), 10)
		b = append(b, `,"tasks":[`...)
		for j := range c.Tasks {
			if j > 0 {
				b = append(b, ',')
			}
			b = tjs[0].AppendJSON(b)
			tjs = tjs[1:]
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}\n"...)
}
