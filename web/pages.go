package web

import (
	"bytes"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orch-tool/orch/workflow"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages are the parsed templates: each page is the layout, the parts pages
// share (parts.html) and its own file, which defines "content".
type pages struct {
	t map[string]*template.Template
}

var pageNames = []string{"board", "task", "diff", "logs", "inbox", "stats", "error"}

func newPages() *pages {
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range pageNames {
		p.t[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html", "templates/"+name+".html"))
	}
	return p
}

var funcs = template.FuncMap{
	"short":    func(s string) string { return shortHash(s) },
	"queue":    func(q string) string { return strings.ReplaceAll(q, "_", " ") },
	"markdown": markdown,
	"join":     func(l []string, sep string) string { return strings.Join(l, sep) },
	"pct":      func(f float64) string { return itoa(int(f*100+0.5)) + "%" },
	"fixed2":   func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
	"when":     func(t time.Time) string { return when(t) },
	"lower":    strings.ToLower,
}

func shortHash(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// frame is what every page shows around its content.
type frame struct {
	Title  string
	Nav    string
	Repo   string
	Branch string
	Tip    string
	Actor  string
	// Actions: the server takes actions; CanAct: this browser may (it holds
	// the token) and the actor is a human, so the buttons are shown.
	Actions bool
	CanAct  bool
	Human   bool
	// ReadOnly says why the server takes no actions.
	ReadOnly string
	CSRF     string
	Flash    string
	Error    string
	Hint     string
	// Refresh makes the page reload itself every Refresh seconds (0:
	// never): a log being written grows without moving the state branch.
	Refresh int
	// Typed is what a person typed into a form whose action failed, shown
	// back beside Error (nil when nothing was typed).
	Typed *typed
}

// pageData is what a template gets: the frame and the page's own data.
type pageData struct {
	*frame
	P any
}

// view is a page ready to render.
type view struct {
	name   string
	status int
	data   any
}

type pageFunc func(r *http.Request, e *workflow.Engine, memo map[string]any, f *frame) (view, error)

// page serves a page built by fn on the state branch as it is now.
// A request with the header X-Orch-Fragment gets only the part that live
// updates replace (see assets/live.js).
func (s *Server) page(fn pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.login(w, r) {
			return
		}
		s.serve(w, r, fn, nil)
	}
}

// serve builds and renders a page; prep, when set, fills the frame first
// (an action's outcome).
func (s *Server) serve(w http.ResponseWriter, r *http.Request, fn pageFunc, prep func(f *frame)) {
	f := s.newFrame(r)
	if prep != nil {
		prep(f)
	}
	var v view
	err := s.src.with(func(e *workflow.Engine, memo map[string]any) error {
		f.Tip = e.Store.Snapshot().Tip.String()
		f.Branch = strings.TrimPrefix(e.Store.Ref, "refs/heads/")
		if e.Store.Repo.MainWorkTree != "" {
			f.Repo = filepath.Base(e.Store.Repo.MainWorkTree)
		} else {
			f.Repo = filepath.Base(e.Store.Repo.CommonDir)
		}
		f.Human = workflow.KindOf(e.Config, s.opts.Actor, s.opts.Signals) == workflow.KindHuman
		f.CanAct = f.CanAct && f.Human
		var err error
		v, err = fn(r, e, memo, f)
		return err
	})
	if err != nil {
		var nf *workflow.NotFoundError
		switch {
		case errors.As(err, &nf):
			s.failTyped(w, r, http.StatusNotFound, nf.Error(), "it may have been archived; orch log shows its history", f.Typed)
		default:
			s.opts.Logf("orch serve: %s: %v", r.URL.Path, err)
			msg, hint := s.explain(err)
			s.failTyped(w, r, http.StatusInternalServerError, msg, hint, f.Typed)
		}
		return
	}
	if v.status == 0 {
		v.status = http.StatusOK
	}
	s.render(w, r, v.name, v.status, pageData{f, v.data})
}

func (s *Server) newFrame(r *http.Request) *frame {
	// Human as the actor was judged at the start; a page reads the roster
	// again (serve), an error page may not get so far.
	f := &frame{Actor: s.opts.Actor, Actions: s.Actions(), Human: s.Actions(), ReadOnly: s.readOnly}
	if s.authorized(r) {
		f.CanAct, f.CSRF = true, s.csrf
	}
	return f
}

func (s *Server) explain(err error) (string, string) {
	if s.opts.Explain != nil {
		return s.opts.Explain(err)
	}
	return err.Error(), ""
}

// render executes a template into a buffer (a failure is a clean 500, not
// half a page) and writes it.
func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, status int, d pageData) {
	t := s.pages.t[name]
	which := "layout"
	if r.Header.Get("X-Orch-Fragment") != "" {
		which = "page"
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, which, d); err != nil {
		s.opts.Logf("orch serve: rendering %s: %v", name, err)
		http.Error(w, "orch serve: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "X-Orch-Fragment")
	if d.Tip != "" {
		h.Set("X-Orch-Tip", d.Tip)
	}
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// fail shows an error page.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg, hint string) {
	s.failTyped(w, r, status, msg, hint, nil)
}

// failTyped shows an error page, and what was typed into the form whose
// action failed.
func (s *Server) failTyped(w http.ResponseWriter, r *http.Request, status int, msg, hint string, kept *typed) {
	f := s.newFrame(r)
	f.Title, f.Error, f.Hint, f.Typed = http.StatusText(status), msg, hint, kept
	s.render(w, r, "error", status, pageData{f, nil})
}

//go:embed assets
var assetFS embed.FS

// asset serves the style sheet and the script. They are part of the
// binary, so a version-free name with a short cache is enough.
func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	data, err := fs.ReadFile(assetFS, "assets/"+name)
	if err != nil || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.Header().Set("Cache-Control", "max-age=60")
	_, _ = w.Write(data)
}

// age is how long ago t was, in a card's few characters.
func age(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "now"
	case d < time.Hour:
		return itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return itoa(int(d.Hours())) + "h"
	case d < 60*24*time.Hour:
		return itoa(int(d.Hours()/24)) + "d"
	}
	return itoa(int(d.Hours()/24/30)) + "mo"
}
