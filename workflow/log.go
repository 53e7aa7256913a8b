package workflow

import (
	"slices"
	"strings"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/taskfile"
)

// LogEntry is one commit of the state branch, read from its trailers.
type LogEntry struct {
	Commit  string    `json:"commit"`
	Time    time.Time `json:"time"`
	Task    string    `json:"task,omitempty"`
	Action  string    `json:"action,omitempty"`
	From    string    `json:"from,omitempty"`
	To      string    `json:"to,omitempty"`
	Actor   string    `json:"actor,omitempty"`
	Subject string    `json:"subject"`
	// LockedOut is the author a rejection locked out of the task, and
	// Unlocked the agent an unlock let back in (Reviewer Lockout
	// Protocol, "Lockout Logs": who, not only that it happened).
	LockedOut string `json:"locked_out,omitempty"`
	Unlocked  string `json:"unlocked,omitempty"`
}

// Log reads the history of the state branch (of one task when id is set),
// newest first, at most limit entries (0: all).
func (e *Engine) Log(id string, limit int) ([]LogEntry, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	var out []LogEntry
	err := e.Store.Walk(func(c *gitrepo.CommitInfo) bool {
		tr := gitstore.ParseTrailers(c.Message)
		if id != "" && tr.Get(gitstore.TrailerTask) != id && !slices.Contains(strings.Fields(tr.Get(gitstore.TrailerCreated)), id) &&
			!slices.Contains(strings.Fields(tr.Get(gitstore.TrailerArchived)), id) && !slices.Contains(strings.Fields(tr.Get(gitstore.TrailerTasks)), id) {
			return true
		}
		le := logEntry(c, tr)
		if id != "" && le.Task == "" {
			le.Task = id // a commit of several tasks (Orch-Tasks, Orch-Created, Orch-Archived)
		}
		out = append(out, le)
		return limit <= 0 || len(out) < limit
	})
	return out, err
}

// logEntry is what orch log says of a commit, from its trailers tr.
func logEntry(c *gitrepo.CommitInfo, tr gitstore.Trailers) LogEntry {
	return LogEntry{
		Commit: c.Hash.String(), Time: c.Author.When.UTC(), Task: tr.Get(gitstore.TrailerTask), Action: tr.Get(gitstore.TrailerAction),
		From: tr.Get(gitstore.TrailerFrom), To: tr.Get(gitstore.TrailerTo), Actor: tr.Get(gitstore.TrailerActor), Subject: c.Subject(),
		LockedOut: lockedOutBy(c.Message, tr), Unlocked: tr.Get(gitstore.TrailerUnlocked),
	}
}

// lockedOutSentence is how a rejection's commit body has always said whom
// it locked out: a paragraph of its own.
var lockedOutSentence = lazyregexp.New(`^(.+) is locked out of this task\.$`)

// lockedOutBy names whom a rejection commit locked out: its Orch-Locked-Out
// trailer, or, in commits made before the trailer existed, the body's
// sentence. Only rejections are read, and only whole paragraphs after the
// first: the first ("Rejection #n by lead: ...") carries the reviewer's
// words, which could say anything.
func lockedOutBy(msg string, tr gitstore.Trailers) string {
	if who := tr.Get(gitstore.TrailerLockedOut); who != "" {
		return who
	}
	if action := Action(tr.Get(gitstore.TrailerAction)); tr.Get(gitstore.TrailerRound) == "" || (action != ActionReject && action != ActionReview) {
		return ""
	}
	paras := strings.Split(strings.ReplaceAll(msg, "\r\n", "\n"), "\n\n")
	// paras[0] is the subject, paras[1] the rejection's summary.
	for i := 2; i < len(paras); i++ {
		if m := lockedOutSentence().FindStringSubmatch(paras[i]); m != nil && taskfile.ValidPersonName(m[1]) {
			return m[1]
		}
	}
	return ""
}
