package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/trace"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/termboard"
	"github.com/orch-tool/orch/workflow"
)

type listOptions struct {
	g          *globalOptions
	Queues     []string
	Ready      bool
	Labels     []string
	Role       string
	ClaimedBy  string
	Priorities []string
	Search     string
	Sort       string
	All        bool
}

func newListCmd(g *globalOptions) *cobra.Command {
	o := &listOptions{g: g}
	cmd := &cobra.Command{
		Use:   "list [--all] [--queue Q]... [--ready] [--label L]... [--role R] [--claimed-by A] [--priority P]... [--search TEXT] [--sort S]",
		Short: "List tasks",
		Long: `List tasks by queue, and in claim order within a queue (` + workflow.ClaimOrderText() + `).
--ready lists the tasks a claim by you could take now, in the order it would
take them: exactly what orch claim considers (with --agent X, what X's
claim considers).

Filters, all of which must match: --label (the task has every label given),
--role, --claimed-by, --priority (any of those given: P0..P3 or
critical|high|medium|low), --search (in the title and the body, ignoring
case). --sort claim (the default), priority, created (newest first), id or
title. --all adds the archive: tasks finished more than archive_after ago
(orch list reads only the tasks; --all reads every archived file).`,
		Example: `  orch list
  orch list --queue rejected --queue provisional
  orch list --ready --json
  orch list --ready --json=id,title,priority
  orch list --jq '.tasks[] | select(.claimed_by == "agent-a") | .id'
  orch list --ready --agent agent-b
  orch list --label auth --priority P0 --priority P1 --sort created
  orch list --search "login redirect" --claimed-by agent-a
  orch list --all --queue done --sort created`,
		Args: exactArgs(0, "list [--all] [--queue Q]... [--ready] [--label L]... [--role R] [--claimed-by A] [--priority P]... [--search TEXT] [--sort S]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runList(o) },
	}
	cmd.Flags().StringArrayVarP(&o.Queues, "queue", "q", nil, "only this queue (repeatable)")
	cmd.Flags().BoolVar(&o.Ready, "ready", false, "only tasks ready to claim, in claim order")
	cmd.Flags().StringArrayVar(&o.Labels, "label", nil, "only tasks with this label (repeatable: all of them)")
	cmd.Flags().StringVar(&o.Role, "role", "", "only tasks of this role")
	cmd.Flags().StringVar(&o.ClaimedBy, "claimed-by", "", "only tasks claimed by this agent")
	cmd.Flags().StringArrayVar(&o.Priorities, "priority", nil, "only tasks of this priority (repeatable: any of them)")
	cmd.Flags().StringVar(&o.Search, "search", "", "only tasks whose title or body contains `TEXT`")
	cmd.Flags().StringVar(&o.Sort, "sort", "claim", "order: claim, priority, created, id, title")
	cmd.Flags().BoolVarP(&o.All, "all", "a", false, "the archive's tasks too (finished more than archive_after ago)")
	return cmd
}

func parseQueues(names []string) ([]taskfile.Queue, error) {
	var qs []taskfile.Queue
	for _, n := range names {
		for _, part := range strings.Split(n, ",") {
			q := taskfile.Queue(strings.TrimSpace(part))
			if !q.Valid() {
				return nil, &workflow.UsageError{Msg: fmt.Sprintf("%q is not a queue", part), Hint: "queues: " + taskfile.QueueNames()}
			}
			qs = append(qs, q)
		}
	}
	return qs, nil
}

func runList(o *listOptions) error {
	qs, err := parseQueues(o.Queues)
	if err != nil {
		return err
	}
	f := workflow.ListFilter{Queues: qs, Ready: o.Ready, Labels: o.Labels, Role: o.Role, ClaimedBy: o.ClaimedBy, Search: o.Search, Sort: o.Sort, Archived: o.All}
	if !slices.Contains(workflow.ListSorts, o.Sort) {
		return &workflow.UsageError{Msg: fmt.Sprintf("--sort %q is not an order orch knows", o.Sort), Hint: "--sort " + strings.Join(workflow.ListSorts, "|")}
	}
	for _, p := range o.Priorities {
		for _, part := range strings.Split(p, ",") {
			n, ok := taskfile.NormalizePriority(strings.TrimSpace(part))
			if !ok {
				return &workflow.UsageError{Msg: fmt.Sprintf("--priority %q is not a priority", part), Hint: "P0..P3, or critical, high, medium, low"}
			}
			f.Priorities = append(f.Priorities, n)
		}
	}
	// list --json reads every task's summary once, in list order: the state
	// cache's pages can be given back behind each pass.
	return o.g.run(func(e *workflow.Engine) (printer, error) {
		if err := e.RequireInit(); err != nil {
			return nil, err
		}
		if o.g.JSON {
			tasks, err := e.ListHeaders(f)
			if err != nil {
				return nil, err
			}
			trace.Phase("list")
			return func(out *output) error { return o.g.writeTaskList(out.Out, e, tasks) }, nil
		}
		tasks, err := e.List(f)
		if err != nil {
			return nil, err
		}
		trace.Phase("list")
		return func(out *output) error { return printTaskTable(out, e, tasks) }, nil
	})
}

// listAnswer is orch list's JSON answer (written by writeTaskList).
type listAnswer struct {
	Count int           `json:"count"`
	Tasks []answer.Task `json:"tasks"`
}

// writeTaskList writes orch list's JSON answer one task object at a time,
// through a buffer of fixed size, decoding each task into a scratch
// summary of a few reused ones: what it holds does not grow with the
// number of tasks (docs/design.md §11: list --json memory is flat in the task
// count). It runs in the printer, once, after the body's answer stands.
//
// Formatting and writing the task objects (half of the output's CPU time)
// runs on a goroutine of its own, a chunk of tasks behind the decoding,
// which reads the state cache, the fields and readiness: the engine is not
// safe for concurrent use, and only this goroutine touches it.
func (g *globalOptions) writeTaskList(w io.Writer, e *workflow.Engine, tasks []*gitstore.SummaryHeader) error {
	withFields := g.fields.ShowsFields()
	work, formatted := make(chan *listChunk, listChunksInFlight), make(chan *listChunk, listChunksInFlight)
	var err error          // the first write's error; the writer's until formatted is closed
	var failed atomic.Bool // err is set: stop decoding
	go func() {
		defer close(formatted)
		b := make([]byte, 0, listBuffer)
		b = answer.AppendHead(b)
		b = append(b, `,"count":`+strconv.Itoa(len(tasks))+`,"tasks":[`...)
		flush := func() {
			if err == nil {
				if _, err = w.Write(b); err != nil {
					failed.Store(true)
				}
			}
			b = b[:0]
		}
		for c := range work {
			for i := range c.items {
				if c.at+i > 0 {
					b = append(b, ',')
				}
				b = c.items[i].AppendJSON(b)
				if len(b) > listBuffer-listRoom {
					flush()
				}
			}
			formatted <- c
		}
		b = append(b, "]}\n"...)
		flush()
	}()
	// recycle takes back the oldest chunk formatted.
	recycle := func() *listChunk { return <-formatted }
	made := 0 // chunks: as many as can be queued, formatted or waiting to be taken back
	for i := 0; i < len(tasks) && !failed.Load(); i += listChunkTasks {
		var c *listChunk
		if made < 2*listChunksInFlight+1 {
			c = &listChunk{sums: make([]gitstore.Summary, listChunkTasks)}
			made++
		} else {
			c = recycle()
		}
		c.at, c.items = i, c.items[:0]
		for k, h := range tasks[i:min(i+listChunkTasks, len(tasks))] {
			s := h.Read(&c.sums[k])
			f := workflow.NoFields
			if withFields {
				f = e.TaskFields(s)
			}
			c.items = append(c.items, answer.NewTask(s, s.Problem == "" && e.Ready(s), f, g.fields))
		}
		work <- c
	}
	close(work)
	for range formatted {
	}
	trace.Phase("output")
	return err
}

// listChunk is a run of list --json's tasks, decoded by writeTaskList and
// formatted on its writer goroutine.
type listChunk struct {
	sums  []gitstore.Summary // scratch, one per task (see SummaryHeader.Read)
	items []answer.Task
	at    int // the place of its first task in the list
}

// listBuffer is the size of writeTaskList's buffer, written out when less
// than listRoom is left: room for a task object as most are, so that the
// buffer does not grow. listChunkTasks tasks make a chunk; the decoding
// runs at most listChunksInFlight chunks ahead of the writer.
const (
	listBuffer         = 64 << 10
	listRoom           = 8 << 10
	listChunkTasks     = 128
	listChunksInFlight = 2
)

func printTaskTable(out *output, e *workflow.Engine, tasks []*gitstore.Summary) error {
	if len(tasks) == 0 {
		fmt.Fprintln(out.Err, "no tasks")
		return nil
	}
	tw := tabwriter.NewWriter(out.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tQUEUE\tPRI\tTITLE\tNOTE")
	for _, s := range tasks {
		t := s.Task
		note := ""
		switch {
		case s.Problem != "":
			note = "invalid: " + s.Problem
		case t.Queue == taskfile.Claimed || t.Queue == taskfile.Provisional:
			who := t.ClaimedBy
			if who == "" {
				who = t.SubmittedBy
			}
			if who != "" {
				note = "by " + who
			}
		}
		if ok, pending := e.DepsDone(&t); !ok && t.Queue.Open() {
			note = strings.TrimSpace(note + " waits for " + strings.Join(pending, ", "))
		}
		if t.RejectionCount > 0 {
			note = strings.TrimSpace(fmt.Sprintf("%s rejected %dx", note, t.RejectionCount))
		}
		id := t.ID
		if id == "" {
			id = "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, t.Queue, t.Priority, termboard.Clip(t.Title, 60), note)
	}
	return tw.Flush()
}
