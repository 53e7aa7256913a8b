package main

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// taskFieldNames are the keys of a task object, in order (the json tags
// of taskJSON; a test checks they agree).
var taskFieldNames = []string{
	"id", "title", "queue", "priority", "role", "branch", "base_branch", "pr_number", "rejection_count",
	"no_progress_count", "attempts", "claimed_by", "claimed_at", "heartbeat_at", "submitted_by", "submitted_at", "assigned_to",
	"locked_out", "worked_by", "github_reviews", "depends_on", "labels", "created", "rejected_at_commit",
	"fields", "path", "ready", "problem",
}

// fieldFields is the bit of the custom keys (fields) in a taskMask.
var fieldFields = taskMask(1) << slices.Index(taskFieldNames, "fields")

// taskMask says which fields of a task object an answer shows: bit i for
// taskFieldNames[i]; 0 shows them all.
type taskMask uint32

func (m taskMask) has(bit taskMask) bool { return m == 0 || m&bit != 0 }

// appendJSON writes the task as encoding/json writes taskJSON's fields
// (same keys, order and escaping, times as jsonTime writes them), without
// reflection: `orch list --json` at 10,000 tasks spent most of its time in
// encoding/json. Only the fields in j.mask are written. A test checks the
// two agree byte for byte.
func (j *taskJSON) appendJSON(b []byte) []byte {
	if j.mask != 0 {
		return j.appendFields(b)
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, j.ID)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, j.Title)
	b = append(b, `,"queue":`...)
	b = appendJSONString(b, j.Queue)
	b = append(b, `,"priority":`...)
	b = appendJSONString(b, j.Priority)
	b = append(b, `,"role":`...)
	b = appendJSONString(b, j.Role)
	b = append(b, `,"branch":`...)
	b = appendJSONString(b, j.Branch)
	b = append(b, `,"base_branch":`...)
	b = appendJSONString(b, j.BaseBranch)
	b = append(b, `,"pr_number":`...)
	b = strconv.AppendInt(b, int64(j.PRNumber), 10)
	b = append(b, `,"rejection_count":`...)
	b = strconv.AppendInt(b, int64(j.RejectionCount), 10)
	b = append(b, `,"no_progress_count":`...)
	b = strconv.AppendInt(b, int64(j.NoProgress), 10)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(j.Attempts), 10)
	b = append(b, `,"claimed_by":`...)
	b = appendJSONString(b, j.ClaimedBy)
	b = append(b, `,"claimed_at":`...)
	b = appendJSONTime(b, time.Time(j.ClaimedAt))
	b = append(b, `,"heartbeat_at":`...)
	b = appendJSONTime(b, time.Time(j.HeartbeatAt))
	b = append(b, `,"submitted_by":`...)
	b = appendJSONString(b, j.SubmittedBy)
	b = append(b, `,"submitted_at":`...)
	b = appendJSONTime(b, time.Time(j.SubmittedAt))
	b = append(b, `,"assigned_to":`...)
	b = appendJSONString(b, j.AssignedTo)
	b = append(b, `,"locked_out":`...)
	b = appendJSONList(b, j.LockedOut)
	b = append(b, `,"worked_by":`...)
	b = appendJSONList(b, j.WorkedBy)
	b = append(b, `,"github_reviews":`...)
	b = appendJSONList(b, j.GitHubReviews)
	b = append(b, `,"depends_on":`...)
	b = appendJSONList(b, j.DependsOn)
	b = append(b, `,"labels":`...)
	b = appendJSONList(b, j.Labels)
	b = append(b, `,"created":`...)
	b = appendJSONTime(b, time.Time(j.Created))
	b = append(b, `,"rejected_at_commit":`...)
	b = appendJSONString(b, j.RejectedAt)
	b = append(b, `,"fields":`...)
	b = appendJSONRaw(b, j.Fields)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, j.Path)
	b = append(b, `,"ready":`...)
	b = strconv.AppendBool(b, j.Ready)
	b = append(b, `,"problem":`...)
	b = appendJSONString(b, j.Problem)
	return append(b, '}')
}

// appendFields is appendJSON for a task cut to the fields of j.mask.
func (j *taskJSON) appendFields(b []byte) []byte {
	b = append(b, '{')
	first := true
	for i, name := range taskFieldNames {
		if j.mask&(1<<i) == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		switch name {
		case "id":
			b = appendJSONString(b, j.ID)
		case "title":
			b = appendJSONString(b, j.Title)
		case "queue":
			b = appendJSONString(b, j.Queue)
		case "priority":
			b = appendJSONString(b, j.Priority)
		case "role":
			b = appendJSONString(b, j.Role)
		case "branch":
			b = appendJSONString(b, j.Branch)
		case "base_branch":
			b = appendJSONString(b, j.BaseBranch)
		case "pr_number":
			b = strconv.AppendInt(b, int64(j.PRNumber), 10)
		case "rejection_count":
			b = strconv.AppendInt(b, int64(j.RejectionCount), 10)
		case "no_progress_count":
			b = strconv.AppendInt(b, int64(j.NoProgress), 10)
		case "attempts":
			b = strconv.AppendInt(b, int64(j.Attempts), 10)
		case "claimed_by":
			b = appendJSONString(b, j.ClaimedBy)
		case "claimed_at":
			b = appendJSONTime(b, time.Time(j.ClaimedAt))
		case "heartbeat_at":
			b = appendJSONTime(b, time.Time(j.HeartbeatAt))
		case "submitted_by":
			b = appendJSONString(b, j.SubmittedBy)
		case "submitted_at":
			b = appendJSONTime(b, time.Time(j.SubmittedAt))
		case "assigned_to":
			b = appendJSONString(b, j.AssignedTo)
		case "locked_out":
			b = appendJSONList(b, j.LockedOut)
		case "worked_by":
			b = appendJSONList(b, j.WorkedBy)
		case "github_reviews":
			b = appendJSONList(b, j.GitHubReviews)
		case "depends_on":
			b = appendJSONList(b, j.DependsOn)
		case "labels":
			b = appendJSONList(b, j.Labels)
		case "created":
			b = appendJSONTime(b, time.Time(j.Created))
		case "rejected_at_commit":
			b = appendJSONString(b, j.RejectedAt)
		case "fields":
			b = appendJSONRaw(b, j.Fields)
		case "path":
			b = appendJSONString(b, j.Path)
		case "ready":
			b = strconv.AppendBool(b, j.Ready)
		case "problem":
			b = appendJSONString(b, j.Problem)
		}
	}
	return append(b, '}')
}

// appendJSONRaw writes compact JSON made by encoding/json (null for nil).
func appendJSONRaw(b []byte, raw []byte) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// appendJSONList writes a list of strings (null for nil, as encoding/json).
func appendJSONList(b []byte, l []string) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s exactly as encoding/json does with HTML
// escaping on: <, > and & as \u003c..., U+2028/9 escaped, invalid UTF-8 as
// U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
