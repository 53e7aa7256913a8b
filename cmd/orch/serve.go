package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/web"
	"github.com/orch-tool/orch/workflow"
)

type serveOptions struct {
	g        *globalOptions
	Addr     string
	Public   bool
	ReadOnly bool
	Interval time.Duration
}

func newServeCmd(g *globalOptions) *cobra.Command {
	o := &serveOptions{g: g}
	cmd := &cobra.Command{
		Use:   "serve [--addr HOST:PORT] [--public] [--read-only]",
		Short: "Show the board, the tasks, the inbox and the stats in a browser",
		Long: `Serve the board in a browser: the queues as columns (escalated and blocked
always in view), progress (done of all, what waits for a human, the landing
queue with each task's checks) and what orch run runs now; each task with
its fields, its body, submit notes, verdicts and review feedback, its
branch's diff (/task/ID/diff), its run logs (/logs/ID), pull request and
history; the inbox; the stats with charts. Open pages follow the state
branch: within
a second of any change (a transition, a sync, a hand edit committed) they
update without a reload.

The server listens on ` + web.DefaultAddr + ` (--addr, or ORCH_SERVE_ADDR;
port 0 picks a free one) and refuses an address beyond this machine unless
--public is given; with --public it warns, and the board is read-only. Pages
read the state branch without taking the lock a transition waits for, and
commit nothing. Everything the pages need is in the binary: no network.

The link printed with a token lets that browser act as the person who
started the server: approve, reject, requeue and decide, each run as the
command-line verb runs, under the same rules. Without the token, with
--read-only, or when the actor is an agent (ORCH_AGENT set, or a name in
config.yaml's agents), the pages only show.
`,
		Example: `  orch serve
  orch serve --addr 127.0.0.1:8080 --read-only
  orch serve --addr 0.0.0.0:7420 --public`,
		Args: exactArgs(0, "serve [--addr HOST:PORT] [--public] [--read-only]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The environment's address, unless --addr names one (read
			// here, so that the help shows the default whatever is set).
			if env := os.Getenv("ORCH_SERVE_ADDR"); env != "" && !cmd.Flags().Changed("addr") {
				o.Addr = env
			}
			return runServe(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Addr, "addr", web.DefaultAddr, "listen on `HOST:PORT` (env ORCH_SERVE_ADDR)")
	f.BoolVar(&o.Public, "public", false, "allow an address beyond loopback (the board is then read-only)")
	f.BoolVar(&o.ReadOnly, "read-only", false, "show only: no buttons, no token")
	f.DurationVar(&o.Interval, "interval", 250*time.Millisecond, "how often to look at the state branch for live updates")
	return cmd
}

// serveAnswer is what orch serve --json prints once it listens.
type serveAnswer struct {
	URL            string `json:"url"`
	LoginURL       string `json:"login_url"`        // the URL with the token ("" when the pages only show)
	Actor          string `json:"actor"`            // whom the actions run as
	Actions        bool   `json:"actions"`          // the pages can approve, reject, requeue and decide
	ReadOnlyReason string `json:"read_only_reason"` // why they cannot ("" when they can)
}

func runServe(o *serveOptions) error {
	g := o.g
	if o.Interval <= 0 {
		return &workflow.UsageError{Msg: fmt.Sprintf("--interval %s: the interval must be positive", o.Interval), Hint: "orch serve --interval 500ms"}
	}
	loopback, err := web.CheckAddr(o.Addr, o.Public)
	if err != nil {
		return err
	}
	ln, err := web.Listen(o.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	token := ""
	if !o.ReadOnly && loopback {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		token = hex.EncodeToString(b)
	}
	// The actor is judged as every verb judges it (docs/design.md §5.1); the
	// actions say they came through the board, without a terminal.
	sig := g.engineOptions(true).Signals
	sig.Source += " (orch serve)"
	sig.Terminal = false
	var logMu sync.Mutex
	opts := web.Options{
		Read: func() (*workflow.Engine, error) {
			// No Repo: each open discovers its own (gitstore.Open writes
			// to the Repo it is given, and pages and actions open at once).
			return workflow.Open(workflow.Options{Dir: g.Dir, StateBranch: g.StateBranch, Actor: g.Agent, NoReconcile: true, InMemoryCache: true})
		},
		Act: func(verb string) (*workflow.Engine, error) {
			eo := g.engineOptions(true)
			eo.Repo, eo.Verb, eo.ReadOnly, eo.InMemoryCache, eo.Progress, eo.Signals = nil, verb, false, true, nil, sig
			return workflow.Open(eo)
		},
		Explain: func(err error) (string, string) {
			c := classify(err)
			return c.msg, c.hint
		},
		Actor:   g.Agent,
		Signals: sig,
		Token:   token,
		Public:  o.Public && !loopback,
		Poll:    o.Interval,
		Logf: func(format string, args ...any) {
			logMu.Lock()
			defer logMu.Unlock()
			fmt.Fprintf(g.io.Err, format+"\n", args...)
		},
	}
	srv, err := web.New(opts, ln.Addr().String())
	if err != nil {
		return err
	}
	url := web.URL(ln.Addr().String())
	login := ""
	if srv.Actions() {
		login = url + "?token=" + token
	}
	if !loopback {
		// The address as asked for, with the port as bound (Go reports
		// 0.0.0.0 as [::], its dual-stack socket).
		where := ln.Addr().String()
		if host, _, _ := net.SplitHostPort(o.Addr); host != "" {
			_, port, _ := net.SplitHostPort(where)
			where = net.JoinHostPort(host, port)
		}
		fmt.Fprintf(g.io.Err, "orch: warning: orch serve listens on %s, beyond this machine: anyone who can reach it reads every task (the board is read-only)\n", where)
	}
	if g.JSON {
		if err := g.out().writeJSON(serveAnswer{url, login, g.Agent, srv.Actions(), srv.ReadOnly()}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.io.Out, "orch serve: the board at %s\n", url)
		if login != "" {
			fmt.Fprintf(g.io.Out, "to act as %s (approve, reject, requeue, decide), open %s\n", g.Agent, login)
		}
	}
	if !g.JSON {
		if why := srv.ReadOnly(); why != "" && !o.ReadOnly && loopback {
			fmt.Fprintf(g.io.Err, "orch serve: read-only: %s\n", why)
		}
		fmt.Fprintln(g.io.Err, "orch serve: Ctrl-C stops it")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go srv.Run(ctx)
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// Live-update streams never end by themselves: end them, then let
	// the requests under way finish.
	srv.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
