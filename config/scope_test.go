package config

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/orch-tool/orch/taskfile"
)

func TestParseReviewers(t *testing.T) {
	cfg, err := Parse("config.yaml", []byte(`base_branch: main
review:
  reviewers:
    - lead
    - name: qa
      labels: [tests, qa]
    - {name: fe-lead, roles: [frontend]}
    - {name: both, roles: [tester], labels: [tests]}
`))
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.Review.Reviewers
	if got := rs.Names(); !slices.Equal(got, []string{"lead", "qa", "fe-lead", "both"}) {
		t.Fatalf("names %v", got)
	}
	if rs.Find("lead").Scoped() || !rs.Find("qa").Scoped() || rs.Find("nobody") != nil {
		t.Errorf("scoping wrong: %+v", rs)
	}
	for _, c := range []struct{ name, text string }{
		{"lead", "every task"},
		{"qa", "tasks labelled tests or qa"},
		{"fe-lead", "tasks of role frontend"},
		{"both", "tasks of role tester, or labelled tests"},
	} {
		if got := rs.Find(c.name).ScopeText(); got != c.text {
			t.Errorf("%s: ScopeText %q, want %q", c.name, got, c.text)
		}
	}
	if !cfg.IsReviewer("qa") || cfg.IsReviewer("agent-a") {
		t.Error("IsReviewer")
	}

	// The plain list still reads as before.
	cfg, err = Parse("config.yaml", []byte("review:\n  reviewers: [lead, qa]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Review.Reviewers.Names(); !slices.Equal(got, []string{"lead", "qa"}) || cfg.Review.Reviewers.Find("qa").Scoped() {
		t.Errorf("plain list: %+v", cfg.Review.Reviewers)
	}
	cfg, err = Parse("config.yaml", []byte("review:\n  reviewers: []\n"))
	if err != nil || len(cfg.Review.Reviewers) != 0 || !cfg.IsReviewer("anyone") {
		t.Errorf("empty list: %+v, %v", cfg.Review.Reviewers, err)
	}
}

func TestParseReviewerProblems(t *testing.T) {
	for _, c := range []struct {
		yaml string
		line int
		msg  string
	}{
		{"review:\n  reviewers: lead\n", 2, "reviewers: a list"},
		{"review:\n  reviewers:\n    - name: qa\n      label: [tests]\n", 4, `reviewers: unknown key "label"`},
		{"review:\n  reviewers:\n    - name: qa\n", 3, "qa's entry names no role and no label"},
		{"review:\n  reviewers:\n    - labels: [tests]\n", 3, "the entry has no name"},
		{"review:\n  reviewers:\n    - lead\n    - {name: qa, labels: [tests]}\n    - lead\n", 5, "reviewers: lead is listed twice (first on line 3)"},
		{"review:\n  reviewers:\n    - {name: qa, labels: [tests]}\n    - {name: qa, roles: [tester]}\n", 4, "qa is listed twice"},
		{"review:\n  reviewers:\n    - name: qa\n      labels:\n        - tests\n        - ../x\n", 6, `"../x" is not a valid label name`},
		{"review:\n  reviewers:\n    - {name: qa, roles: [-x]}\n", 3, `"-x" is not a valid role name`},
		{"review:\n  reviewers:\n    - {name: qa, roles: [tester, tester]}\n", 3, "role tester is listed twice"},
		{"review:\n  reviewers:\n    - {name: qa, roles: tester}\n", 3, "roles is a list, like [tester]"},
		{"review:\n  reviewers:\n    - {name: qa, labels: []}\n", 3, "labels is empty"},
		{"review:\n  reviewers:\n    - {name: qa, name: qb, labels: [x]}\n", 3, "name is given twice in one entry"},
		{"review:\n  reviewers:\n    - [qa]\n", 3, "an entry is a name, or {name: NAME"},
		{"review:\n  reviewers:\n    - ~\n", 3, `"~" is not a valid name`},
		{"review:\n  reviewers:\n    - \"a<b>\"\n", 3, `"a<b>" is not a valid name`},
	} {
		_, err := Parse("config.yaml", []byte(c.yaml))
		var pe *taskfile.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: got %v, want a ParseError", c.yaml, err)
			continue
		}
		if pe.Path != "config.yaml" || pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%q: got %s:%d: %s; want line %d and %q", c.yaml, pe.Path, pe.Line, pe.Msg, c.line, c.msg)
		}
	}
}

func TestReviewerCovers(t *testing.T) {
	qa := Reviewer{Name: "qa", Roles: []string{"tester"}, Labels: []string{"tests", "qa"}}
	for _, c := range []struct {
		role   string
		labels []string
		ground string
		ok     bool
	}{
		{"implementer", nil, "", false},
		{"implementer", []string{"ui"}, "", false},
		{"implementer", []string{"ui", "tests"}, "label tests", true},
		{"tester", nil, "role tester", true},
		{"tester", []string{"qa", "tests"}, "role tester, label tests, label qa", true},
		{"Tester", []string{"Tests"}, "", false}, // names are exact, as roles are for claims
	} {
		ground, ok := qa.Covers(c.role, c.labels)
		if ground != c.ground || ok != c.ok {
			t.Errorf("Covers(%s, %v) = %q, %v; want %q, %v", c.role, c.labels, ground, ok, c.ground, c.ok)
		}
	}
	lead := Reviewer{Name: "lead"}
	if ground, ok := lead.Covers("anything", nil); ground != "" || !ok {
		t.Errorf("an unscoped reviewer covers every task without a ground: %q, %v", ground, ok)
	}
}

// TestReviewersJSONShape: a plain list marshals as it did when it was a
// list of names; a scoped entry as the object config.yaml has.
func TestReviewersJSONShape(t *testing.T) {
	cfg, err := Parse("config.yaml", []byte("review:\n  reviewers:\n    - lead\n    - {name: qa, labels: [tests]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg.Review.Reviewers)
	if err != nil {
		t.Fatal(err)
	}
	if want := `["lead",{"name":"qa","labels":["tests"]}]`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
