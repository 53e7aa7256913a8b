package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// diffLimit is how much of a diff a page renders: a branch that rewrote a
// generated file would make a page nobody reads, and every live update
// would send it again. What is cut is said, with the command that prints
// it all.
const diffLimit = 512 << 10

// diffView is a task branch's diff as a page shows it: what was compared,
// and the files git diff printed, parsed.
type diffView struct {
	From, To string // the revisions compared, as git names them
	What     string // in words: "since its base", "as it landed"
	Files    []diffFile
	Added    int
	Removed  int
	Cut      bool   // the diff was longer than diffLimit
	Command  string // the command that prints it whole
	Missing  string // why there is no diff ("" when there is one)
}

// diffFile is one file of a diff: its names (git's, quoted as git quotes
// them when they hold unusual bytes), what happened to it, its hunks.
type diffFile struct {
	Old, New string
	Status   string // added, deleted, renamed, modified, binary
	Header   []string
	Hunks    []diffHunk
	Added    int
	Removed  int
}

// Name is the file's name on the page: the new one, or the old one of a
// deleted file.
func (f *diffFile) Name() string {
	if f.New != "" && f.New != "/dev/null" {
		return f.New
	}
	return f.Old
}

type diffHunk struct {
	Head  string // the @@ line
	Lines []diffLine
}

// diffLine is one line of a hunk: Kind is "add", "del", "ctx" or "note"
// (git's "\ No newline at end of file"); Old and New are its line numbers
// (0: none).
type diffLine struct {
	Kind     string
	Old, New int
	Text     string
}

// parseDiff reads git diff's output (--no-color, the default unified
// format). The lines of a hunk are counted from its @@ header, so that a
// content line that looks like a header ("--- a/x" removed, "diff --git"
// in a file's text) is read as content. Every text is made Visible: what
// an agent wrote may hold control characters, and the page must show
// them rather than pass them on.
func parseDiff(out string) []diffFile {
	var files []diffFile
	var f *diffFile
	var h *diffHunk
	oldLeft, newLeft, oldNo, newNo := 0, 0, 0, 0
	for _, line := range strings.SplitAfter(out, "\n") {
		line = strings.TrimSuffix(line, "\n")
		if line == "" && (oldLeft > 0 || newLeft > 0) {
			// git prints an empty context line as " "; a bare empty line
			// is one an editor trimmed: context still.
			line = " "
		}
		if h != nil && (oldLeft > 0 || newLeft > 0) {
			dl := diffLine{Text: text.Visible(line[1:])}
			switch line[0] {
			case '+':
				dl.Kind, dl.New = "add", newNo
				newNo++
				newLeft--
				f.Added++
			case '-':
				dl.Kind, dl.Old = "del", oldNo
				oldNo++
				oldLeft--
				f.Removed++
			case '\\':
				dl.Kind, dl.Text = "note", text.Visible(line)
			default:
				dl.Kind, dl.Old, dl.New = "ctx", oldNo, newNo
				oldNo++
				newNo++
				oldLeft--
				newLeft--
			}
			h.Lines = append(h.Lines, dl)
			continue
		}
		switch {
		case strings.HasPrefix(line, "diff --git "):
			files = append(files, diffFile{Status: "modified"})
			f, h = &files[len(files)-1], nil
			f.Old, f.New = splitGitNames(strings.TrimPrefix(line, "diff --git "))
		case f == nil:
			// Before the first file: nothing git prints.
		case strings.HasPrefix(line, "@@ "):
			var ok bool
			oldNo, oldLeft, newNo, newLeft, ok = parseHunkHead(line)
			if !ok {
				f.Header = append(f.Header, text.Visible(line))
				continue
			}
			f.Hunks = append(f.Hunks, diffHunk{Head: text.Visible(line)})
			h = &f.Hunks[len(f.Hunks)-1]
		case line == `\ No newline at end of file` && h != nil:
			h.Lines = append(h.Lines, diffLine{Kind: "note", Text: line})
		case strings.HasPrefix(line, "--- "):
			f.Old = text.Visible(stripSide(strings.TrimPrefix(line, "--- "), "a/"))
		case strings.HasPrefix(line, "+++ "):
			f.New = text.Visible(stripSide(strings.TrimPrefix(line, "+++ "), "b/"))
		case strings.HasPrefix(line, "new file mode"):
			f.Status = "added"
			f.Header = append(f.Header, text.Visible(line))
		case strings.HasPrefix(line, "deleted file mode"):
			f.Status = "deleted"
			f.Header = append(f.Header, text.Visible(line))
		case strings.HasPrefix(line, "rename from "):
			f.Status, f.Old = "renamed", text.Visible(strings.TrimPrefix(line, "rename from "))
		case strings.HasPrefix(line, "rename to "):
			f.Status, f.New = "renamed", text.Visible(strings.TrimPrefix(line, "rename to "))
		case strings.HasPrefix(line, "Binary files "):
			f.Status = "binary"
			f.Header = append(f.Header, text.Visible(line))
		case strings.HasPrefix(line, "index "):
		default:
			if line != "" {
				f.Header = append(f.Header, text.Visible(line))
			}
		}
	}
	return files
}

// splitGitNames reads "a/X b/Y" of a diff --git line where the two names
// are the same (the common case; a rename says its names on lines of
// their own, and --- and +++ follow for any change of content).
func splitGitNames(s string) (string, string) {
	if n := len(s); n%2 == 1 {
		a, b := s[:n/2], s[n/2+1:]
		if strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") && a[2:] == b[2:] {
			return text.Visible(a[2:]), text.Visible(b[2:])
		}
	}
	return text.Visible(s), text.Visible(s)
}

// stripSide drops git's a/ or b/ from a --- or +++ name, quoted or not.
func stripSide(s, side string) string {
	if s == "/dev/null" {
		return s
	}
	if strings.HasPrefix(s, `"`+side) {
		return `"` + s[len(side)+1:]
	}
	return strings.TrimPrefix(strings.TrimSuffix(s, "\t"), side)
}

// parseHunkHead reads "@@ -a,b +c,d @@": where the hunk starts on each
// side and how many lines it has there (a count left out is 1).
func parseHunkHead(line string) (oldStart, oldN, newStart, newN int, ok bool) {
	rest := strings.TrimPrefix(line, "@@ ")
	end := strings.Index(rest, " @@")
	if end < 0 {
		return 0, 0, 0, 0, false
	}
	parts := strings.Fields(rest[:end])
	if len(parts) != 2 || !strings.HasPrefix(parts[0], "-") || !strings.HasPrefix(parts[1], "+") {
		return 0, 0, 0, 0, false
	}
	side := func(s string) (int, int, bool) {
		a, b, has := strings.Cut(s, ",")
		start, err := strconv.Atoi(a)
		if err != nil || start < 0 {
			return 0, 0, false
		}
		n := 1
		if has {
			if n, err = strconv.Atoi(b); err != nil || n < 0 {
				return 0, 0, false
			}
		}
		return start, n, true
	}
	os0, on, ok1 := side(parts[0][1:])
	ns, nn, ok2 := side(parts[1][1:])
	return os0, on, ns, nn, ok1 && ok2
}

// taskDiff is the diff a task's page shows: for a task that landed, the
// commit that holds it against the base before it (landed_commit^1..
// landed_commit); else its branch against its base since their merge
// base, as orch diff prints it.
func taskDiff(e *workflow.Engine, t *taskfile.Task) *diffView {
	d := &diffView{}
	var out string
	switch {
	case t.LandedCommit != "" && isHex(t.LandedCommit):
		d.From, d.To, d.What = t.LandedCommit+"^1", t.LandedCommit, "as it landed"
		d.Command = "git diff " + d.From + " " + d.To
		var err error
		if out, err = e.Store.Repo.Diff(d.From, d.To, false, false); err != nil {
			d.Missing = "git diff " + d.From + " " + d.To + " failed: " + text.Visible(err.Error())
			return d
		}
	case t.Branch == "":
		d.Missing = "no branch yet: the first claim creates it"
		return d
	default:
		r, err := e.Diff(t.ID, false, false)
		if err != nil {
			d.Missing = text.Visible(err.Error())
			return d
		}
		d.From, d.To, d.What = r.From, r.To, "since its base"
		d.Command = "orch diff " + t.ID
		out = r.Diff
	}
	if len(out) > diffLimit {
		// Cut at a line: a hunk cut short is shown as far as it goes.
		out = out[:strings.LastIndexByte(out[:diffLimit], '\n')+1]
		d.Cut = true
	}
	d.Files = parseDiff(out)
	for _, f := range d.Files {
		d.Added += f.Added
		d.Removed += f.Removed
	}
	return d
}

type diffPage struct {
	ID, Title, Queue string
	Diff             *diffView
}

// diff is a task's diff on a page of its own (/task/ID/diff).
func (s *Server) diff(r *http.Request, e *workflow.Engine, memo map[string]any, f *frame) (view, error) {
	sm, _, err := e.LookupArchived(r.PathValue("id"))
	if err != nil {
		return view{}, err
	}
	t := &sm.Task
	f.Title = t.ID + " diff"
	return view{name: "diff", data: &diffPage{ID: t.ID, Title: t.Title, Queue: string(t.Queue), Diff: taskDiff(e, t)}}, nil
}
