package config

// Reviewer scope (Reviewer Lockout Protocol, "Reviewer Authority"): a lead
// reviews all code, a tester only test-related changes. review.reviewers
// may scope an entry to task roles and labels; an agent reviewing a task
// outside its scope is refused like any other want of authority (workflow's
// checkReviewerScope, in authority.go). This file reads the entries and
// says what each covers.
//
// The scope is judged by the task (its role and labels, which the person
// who wrote the task chose), not by the reviewer's own account of why it
// rejects: orch can no more check a stated ground than the feedback text,
// and a rejection that needed an extra flag would surprise every script
// that rejects today. So "a tester may only reject on test grounds" reads
// here as "a tester reviews the tasks that are about tests", and the event
// of each scoped review records the ground that let the reviewer act.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/orch-tool/orch/taskfile"
)

// Reviewer is one entry of review.reviewers: a plain name reviews every
// task; {name, roles, labels} reviews only tasks of one of those roles or
// carrying one of those labels.
type Reviewer struct {
	Name   string   `json:"name"`
	Roles  []string `json:"roles,omitempty"`
	Labels []string `json:"labels,omitempty"`

	line int // of the entry in config.yaml, for messages
}

// Reviewers is review.reviewers.
type Reviewers []Reviewer

// Scoped reports whether the entry reviews only some tasks.
func (r *Reviewer) Scoped() bool { return len(r.Roles)+len(r.Labels) > 0 }

// Find returns name's entry (nil when name is not listed).
func (rs Reviewers) Find(name string) *Reviewer {
	for i := range rs {
		if rs[i].Name == name {
			return &rs[i]
		}
	}
	return nil
}

// Names lists the reviewers' names, in config order.
func (rs Reviewers) Names() []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

// Covers reports whether a task of the given role (the task's, else
// default_role) and labels is in the reviewer's scope, and on what ground:
// "role tester", "label tests", or both joined by ", " ("" for an unscoped
// reviewer, who needs none).
func (r *Reviewer) Covers(role string, labels []string) (ground string, ok bool) {
	if !r.Scoped() {
		return "", true
	}
	var grounds []string
	if slices.Contains(r.Roles, role) {
		grounds = append(grounds, "role "+role)
	}
	for _, l := range r.Labels {
		if slices.Contains(labels, l) {
			grounds = append(grounds, "label "+l)
		}
	}
	return strings.Join(grounds, ", "), len(grounds) > 0
}

// ScopeText says what the reviewer reviews, for messages and instructions:
// "every task", or "tasks of role tester, or labelled tests or qa".
func (r *Reviewer) ScopeText() string {
	if !r.Scoped() {
		return "every task"
	}
	var parts []string
	if len(r.Roles) > 0 {
		parts = append(parts, "of role "+strings.Join(r.Roles, " or "))
	}
	if len(r.Labels) > 0 {
		parts = append(parts, "labelled "+strings.Join(r.Labels, " or "))
	}
	return "tasks " + strings.Join(parts, ", or ")
}

// MarshalJSON writes a plain entry as its name and a scoped one as an
// object, as config.yaml has them: a plain list keeps its JSON shape.
func (r Reviewer) MarshalJSON() ([]byte, error) {
	if !r.Scoped() {
		return json.Marshal(r.Name)
	}
	type entry Reviewer
	return json.Marshal(entry(r))
}

const reviewerEntryForm = "an entry is a name, or {name: NAME, roles: [ROLE, ...], labels: [LABEL, ...]}"

// UnmarshalYAML reads the list. Each problem names its line: an entry is
// checked here, where its node is, and duplicates by check.
func (rs *Reviewers) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: reviewers: a list, like [lead], or one entry per line: - {name: qa, labels: [tests]}", n.Line)
	}
	out := make(Reviewers, 0, len(n.Content))
	for _, item := range n.Content {
		var r Reviewer
		if err := r.UnmarshalYAML(item); err != nil {
			return err
		}
		out = append(out, r)
	}
	*rs = out
	return nil
}

// UnmarshalYAML reads one entry. Unknown keys are errors, as everywhere
// in config.yaml (the decoder's own check does not reach inside a custom
// unmarshaller).
func (r *Reviewer) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	*r = Reviewer{line: n.Line}
	switch n.Kind {
	case yaml.ScalarNode:
		return r.setName(n)
	case yaml.MappingNode:
	default:
		return fmt.Errorf("line %d: reviewers: %s", n.Line, reviewerEntryForm)
	}
	seen := map[string]bool{}
	var nameNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			return fmt.Errorf("line %d: reviewers: %s is given twice in one entry", k.Line, k.Value)
		}
		seen[k.Value] = true
		var err error
		switch k.Value {
		case "name":
			nameNode = v
			err = r.setName(v)
		case "roles":
			r.Roles, err = scopeList("role", v)
		case "labels":
			r.Labels, err = scopeList("label", v)
		default:
			err = fmt.Errorf("line %d: reviewers: unknown key %q: %s", k.Line, k.Value, reviewerEntryForm)
		}
		if err != nil {
			return err
		}
	}
	if nameNode == nil {
		return fmt.Errorf("line %d: reviewers: the entry has no name: %s", n.Line, reviewerEntryForm)
	}
	// An entry that scopes nothing is most likely unfinished; reading it
	// as "every task" would grant the most authority by mistake.
	if !r.Scoped() {
		return fmt.Errorf("line %d: reviewers: %s's entry names no role and no label; list the plain name for a reviewer of every task", n.Line, r.Name)
	}
	return nil
}

func (r *Reviewer) setName(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" || !taskfile.ValidPersonName(n.Value) {
		return fmt.Errorf("line %d: reviewers: %q is not a valid name", n.Line, n.Value)
	}
	r.Name = n.Value
	return nil
}

// scopeList reads roles: or labels: of an entry: names as tasks have them.
func scopeList(what string, n *yaml.Node) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: reviewers: %ss is a list, like [%s]", n.Line, what, map[string]string{"role": "tester", "label": "tests"}[what])
	}
	var out []string
	for _, item := range n.Content {
		if item.Kind != yaml.ScalarNode || item.ShortTag() == "!!null" || !taskfile.ValidName(item.Value) {
			return nil, fmt.Errorf("line %d: reviewers: %q is not a valid %s name", item.Line, item.Value, what)
		}
		if slices.Contains(out, item.Value) {
			return nil, fmt.Errorf("line %d: reviewers: %s %s is listed twice", item.Line, what, item.Value)
		}
		out = append(out, item.Value)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("line %d: reviewers: %ss is empty; leave it out instead", n.Line, what)
	}
	return out, nil
}

// check finds what no single entry shows: a reviewer listed twice (which
// entry would count?).
func (rs Reviewers) check(path string) error {
	first := map[string]int{}
	for _, r := range rs {
		if l, ok := first[r.Name]; ok {
			return &taskfile.ParseError{Path: path, Line: r.line, Msg: fmt.Sprintf("reviewers: %s is listed twice (first on line %d): give each reviewer one entry", r.Name, l)}
		}
		first[r.Name] = r.line
	}
	return nil
}
