package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/workflow"
)

// actionVerbs are the verbs the board offers, each the CLI verb of the same
// name: approve [-m NOTES], reject -m TEXT, requeue [--to AGENT] and decide
// (DECISION | --auto) [-m TEXT].
var actionVerbs = []string{"approve", "reject", "requeue", "decide"}

// maxForm bounds an action's form: a rejection is text a person typed.
const maxForm = 256 << 10

// action runs a verb on a task for the person who started the server.
//
// What guards it: the Host check (every request), Go's cross-origin
// protection (Sec-Fetch-Site, else Origin against Host: a page of another
// site cannot post here), the token cookie (SameSite=Strict, set only from
// the link orch serve printed) and the form's token derived from it. Then
// the verb runs exactly as the CLI runs it: the engine is opened for the
// verb (the lock, the reconcile, the identity rule), the Engine's method
// applies the transition table and the authority rules (DESIGN §4a) to the
// server's actor, and the outcome is a commit like any other.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	verb := r.PathValue("verb")
	if !slices.Contains(actionVerbs, verb) {
		s.fail(w, r, http.StatusNotFound, "There is no such action.", "")
		return
	}
	if !s.Actions() {
		s.fail(w, r, http.StatusForbidden, "This server is read-only.", "orch serve takes actions only on a loopback address, without --read-only")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.", "")
		return
	}
	if !s.authorized(r) || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		s.fail(w, r, http.StatusForbidden, "This browser may not act on this server.", "open the address orch serve printed (it carries the server's token), then try again")
		return
	}
	id := r.PathValue("id")
	form := r.PostForm
	text := strings.TrimSpace(strings.ReplaceAll(form.Get("text"), "\r\n", "\n"))
	var res *workflow.Result
	err := s.act(verb, func(e *workflow.Engine) error {
		// The board acts for a human only (the roster may have changed
		// since the server started); the verb then applies its own rules.
		if !e.IsHuman() {
			return &workflow.RuleError{Rule: "authority",
				Msg:  fmt.Sprintf("%s is an agent: the board's actions are a human's", e.Actor),
				Hint: "this is for a human: ask one with orch escalate " + id + " -m \"what you need and why\" (it lands in orch inbox)"}
		}
		sm, err := e.Lookup(id)
		if err != nil {
			return err
		}
		id = sm.Task.ID
		switch verb {
		case "approve":
			res, err = e.Approve(id, text)
		case "reject":
			if text == "" {
				return &workflow.UsageError{Msg: "a rejection needs its text: what must change", Hint: "write it in the box"}
			}
			res, err = e.Reject(id, text)
		case "requeue":
			res, err = e.Requeue(id, strings.TrimSpace(form.Get("to")))
		case "decide":
			decision := form.Get("decision")
			auto := decision == "auto"
			if auto {
				decision = ""
			}
			var d *workflow.DecideResult
			d, err = e.Decide(id, decision, text, auto)
			if d != nil {
				res = &d.Result
			}
		}
		return err
	})
	if err != nil {
		// The page again, with the message and hint the CLI would print,
		// and what was typed still in its box.
		msg, hint := s.explain(err)
		form.Set("verb", verb)
		status := http.StatusConflict
		var usage *workflow.UsageError
		var nf *workflow.NotFoundError
		var rule *workflow.RuleError
		switch {
		case errors.As(err, &usage):
			status = http.StatusBadRequest
		case errors.As(err, &nf):
			status = http.StatusNotFound
		case errors.As(err, &rule) && rule.Rule == "authority":
			status = http.StatusForbidden
		}
		s.serveTask(w, r, id, status, form, func(f *frame) { f.Error, f.Hint = msg, hint })
		return
	}
	// Post/Redirect/Get: a reload does not act twice.
	q := url.Values{"did": {verb}}
	if res != nil && !res.Commit.IsZero() {
		q.Set("commit", res.Commit.String()[:7])
		q.Set("from", string(res.From))
		q.Set("to", string(res.To))
	}
	http.Redirect(w, r, "/task/"+url.PathEscape(id)+"?"+q.Encode(), http.StatusSeeOther)
}

// serveTask renders a task's page after a failed action.
func (s *Server) serveTask(w http.ResponseWriter, r *http.Request, id string, status int, form url.Values, prep func(f *frame)) {
	s.serve(w, r, func(r *http.Request, e *workflow.Engine, memo map[string]any, f *frame) (view, error) {
		r.SetPathValue("id", id)
		v, err := s.taskView(r, e, f, form)
		if v.status == 0 || v.status == http.StatusOK {
			v.status = status
		}
		return v, err
	}, prep)
}

// act opens the engine for verb and runs fn, as the CLI runs a verb
// (cmd/orch withEngineDeferred): on the branch while the view is scanned,
// again when the reconcile found a hand edit first.
func (s *Server) act(verb string, fn func(e *workflow.Engine) error) error {
	e, err := s.opts.Act(verb)
	if err != nil {
		return err
	}
	ferr := e.ForActor(fn(e))
	serr := e.Settle()
	if errors.Is(ferr, gitstore.ErrViewChanged) || errors.Is(serr, gitstore.ErrViewChanged) {
		e.ViewChanged()
		ferr = e.ForActor(fn(e))
	} else if ferr == nil {
		ferr = serr
	}
	cerr := e.Close()
	for _, n := range e.AllNotes() {
		s.opts.Logf("orch serve: %s", n)
	}
	if ferr != nil {
		return ferr
	}
	return cerr
}
