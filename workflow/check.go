package workflow

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

// Problem is one thing `orch check` reports.
type Problem struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
	Kind string `json:"kind"` // invalid | uncommitted | conflict | config | dependency | recovered | view | ignored | held
	Msg  string `json:"message"`
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Msg)
}

// Check validates every task, the config, the view and the dependencies.
func (e *Engine) Check() []Problem {
	var out []Problem
	view := func(p string) string { return filepath.Join(gitstore.ViewDirName, p) }
	if e.ConfigErr != nil {
		pe := asParseError(e.ConfigErr, view(gitstore.ConfigFile))
		out = append(out, Problem{Path: pe.Path, Line: pe.Line, Kind: "config", Msg: pe.Msg})
	}
	if err := e.Store.ViewErr; err != nil {
		out = append(out, Problem{Path: gitstore.ViewDirName, Kind: "view", Msg: err.Error()})
	}
	for _, f := range e.Store.IgnoredViewFiles() {
		out = append(out, Problem{Path: f.Path, Kind: "ignored", Msg: f.Why})
	}
	for p, err := range e.Store.Held() {
		out = append(out, Problem{Path: view(p), Kind: "held", Msg: err.Error()})
	}
	broken, conflicts := e.Store.ViewProblems()
	for p, err := range broken {
		var ps taskfile.Problems
		if errors.As(err, &ps) {
			for _, pe := range ps {
				out = append(out, Problem{Path: view(p), Line: pe.Line, Kind: "uncommitted", Msg: pe.Msg + " (not committed; the state branch keeps the last good version)"})
			}
			continue
		}
		pe := asParseError(err, view(p))
		out = append(out, Problem{Path: view(p), Line: pe.Line, Kind: "uncommitted", Msg: pe.Msg + " (not committed; the state branch keeps the last good version)"})
	}
	for p, cs := range conflicts {
		id := strings.TrimSuffix(path.Base(p), ".md")
		if s := e.Store.Summary(p); s != nil && s.Task.ID != "" {
			id = s.Task.ID
		}
		out = append(out, Problem{Path: view(p), Kind: "conflict", Msg: conflictText(id, cs)})
	}
	ids := map[string]string{}
	for _, s := range e.Store.Summaries() {
		if s.Problem != "" {
			out = append(out, Problem{Path: view(s.Path), Line: s.ProblemLine, Kind: "invalid", Msg: s.Problem})
			continue
		}
		if other, dup := ids[s.Task.ID]; dup {
			out = append(out, Problem{Path: view(s.Path), Line: 0, Kind: "invalid", Msg: fmt.Sprintf("id %s is also used by %s", s.Task.ID, view(other))})
		}
		ids[s.Task.ID] = s.Path
	}
	for _, s := range e.Store.Summaries() {
		for _, d := range s.Task.DependsOn {
			if e.Store.SummaryByID(d) == nil && !e.archived(d) {
				out = append(out, Problem{Path: view(s.Path), Kind: "dependency", Msg: fmt.Sprintf("depends_on: %s is not a task", d)})
			}
		}
	}
	out = append(out, e.dependencyCycles()...)
	for _, r := range e.Store.Recovered() {
		out = append(out, Problem{Path: r, Kind: "recovered", Msg: "a save that raced orch, kept here: copy what you need into the task file, then delete this file"})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Line < out[j].Line
	})
	return out
}

// checkDependencies refuses a hand edit whose depends_on closes a cycle
// with the tasks on the branch (docs/design.md §1.3: kept out, reported like a file
// that does not parse).
func (e *Engine) checkDependencies(f *taskfile.File) error {
	if cycle := e.cycleThrough(f.Task.ID, f.Task.DependsOn); cycle != nil {
		return &taskfile.ParseError{Path: f.Path, Line: f.Line(taskfile.KeyDependsOn),
			Msg: "depends_on: forms a cycle: " + strings.Join(cycle, " -> ") + " (not committed: a task in a cycle never becomes ready)"}
	}
	return nil
}

// cycleThrough returns a dependency cycle that id's depends_on (deps)
// would close, or nil: a path from one of deps back to id.
func (e *Engine) cycleThrough(id string, deps []string) []string {
	if id == "" {
		return nil
	}
	seen := map[string]bool{}
	var walk func(at string, path []string) []string
	walk = func(at string, path []string) []string {
		if at == id {
			return append(path, at)
		}
		if seen[at] {
			return nil
		}
		seen[at] = true
		s := e.Store.SummaryByID(at)
		if s == nil {
			return nil
		}
		for _, d := range s.Task.DependsOn {
			if c := walk(d, append(path, at)); c != nil {
				return c
			}
		}
		return nil
	}
	for _, d := range deps {
		if c := walk(d, []string{id}); c != nil {
			return c
		}
	}
	return nil
}

func (e *Engine) dependencyCycles() []Problem {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var out []Problem
	var visit func(id string, stack []string)
	visit = func(id string, stack []string) {
		color[id] = grey
		s := e.Store.SummaryByID(id)
		if s != nil {
			for _, d := range s.Task.DependsOn {
				switch color[d] {
				case grey:
					cycle := append(append([]string{}, stack...), id, d)
					out = append(out, Problem{Path: filepath.Join(gitstore.ViewDirName, s.Path), Kind: "dependency", Msg: "depends_on forms a cycle: " + strings.Join(cycle[indexOf(cycle, d):], " -> ")})
				case white:
					visit(d, append(stack, id))
				}
			}
		}
		color[id] = black
	}
	for _, s := range e.Store.Summaries() {
		if s.Task.ID != "" && color[s.Task.ID] == white {
			visit(s.Task.ID, nil)
		}
	}
	return out
}

func indexOf(l []string, s string) int {
	for i, x := range l {
		if x == s {
			return i
		}
	}
	return 0
}
