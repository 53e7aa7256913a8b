package taskfile

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		src  string
		want []string
	}{
		{"design example", designExample, nil},
		{"title from the body", "---\nid: T-abcd12\nqueue: incoming\n---\n# From the body\n", nil},
		{"aliases accepted", "---\nid: T-abcd12\ntitle: x\nqueue: done\npriority: critical\n---\n", nil},
		{"no frontmatter", "# Just text\n", []string{
			"t.md:1: no frontmatter: a task file starts with a --- block holding at least id, title and queue"}},
		{"empty frontmatter", "\n---\n---\n", []string{
			"t.md:2: id: missing",
			"t.md:2: title: missing (set title: or start the body with a # heading)",
			"t.md:2: queue: missing"}},
		{"empty values", "---\nid:\ntitle: ''\nqueue: ~\n---\n", []string{
			"t.md:2: id: missing",
			"t.md:3: title: missing (set title: or start the body with a # heading)",
			"t.md:4: queue: missing"}},
		{"bad values", lines("---",
			"id: 12",
			"title: '  '",
			"queue: waiting",
			"priority: urgent",
			"role: -x",
			"claimed_by: a/b",
			"assigned_to: ' x'",
			"submitted_by: ok",
			"locked_out: [good, 'bad name ', ../x]",
			"labels: [ok, 'a..b']",
			"depends_on: [T-abcd12, nope]",
			"branch: feature..x",
			"base_branch: -main",
			"---"), []string{
			`t.md:2: id: "12" is not a task ID (like T-4k9x2m)`,
			"t.md:3: title: missing (set title: or start the body with a # heading)",
			`t.md:4: queue: "waiting" is not a queue (one of incoming, claimed, provisional, approved, rejected, needs_continuation, blocked, escalated, done, failed, superseded)`,
			`t.md:5: priority: "urgent" is not a priority (P0..P3 or critical, high, medium, low)`,
			`t.md:10: locked_out: "bad name " is not a valid name`,
			`t.md:10: locked_out: "../x" is not a valid name`,
			`t.md:11: labels: "a..b" is not a valid name`,
			`t.md:12: depends_on: "nope" is not a task ID`,
			`t.md:6: role: "-x" is not a valid name`,
			`t.md:7: claimed_by: "a/b" is not a valid name`,
			`t.md:8: assigned_to: " x" is not a valid name`,
			`t.md:13: branch: "feature..x" is not a valid branch name`,
			`t.md:14: base_branch: "-main" is not a valid branch name`,
		}},
		{"lines after a line separator", "---\nnote: 'a\u2028b'\nid: T-abcd12\ntitle: x\nqueue: nope\n---\n", []string{
			`t.md:5: queue: "nope" is not a queue (one of incoming, claimed, provisional, approved, rejected, needs_continuation, blocked, escalated, done, failed, superseded)`}},
	} {
		f, err := Parse("t.md", []byte(c.src))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var got []string
		for _, e := range f.Validate() {
			got = append(got, e.Error())
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Validate =\n  %s\nwant\n  %s", c.name, strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
		}
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"T-4k9x2m": true, "T-abcd": true, "BUG-0123456789abcdef": true, "t-abcd12": true,
		"T-abc": false, "T-ABCD12": false, "4-abcd12": false, "T_abcd12": false, "T-abcd12 ": false,
		"": false, "T-": false, "T-abcd/12": false, "T-0123456789abcdefg": false,
	} {
		if got := ValidID(id); got != want {
			t.Errorf("ValidID(%q) = %v", id, got)
		}
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"agent-a": true, "alice": true, "Bob Smith": true, "ci@host": true, "a.b": true, "日本": true, "x+y": true, "_x": true,
		"": false, "-a": false, ".a": false, "a/b": false, "a..b": false, "a ": false, " a": false, "a\tb": false,
		"a\nb": false, strings.Repeat("a", 65): false, strings.Repeat("a", 64): true,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v", name, got)
		}
	}
}

func TestValidBranch(t *testing.T) {
	for name, want := range map[string]bool{
		"main": true, "task/T-4k9x2m-snap": true, "feature/a.b": true, "x@y": true,
		"": false, "-x": false, "/x": false, "x/": false, "x.": false, "x.lock": false, "a/b.lock/c": false,
		"a..b": false, "a//b": false, "a@{1}": false, "@": false, "HEAD": false, "refs/heads/x": false,
		"a b": false, "a~1": false, "a^": false, "a:b": false, "a?": false, "a*": false, "a[b": false, "a\\b": false,
		"a\x7fb": false, "a/.b": false, strings.Repeat("a", 201): false,
	} {
		if got := ValidBranch(name); got != want {
			t.Errorf("ValidBranch(%q) = %v", name, got)
		}
	}
}

func TestPriorities(t *testing.T) {
	for in, want := range map[string]string{
		"P0": "P0", "p0": "P0", "critical": "P0", "CRITICAL": "P0", "0": "P0",
		"P1": "P1", "high": "P1", " high ": "P1",
		"P2": "P2", "medium": "P2", "": "P2",
		"P3": "P3", "low": "P3",
		"P4": "", "urgent": "",
	} {
		got, ok := NormalizePriority(in)
		if got != want || ok != (want != "") {
			t.Errorf("NormalizePriority(%q) = %q, %v", in, got, ok)
		}
	}
	for in, want := range map[string]int{"P0": 0, "critical": 0, "high": 1, "P2": 2, "": 2, "low": 3, "bogus": 2} {
		if got := PriorityRank(in); got != want {
			t.Errorf("PriorityRank(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestQueue(t *testing.T) {
	for _, q := range Queues {
		if !q.Valid() {
			t.Errorf("%q not valid", q)
		}
	}
	if Queue("waiting").Valid() || Queue("").Valid() {
		t.Error("unknown queue is valid")
	}
	for q, open := range map[Queue]bool{Incoming: true, Claimed: true, Rejected: true, Blocked: true, Escalated: true, Done: false, Failed: false, Superseded: false} {
		if q.Open() != open {
			t.Errorf("%q.Open() = %v", q, !open)
		}
	}
}

func TestSlug(t *testing.T) {
	for title, want := range map[string]string{
		"Snap fork start like the other shapes":               "snap-fork-start-like-the-other-shapes",
		"Fix #42: crash in  login()":                          "fix-42-crash-in-login",
		"  Leading and trailing!  ":                           "leading-and-trailing",
		"CamelCase and snake_case":                            "camelcase-and-snake-case",
		"a very long title that goes on and on and on and on": "a-very-long-title-that-goes-on-and-on-an",
		"Café déjà vu":                                        "caf-d-j-vu",
		"ÄÖÜ":                                                 "task",
		"---":                                                 "task",
		"":                                                    "task",
		"../../etc/passwd":                                    "etc-passwd",
	} {
		got := Slug(title)
		if got != want {
			t.Errorf("Slug(%q) = %q, want %q", title, got, want)
		}
		if len(got) > 40 || strings.HasPrefix(got, "-") || strings.HasSuffix(got, "-") || strings.Contains(got, "--") {
			t.Errorf("Slug(%q) = %q is not a clean file name part", title, got)
		}
	}
}

func TestRender(t *testing.T) {
	created := time.Date(2026, 2, 6, 10, 0, 0, 0, time.UTC)
	f, err := Render("tasks/T-abcd12-hello.md", []Edit{
		Set("custom", String("c")),
		Set(KeyLabels, List("a", "b c")),
		Set(KeyTitle, String("Hello: world\n  again")),
		Set(KeyQueue, String(string(Incoming))),
		Set(KeyID, String("T-abcd12")),
		Set(KeyCreated, Time(created)),
		Set(KeyPRNumber, Int(7)),
		Unset(KeyRole),
	}, "\n\nBody text.\n\n")
	if err != nil {
		t.Fatal(err)
	}
	want := `---
id: T-abcd12
title: "Hello: world\n  again"
queue: incoming
pr_number: 7
labels: [a, b c]
created: 2026-02-06T10:00:00Z
custom: c
---
# Hello: world again

Body text.
`
	if string(f.Src) != want {
		t.Errorf("got\n%s\nwant\n%s", f.Src, want)
	}
	if f.Task.ID != "T-abcd12" || f.Task.Queue != Incoming || !f.Task.Created.Equal(created) || f.Task.PRNumber != 7 {
		t.Errorf("Task = %+v", f.Task)
	}
	if errs := f.Validate(); len(errs) > 0 {
		t.Errorf("Validate: %v", errs)
	}

	f, err = Render("x.md", nil, "")
	if err != nil || string(f.Src) != "---\n---\n" {
		t.Errorf("empty Render = %q, %v", f.Src, err)
	}
	f, err = Render("x.md", []Edit{Set(KeyID, String("T-abcd12"))}, "just body")
	if err != nil || string(f.Src) != "---\nid: T-abcd12\n---\njust body\n" {
		t.Errorf("Render without a title = %q, %v", f.Src, err)
	}
	for _, bad := range []string{"bad key", "", "-x", "a:b", "#c"} {
		_, err := Render("x.md", []Edit{Set(bad, String("x"))}, "")
		var ee *EditError
		if !errors.As(err, &ee) || ee.Key != bad {
			t.Errorf("Render with key %q: %v", bad, err)
		}
	}
	// The same key twice cannot make a file.
	if _, err := Render("x.md", []Edit{Set(KeyID, String("T-aaaa11")), Set(KeyID, String("T-bbbb22"))}, ""); err == nil {
		t.Error("Render wrote a key twice")
	}
}
