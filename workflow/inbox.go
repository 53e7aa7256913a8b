package workflow

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/refusal"
	"github.com/orch-tool/orch/taskfile"
)

// InboxItem is one thing waiting for a human.
type InboxItem struct {
	Task    string    `json:"task"`
	Title   string    `json:"title"`
	Queue   string    `json:"queue"`
	Reason  string    `json:"reason"`
	Message string    `json:"message,omitempty"` // path of the message file
	Created time.Time `json:"created,omitzero"`
	Summary string    `json:"summary"`
	// Refusal is the whole refusal of a "refused" item, so that the
	// decision can be taken from the inbox.
	Refusal *PendingRefusal `json:"refusal,omitempty"`
}

// slotItem is the inbox item of a slot of orch run that stopped (from the
// last week): not a task's, the lead's setup to fix.
func slotItem(snap *gitstore.Snapshot, fe gitstore.FileEntry, cutoff time.Time) (InboxItem, bool) {
	data, err := snap.ReadBlob(fe.Blob)
	if err != nil {
		return InboxItem{}, false
	}
	f, err := taskfile.Parse("message.md", data)
	if err != nil {
		return InboxItem{}, false
	}
	item := InboxItem{Reason: "slot", Message: filepath.ToSlash(filepath.Join(gitstore.ViewDirName, fe.Path))}
	if n := f.Node("created"); n != nil {
		item.Created, _ = taskfile.ParseTime(n.Value)
	}
	if item.Created.Before(cutoff) {
		return InboxItem{}, false
	}
	slot := ""
	if n := f.Node("slot"); n != nil {
		slot = n.Value
	}
	for _, sec := range f.Sections() {
		if sec.Title == "Why" {
			item.Summary = "slot " + slot + " stopped: " + strings.TrimSpace(f.SectionText(sec))
		}
	}
	item.Title = "orch run's slot " + slot
	return item, true
}

// Inbox lists open escalations (escalated tasks with their latest message)
// and refusals awaiting a decision.
func (e *Engine) Inbox() ([]InboxItem, error) {
	if err := e.RequireInit(); err != nil {
		return nil, err
	}
	snap := e.Store.Snapshot()
	latest := map[string]gitstore.FileEntry{}
	for _, fe := range snap.Files(gitstore.MessagesDir) {
		base := strings.TrimSuffix(filepath.Base(fe.Path), ".md")
		if i := strings.Index(base, "Z-"); i >= 0 {
			id := base[i+2:]
			if cur, ok := latest[id]; !ok || fe.Path > cur.Path {
				latest[id] = fe
			}
		}
	}
	var out []InboxItem
	refused := map[string]bool{}
	// Refused attempts at what is not the actor's to do, from the last
	// week: the lead sees what the agents tried.
	cutoff := e.Now().Add(-authorityWindow)
	for _, fe := range snap.Files(gitstore.MessagesDir) {
		if strings.Contains(filepath.Base(fe.Path), "Z-slot") {
			if item, ok := slotItem(snap, fe, cutoff); ok {
				out = append(out, item)
			}
			continue
		}
		if !strings.Contains(filepath.Base(fe.Path), "Z-authority") {
			continue
		}
		data, err := snap.ReadBlob(fe.Blob)
		if err != nil {
			continue
		}
		f, err := taskfile.Parse("message.md", data)
		if err != nil {
			continue
		}
		item := InboxItem{Reason: "authority", Message: filepath.ToSlash(filepath.Join(gitstore.ViewDirName, fe.Path))}
		if n := f.Node("created"); n != nil {
			item.Created, _ = taskfile.ParseTime(n.Value)
		}
		if item.Created.Before(cutoff) {
			continue
		}
		if n := f.Node("task"); n != nil {
			item.Task = n.Value
		}
		if s := e.Store.SummaryByID(item.Task); s != nil {
			item.Title, item.Queue = s.Task.Title, string(s.Task.Queue)
		}
		by, verb := "", ""
		if n := f.Node("by"); n != nil {
			by = n.Value
		}
		if n := f.Node("verb"); n != nil {
			verb = n.Value
		}
		why := ""
		for _, sec := range f.Sections() {
			if sec.Title == "Why" {
				why = strings.TrimSpace(f.SectionText(sec))
			}
		}
		item.Summary = fmt.Sprintf("%s tried orch %s: %s", by, verb, why)
		if n := f.Node("allowed"); n != nil && n.Value == "true" {
			// Evidence of an act orch allowed (recordEvidence), not a
			// verb refused.
			item.Summary = why
		}
		out = append(out, item)
	}
	for _, s := range e.Store.Summaries() {
		switch s.Task.Queue {
		case taskfile.Escalated:
			item := InboxItem{Task: s.Task.ID, Title: s.Task.Title, Queue: string(s.Task.Queue), Reason: "escalated", Summary: "escalated"}
			if fe, ok := latest[s.Task.ID]; ok {
				item.Message = filepath.ToSlash(filepath.Join(gitstore.ViewDirName, fe.Path))
				if data, err := snap.ReadBlob(fe.Blob); err == nil {
					item.Reason, item.Summary, item.Created = parseMessage(data)
				}
			}
			out = append(out, item)
		case taskfile.Blocked:
			if e.refusalDecided(s) {
				continue
			}
			refused[s.Task.ID] = true
			out = append(out, InboxItem{Task: s.Task.ID, Title: s.Task.Title, Queue: string(s.Task.Queue), Reason: "refused", Summary: "refused by the agent; decide with orch decide " + s.Task.ID})
		}
	}
	if len(refused) > 0 {
		recs, err := e.latestRefusals(refused)
		if err != nil {
			return nil, err
		}
		for i := range out {
			if rec := recs[out[i].Task]; out[i].Reason == "refused" && rec != nil {
				r := rec.Record
				out[i].Refusal = pendingRefusal(out[i].Task, rec)
				out[i].Created, _ = taskfile.ParseTime(rec.Time)
				out[i].Summary = fmt.Sprintf("%s by %s: %s (default decision: %s)", r.ReasonType, rec.Agent, text.OneLine(r.ReasonSummary), refusal.DefaultDecision(r.ReasonType))
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Reason == "authority") != (out[j].Reason == "authority") {
			return out[j].Reason == "authority" // what waits for a decision first
		}
		if out[i].Task != out[j].Task {
			return out[i].Task < out[j].Task
		}
		return out[i].Created.Before(out[j].Created)
	})
	return out, nil
}

// refusalDecided reports whether the newest note at the top of a blocked
// task is a decision (accept) rather than the refusal itself.
func (e *Engine) refusalDecided(s *gitstore.Summary) bool {
	t, err := e.Load(s)
	if err != nil {
		return false
	}
	for _, sec := range t.File.Sections() {
		if sec.Level != 2 {
			continue // a heading inside someone's text is not orch's section
		}
		switch {
		case strings.HasPrefix(sec.Title, "Decision ("):
			return true
		case strings.HasPrefix(sec.Title, "Refusal ("):
			return false
		}
	}
	return false
}

func parseMessage(data []byte) (reason, summary string, created time.Time) {
	f, err := taskfile.Parse("message.md", data)
	if err != nil {
		return "escalated", "", time.Time{}
	}
	if n := f.Node("reason"); n != nil {
		reason = n.Value
	}
	if n := f.Node("created"); n != nil {
		created, _ = taskfile.ParseTime(n.Value)
	}
	for _, s := range f.Sections() {
		if s.Title == "Why" {
			summary = strings.TrimSpace(f.SectionText(s))
			break
		}
	}
	return reason, summary, created
}

// EscalationOf is why the task escalated last, as its newest message for
// orch inbox says (nil when it has none): for orch run, which sees an
// escalation an agent's own verb made only in the state it left.
func (e *Engine) EscalationOf(id string) *Escalation {
	snap := e.Store.Snapshot()
	var newest gitstore.FileEntry
	found := false
	for _, fe := range snap.Files(gitstore.MessagesDir) {
		if strings.HasSuffix(filepath.Base(fe.Path), "Z-"+id+".md") && (!found || fe.Path > newest.Path) {
			newest, found = fe, true
		}
	}
	if !found {
		return nil
	}
	data, err := snap.ReadBlob(newest.Blob)
	if err != nil {
		return nil
	}
	reason, why, _ := parseMessage(data)
	why, _, _ = strings.Cut(why, "\n\n") // the reason; then the counts
	return &Escalation{Rule: reason, Why: strings.TrimSpace(why)}
}
