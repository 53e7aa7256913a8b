// Package web is orch's board in a browser (orch serve): the queues, each
// task with its feedback and history, the inbox and the stats with charts
// drawn as SVG on the server, kept live by Server-Sent Events when the state
// branch moves.
//
// The server is a door into the repository (docs/design.md §10). Task text comes
// from agents and from GitHub, so every byte of it is hostile in the
// browser: templates escape it, markdown is rendered without raw HTML and
// with safe link schemes only, and a Content-Security-Policy allows only the
// server's own script and style. A request whose Host is not the address
// served is refused (DNS rebinding). Actions (approve, reject, requeue,
// decide) need this server's token and a same-origin POST, and run through
// the same Engine, under the same authority rules, as the CLI verbs.
//
// Reads never block writers: a page opens the engine without reconciling
// the view and closes it at once (the lock is held only while the snapshot
// is loaded), then works on that snapshot, which stays valid in memory; the
// server opens it again only when the state branch has moved.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/orch-tool/orch/workflow"
)

// Options configure a Server.
type Options struct {
	// Read opens the engine a page reads: without reconciling the view and
	// without the identity rule (no Verb), so that a page never commits,
	// with the in-memory cache (a mapping per open would last as long as
	// the process).
	Read func() (*workflow.Engine, error)
	// Act opens the engine for an action, as the CLI opens it for verb;
	// nil makes the server read-only.
	Act func(verb string) (*workflow.Engine, error)
	// Explain turns an action's error into the message and hint the CLI
	// prints for it (nil: the error's text).
	Explain func(error) (msg, hint string)
	// Actor is who acts: the person who started the server, and Signals
	// what the actor is judged by (docs/design.md §5.1), as the CLI judges it. An
	// actor that is an agent (ORCH_AGENT set, or a name in the roster)
	// gets a read-only board: the buttons are a human's.
	Actor   string
	Signals workflow.ActorSignals
	// Token authorises actions; "" makes the server read-only.
	Token string
	// Public: the server listens beyond loopback. Requests may then name
	// the machine by any IP address or its host name, and actions are off
	// (the token would cross the network in clear text).
	Public bool
	// Poll is how often the state branch's ref is read for live updates
	// (default 250ms: a change shows within a second).
	Poll time.Duration
	// Now is the clock for ages (default time.Now).
	Now func() time.Time
	// Logf hears what the server did that a person may want to know (an
	// action's notes, a failed page); nil drops it.
	Logf func(format string, args ...any)
}

// Server serves the board of one repository.
type Server struct {
	opts    Options
	src     *source
	hub     *hub
	pages   *pages
	mux     *http.ServeMux
	csrf    string
	cookie  string
	allowed func(host string) bool
	quit    chan struct{}
	quitMu  sync.Once
	// readOnly says why the server takes no actions ("" when it does).
	readOnly string
}

// New prepares a server for the repository Read opens; addr is where it
// listens (host:port, the port as bound), which requests must name.
func New(opts Options, addr string) (*Server, error) {
	if opts.Poll <= 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &workflow.UsageError{Msg: fmt.Sprintf("%q is not a host:port address", addr), Hint: "orch serve --addr 127.0.0.1:7420"}
	}
	s := &Server{opts: opts, quit: make(chan struct{})}
	s.src = &source{open: opts.Read}
	cfg, err := s.src.check()
	if err != nil {
		return nil, err
	}
	switch {
	case opts.Public:
		s.readOnly = "the server listens beyond this machine (--public)"
	case opts.Act == nil || opts.Token == "":
		s.readOnly = "started read-only"
	case opts.Signals.EnvAgent != "":
		s.readOnly = "ORCH_AGENT is set: " + opts.Actor + " is an agent, and the board's actions are a human's"
	case workflow.KindOf(cfg, opts.Actor, opts.Signals) != workflow.KindHuman:
		s.readOnly = opts.Actor + " is an agent (config.yaml), and the board's actions are a human's"
	}
	if s.readOnly != "" {
		s.opts.Token = ""
	}
	s.hub = newHub(s.src.readTip)
	s.allowed = hostAllowed(addr, opts.Public)
	// One cookie per port: cookies are kept per host, not per port, and two
	// servers on one machine must not take each other's token.
	s.cookie = "orch_serve_" + port
	if opts.Token != "" {
		m := hmac.New(sha256.New, []byte(opts.Token))
		m.Write([]byte("orch serve form"))
		s.csrf = hex.EncodeToString(m.Sum(nil))
	}
	s.pages = newPages()
	s.routes()
	return s, nil
}

// Handler is the whole server: every request passes the Host check and
// gets the security headers first.
func (s *Server) Handler() http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "orch serve: refused a cross-origin request", http.StatusForbidden)
	}))
	inner := cop.Handler(s.mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !s.allowed(r.Host) {
			// A page of another site that resolves its own name to this
			// machine (DNS rebinding) reaches the server with its name in
			// Host: it must get nothing.
			http.Error(w, "orch serve: this server answers only to the address it listens on", http.StatusMisdirectedRequest)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// Run polls the state branch for live updates until ctx ends.
func (s *Server) Run(ctx context.Context) {
	s.hub.run(ctx, s.opts.Poll)
}

// Close ends the live-update streams, so that http.Server.Shutdown does
// not wait for them.
func (s *Server) Close() { s.quitMu.Do(func() { close(s.quit) }) }

// Actions reports whether the server takes actions at all.
func (s *Server) Actions() bool { return s.readOnly == "" }

// ReadOnly says why the server takes no actions ("" when it takes them).
func (s *Server) ReadOnly() string { return s.readOnly }

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.page(s.board))
	m.HandleFunc("GET /task/{id}", s.page(s.task))
	m.HandleFunc("GET /task/{id}/diff", s.page(s.diff))
	m.HandleFunc("GET /logs/{id}", s.page(s.logs))
	m.HandleFunc("GET /inbox", s.page(s.inbox))
	m.HandleFunc("GET /stats", s.page(s.stats))
	m.HandleFunc("GET /events", s.events)
	m.HandleFunc("GET /assets/{name}", s.asset)
	m.HandleFunc("POST /task/{id}/{verb}", s.action)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "There is no such page.", "")
	})
	s.mux = m
}

// hostAllowed says which Host headers name this server. On loopback: the
// address served and localhost, with its port. With --public also any IP
// address and the machine's names with the port: a rebinding attack needs a
// name it controls, and a bare IP address or this machine's own name is not
// one.
func hostAllowed(addr string, public bool) func(string) bool {
	bound, port, _ := net.SplitHostPort(addr)
	names := map[string]bool{"localhost": true, strings.ToLower(bound): true}
	if public {
		if hn, err := osHostname(); err == nil && hn != "" {
			names[strings.ToLower(hn)] = true
			if short, _, ok := strings.Cut(hn, "."); ok {
				names[strings.ToLower(short)] = true
			}
		}
	}
	return func(host string) bool {
		h, p, err := net.SplitHostPort(host)
		if err != nil {
			h, p = host, "80" // no port: the default one
		}
		if p != port {
			return false
		}
		h = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
		if names[h] {
			return true
		}
		ip := net.ParseIP(h)
		if ip == nil {
			return false
		}
		if public {
			return true
		}
		// 127.0.0.1 when bound to 127.0.0.1, ::1 when bound to ::1.
		b := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(bound, "["), "]"))
		return b != nil && ip.Equal(b)
	}
}

// authorized reports whether the request carries this server's token.
func (s *Server) authorized(r *http.Request) bool {
	if !s.Actions() {
		return false
	}
	c, err := r.Cookie(s.cookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.opts.Token)) == 1
}

// login takes the token from a link that orch serve printed: it becomes a
// cookie only this site's requests carry (SameSite=Strict, HttpOnly), and
// the address bar loses it.
func (s *Server) login(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	tok, ok := q["token"]
	if !ok {
		return false
	}
	if s.Actions() && len(tok) == 1 && subtle.ConstantTimeCompare([]byte(tok[0]), []byte(s.opts.Token)) == 1 {
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	q.Del("token")
	u := *r.URL
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
	return true
}

// errStale says a page's task is no longer where the link pointed.
var errStale = errors.New("stale")

func itoa(n int) string { return strconv.Itoa(n) }
