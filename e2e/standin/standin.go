package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// A Player is the scripted model: it is asked for one reply per main-loop
// request. It runs on the request's goroutine, so it must be safe to call
// from several at once (two agents can share one server).
type Player func(t *Turn) Reply

// A Turn is what the model was asked, reduced to what a script needs.
type Turn struct {
	API    string // "anthropic" (Claude Code) or "openai" (Codex)
	Model  string
	System string // the system prompt (Codex: its developer messages)
	// Prompt is the text of the first user message with the blocks the CLI
	// adds itself (<system-reminder>, <environment_context>, AGENTS.md, ...)
	// left out: orch's prompt to the agent.
	Prompt string
	// Step counts the assistant turns of this conversation before this
	// request: 0 for the first.
	Step int
	// Attempt counts the earlier requests of this session at this Step: a
	// CLI retrying an error asks again with the same Step.
	Attempt    int
	ToolResult string   // the output of the last tool call, "" before any
	Tools      []string // the names of the tools offered
	Session    string   // the CLI's session id, from its headers
}

// A Reply is one answer of the model. The zero Reply is an empty text answer.
type Reply struct {
	Text  string // a final answer (sent after the tool call when Shell is set)
	Shell string // a shell command, sent as the vendor's shell tool call
	Error *Error // an HTTP error instead of an answer
	Hang  bool   // never answer; wait for the client to go away
	// Delay is waited before anything is sent, the status line included.
	Delay time.Duration
	// Pace spreads a streamed answer over this long once its headers are
	// out, with keep-alive events, as a slow but healthy model does.
	Pace  time.Duration
	Usage Usage // reported in the answer; zero means 100 in, 20 out
}

// Usage is the token count reported with an answer.
type Usage struct{ InputTokens, OutputTokens int }

// An Error is an HTTP error answer. An empty Body is replaced by the
// vendor's own error JSON for Status (see vendorError).
type Error struct {
	Status  int
	Headers map[string]string
	Body    string
}

// A Request is one request the server received, for assertions.
type Request struct {
	Time   time.Time
	Method string
	Path   string // with the query
	Header http.Header
	Body   []byte
	// Kind is "main" (given to the Player), "side" (a CLI's own request,
	// answered benignly), or the endpoint's name ("count_tokens", "models",
	// "unknown").
	Kind   string
	Turn   *Turn // parsed model request (main and side), else nil
	Status int   // the status answered
}

// Server is a stand-in for the Anthropic and OpenAI APIs on 127.0.0.1.
type Server struct {
	play     Player
	srv      *http.Server
	url      string
	done     chan struct{}
	stopOnce sync.Once

	mu       sync.Mutex
	log      []Request
	attempts map[string]int
	ids      int
}

// Start listens on a free port of 127.0.0.1 and serves play.
func Start(play Player) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{play: play, url: "http://" + ln.Addr().String(), done: make(chan struct{}), attempts: map[string]int{}}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s, nil
}

// URL is the server's base URL, without /v1.
func (s *Server) URL() string { return s.url }

// Close ends every request (hanging ones included) and stops the server.
func (s *Server) Close() {
	s.stopOnce.Do(func() { close(s.done) })
	s.srv.Close()
}

// Requests returns a copy of the log of the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.log = append(s.log, r)
	s.mu.Unlock()
}

func (s *Server) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s_standin%06d", prefix, s.ids)
}

// attempt returns how many requests of the session came before at this step.
func (s *Server) attempt(t *Turn) int {
	key := fmt.Sprintf("%s\x00%s\x00%s\x00%d", t.API, t.Session, t.Prompt, t.Step)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.attempts[key]
	s.attempts[key] = n + 1
	return n
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	defer func() { rec.Status = sw.status; s.record(rec) }()
	path := strings.TrimSuffix(r.URL.Path, "/")
	anthropic := r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != ""
	switch {
	case r.Method == http.MethodPost && path == "/v1/messages":
		s.messages(sw, r, body, &rec)
	case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		rec.Kind = "count_tokens"
		writeJSON(sw, http.StatusOK, map[string]int{"input_tokens": len(body)/4 + 1})
	case r.Method == http.MethodPost && path == "/v1/responses":
		s.responses(sw, r, body, &rec)
	case path == "/api/hello": // Claude Code's connectivity check
		rec.Kind = "hello"
		writeRaw(sw, http.StatusOK, nil, "{}")
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/models"):
		rec.Kind = "models"
		if anthropic {
			writeJSON(sw, http.StatusOK, anthropicModels(strings.TrimPrefix(strings.TrimPrefix(path, "/v1/models"), "/")))
		} else {
			// Codex exec never asked; an empty list in both of
			// Codex's and OpenAI's forms.
			writeJSON(sw, http.StatusOK, map[string]any{"models": []any{}, "data": []any{}, "object": "list"})
		}
	default:
		rec.Kind = "unknown"
		if anthropic {
			writeRaw(sw, http.StatusNotFound, nil, anthropicError(http.StatusNotFound, "Not found: "+r.URL.Path))
		} else {
			writeRaw(sw, http.StatusNotFound, nil, openaiError("Not found: "+r.URL.Path))
		}
	}
}

// wait sleeps d; false means the client or the server went away meanwhile.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// begin does what every reply does before its body: the delay, the hang,
// the error. It reports whether a body should follow.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, rep Reply, t *Turn) bool {
	if !s.wait(r.Context(), rep.Delay) {
		return false
	}
	if rep.Hang {
		s.wait(r.Context(), 1<<62)
		return false
	}
	if e := rep.Error; e != nil {
		body := e.Body
		if body == "" {
			body = vendorError(t.API, e.Status, t.Model)
		}
		writeRaw(w, e.Status, e.Headers, body)
		return false
	}
	return true
}

func (u Usage) orDefault() Usage {
	if u == (Usage{}) {
		return Usage{InputTokens: 100, OutputTokens: 20}
	}
	return u
}

// stream writes server-sent events, flushing each.
type stream struct {
	w   http.ResponseWriter
	ctx context.Context
	s   *Server
}

func newStream(s *Server, w http.ResponseWriter, r *http.Request) *stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &stream{w: w, ctx: r.Context(), s: s}
}

func (st *stream) event(name string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", name, b)
	if f, ok := st.w.(http.Flusher); ok {
		f.Flush()
	}
}

// pace keeps the stream alive for d, sending keepAlive every second.
func (st *stream) pace(d time.Duration, keepAlive func()) bool {
	for end := time.Now().Add(d); time.Now().Before(end); {
		if !st.s.wait(st.ctx, min(time.Second, time.Until(end))) {
			return false
		}
		keepAlive()
	}
	return true
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	writeRaw(w, status, nil, string(b))
}

func writeRaw(w http.ResponseWriter, status int, headers map[string]string, body string) {
	w.Header().Set("Content-Type", "application/json")
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// text joins the text of a content value that is a string or an array of
// blocks with a "text" field, and of the "content" of nested blocks (tool
// results).
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	json.Unmarshal(raw, &blocks)
	var b bytes.Buffer
	for _, bl := range blocks {
		t := bl.Text
		if t == "" && len(bl.Content) > 0 {
			t = text(bl.Content)
		}
		if t != "" && b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t)
	}
	return b.String()
}

// harnessBlock reports whether a user text block is context the CLI added
// itself rather than the user's prompt: an XML-ish tagged block
// (<system-reminder>, <environment_context>, <user_instructions>, ...) or
// Codex's AGENTS.md preamble.
func harnessBlock(t string) bool {
	t = strings.TrimSpace(t)
	if strings.HasPrefix(t, "# AGENTS.md instructions") {
		return true
	}
	if !strings.HasPrefix(t, "<") || !strings.HasSuffix(t, ">") {
		return false
	}
	tag, _, ok := strings.Cut(t[1:], ">")
	tag, _, _ = strings.Cut(tag, " ")
	return ok && tag != "" && strings.HasSuffix(t, "</"+tag+">")
}
