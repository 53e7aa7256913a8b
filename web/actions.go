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
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// actionVerbs are the verbs the board offers, each the CLI verb of the same
// name: approve [-m NOTES], reject -m TEXT, requeue [--to AGENT] and decide
// (DECISION | --auto) [-m TEXT].
var actionVerbs = []string{"approve", "reject", "requeue", "decide"}

// maxText bounds the text an action takes (a rejection, notes, a reason),
// as the browser sends it.
const maxText = 256 << 10

// maxForm bounds what the server reads of an action's form. It is well
// over maxText, even with every byte of the text percent-encoded, so that
// a text refused as too large is still read, and shown back.
const maxForm = 4 << 20

// action runs a verb on a task for the person who started the server.
//
// What guards it: the Host check (every request), Go's cross-origin
// protection (Sec-Fetch-Site, else Origin against Host: a page of another
// site cannot post here), the token cookie (SameSite=Strict, set only from
// the link orch serve printed) and the form's token derived from it. Then
// the verb runs exactly as the CLI runs it: the engine is opened for the
// verb (the lock, the reconcile, the identity rule), the Engine's method
// applies the transition table and the authority rules (docs/design.md §5) to the
// server's actor, and the outcome is a commit like any other.
//
// What a person typed exists nowhere else: whatever refuses the action,
// the answer shows the text back in full (see typed).
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	verb, id := r.PathValue("verb"), r.PathValue("id")
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.fail(w, r, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("The form is larger than %d MiB, more than the board reads: it cannot show it back, and nothing changed.", maxForm>>20),
				fmt.Sprintf("copy your text from where you wrote it; the board takes up to %d KiB of text", maxText>>10))
			return
		}
		s.fail(w, r, http.StatusBadRequest, "The form could not be read.", "")
		return
	}
	form := r.PostForm
	kept := typedOf(verb, form)
	refuse := func(status int, msg, hint string) { s.failTyped(w, r, status, msg, hint, kept) }
	if !slices.Contains(actionVerbs, verb) {
		refuse(http.StatusNotFound, "There is no such action.", "")
		return
	}
	if !s.Actions() {
		refuse(http.StatusForbidden, "This server is read-only.", "orch serve takes actions only on a loopback address, without --read-only")
		return
	}
	if !s.authorized(r) || subtle.ConstantTimeCompare([]byte(form.Get("csrf")), []byte(s.csrf)) != 1 {
		refuse(http.StatusForbidden, "This browser may not act on this server.", "open the address orch serve printed (it carries the server's token), then try again")
		return
	}
	raw := form.Get("text")
	text := strings.TrimSpace(strings.ReplaceAll(raw, "\r\n", "\n"))
	var res *workflow.Result
	var status int
	var msg, hint string
	if len(raw) > maxText {
		status = http.StatusRequestEntityTooLarge
		msg = fmt.Sprintf("The text is %d KiB: the board takes at most %d KiB. Nothing changed.", (len(raw)+1023)>>10, maxText>>10)
		hint = "shorten it, then send it again"
	} else if err := s.act(verb, func(e *workflow.Engine) error {
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
	}); err != nil {
		msg, hint = s.explain(err)
		status = statusOf(err)
	}
	if status != 0 {
		// The task's page again, with the message and hint the CLI would
		// print, and what was typed shown back and kept on disk (only past
		// the guards: a request without the token writes no file).
		if kept != nil {
			kept.Saved = s.keep(id, verb, raw)
		}
		s.serveTask(w, r, id, verb, status, form, kept, msg, hint)
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

// statusOf is the HTTP status of an action's error: the CLI's exit codes
// (2 usage, 3 not found, 4 refused by a rule, 5 conflict), as near as HTTP
// says them.
func statusOf(err error) int {
	var usage *workflow.UsageError
	var nf *workflow.NotFoundError
	var rule *workflow.RuleError
	switch {
	case errors.As(err, &usage):
		return http.StatusBadRequest
	case errors.As(err, &nf):
		return http.StatusNotFound
	case errors.As(err, &rule) && rule.Rule == "authority":
		return http.StatusForbidden
	case errors.Is(err, taskfile.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusConflict
}

// typed is what a person typed into a form whose action failed. It exists
// nowhere else, so the answer shows it back in full, whatever queue the
// task is now in: in the form's own box when the task's page still has the
// form of Verb, else in a panel of its own (layout.html), next to the
// reason. Past the guards a copy is kept on disk too, where the CLI keeps
// a failed command's stdin.
type typed struct {
	Verb     string // "" when the verb is not one of the board's
	Decision string // decide's choice, when it is one orch knows
	Fields   []typedField
	InForm   bool   // the page's form of Verb holds the fields
	Saved    string // the copy on disk, "" when none
}

// typedField is one field a person typed into, as the browser sent it.
type typedField struct {
	Label, Value string
}

// Rows is the height of the field's box: its lines, within reason.
func (f typedField) Rows() int {
	return min(max(strings.Count(f.Value, "\n")+1, 2), 20)
}

// typedLabels name the text box of each verb's form (task.html).
var typedLabels = map[string]string{"approve": "Approval notes", "reject": "What must change", "decide": "Reason"}

// typedOf is what was typed into the form of verb; nil when nothing was.
func typedOf(verb string, form url.Values) *typed {
	t := &typed{}
	if slices.Contains(actionVerbs, verb) {
		t.Verb = verb
	}
	if d := form.Get("decision"); verb == "decide" && (d == "auto" || slices.Contains(workflow.Decisions, d)) {
		t.Decision = d
	}
	label := typedLabels[verb]
	if label == "" {
		label = "Text"
	}
	for _, f := range []typedField{{label, form.Get("text")}, {"Requeue for", form.Get("to")}} {
		if strings.TrimSpace(f.Value) != "" {
			t.Fields = append(t.Fields, f)
		}
	}
	if len(t.Fields) == 0 {
		return nil
	}
	return t
}

// keep saves the text typed for verb on id in the repository's private
// state (gitstore.KeepText) and says so in the server's log. It returns
// the path, "" when there was no text or it could not be written.
func (s *Server) keep(id, verb, text string) string {
	if strings.TrimSpace(text) == "" {
		return ""
	}
	id = fileSafe(id)
	p := gitstore.KeepText(s.src.priv, id+"-"+verb+".txt", []byte(text))
	if p != "" {
		s.opts.Logf("orch serve: %s %s failed; the text typed is saved in %s", verb, id, p)
	}
	return p
}

// fileSafe is s with only the characters of a task ID, for a file name
// (the ID comes from the request's path).
func fileSafe(s string) string {
	s = strings.Map(func(c rune) rune {
		if c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return c
		}
		return -1
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "task"
	}
	return s
}

// serveTask renders a task's page after a failed action: msg and hint say
// why, and what was typed is shown back.
func (s *Server) serveTask(w http.ResponseWriter, r *http.Request, id, verb string, status int, form url.Values, kept *typed, msg, hint string) {
	s.serve(w, r, func(r *http.Request, e *workflow.Engine, memo map[string]any, f *frame) (view, error) {
		r.SetPathValue("id", id)
		v, err := s.taskView(r, e, memo, f)
		if p, ok := v.data.(*taskPage); ok && err == nil && f.CanAct && p.Can[verb] {
			// The form is on the page: what was typed goes back in its box.
			form.Set("verb", verb)
			p.Form = form
			if kept != nil {
				kept.InForm = true
			}
		}
		if v.status == 0 || v.status == http.StatusOK {
			v.status = status
		}
		return v, err
	}, func(f *frame) { f.Error, f.Hint, f.Typed = msg, hint, kept })
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
	if ferr == nil {
		// The housekeeping a CLI transition does after it (cmd/orch
		// runner.go archiveDue); a failure is only logged.
		if _, err := e.ArchiveDue(workflow.ArchiveBatch); err != nil {
			s.opts.Logf("orch serve: moving finished tasks to the archive failed (the next change tries again): %v", err)
		}
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
