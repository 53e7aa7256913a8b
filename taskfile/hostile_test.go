package taskfile

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileFile is a task file built to cost time or memory: huge, deeply
// nested, alias-expanding or malformed. Every one must be read (or refused)
// within a bounded time and a bounded amount of allocation.
type hostileFile struct {
	name string
	src  string
	// refuse: Parse must fail with a *ParseError whose message contains
	// this; "" means Parse may succeed.
	refuse string
	// problem: when Parse succeeds, Validate must report a problem whose
	// message contains this ("" means none is required).
	problem string
}

const hostileHead = "---\nid: T-h00000\ntitle: Hostile\nqueue: incoming\n"

func hostileFiles() []hostileFile {
	rep := strings.Repeat
	// The classic billion laughs: 9 levels of 9 references each.
	var laughs strings.Builder
	laughs.WriteString(hostileHead + "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i, prev := 1, "a"; i < 9; i++ {
		c := string(rune('a' + i))
		laughs.WriteString(c + ": &" + c + " [" + strings.TrimSuffix(rep("*"+prev+",", 9), ",") + "]\n")
		prev = c
	}
	laughs.WriteString("---\n# Bomb\n")
	// The same through mappings and merge keys.
	var merges strings.Builder
	merges.WriteString(hostileHead + "m0: &m0 {a: 1, b: 2}\n")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&merges, "m%d: &m%d {x: *m%d, y: *m%d, <<: *m%d}\n", i, i, i-1, i-1, i-1)
	}
	merges.WriteString("---\n# Merge bomb\n")
	tenMB := hostileHead + "---\n# Big\n\n" + rep("Some text that goes on, as task descriptions do.\n", 10<<20/50)
	// Just under the limit: the largest file orch reads.
	fill := func(head, unit, tail string) string {
		return head + rep(unit, (MaxFileSize-len(head)-len(tail))/len(unit)) + tail
	}
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := 0; i < n && b.Len() < MaxFileSize-200; i++ {
			b.WriteString(f(i))
		}
		return b.String()
	}
	body := hostileHead + "---\n# Body\n\n"
	return []hostileFile{
		{name: "billion-laughs", src: laughs.String(), problem: "alias bomb"},
		{name: "alias-bomb-60", src: aliasBomb(60), problem: "alias bomb"},
		{name: "merge-key-bomb", src: merges.String(), problem: "alias bomb"},
		{name: "anchors-small", src: hostileHead + "x: &x [a, b]\ny: *x\n---\n# Fine\n"},
		{name: "10MB", src: tenMB, refuse: "the limit is"},
		{name: "over-limit", src: hostileHead + "---\n" + rep("x", MaxFileSize), refuse: "the limit is"},
		{name: "max-body", src: fill(body, "Some text that goes on, as task descriptions do.\n", "")},
		{name: "max-one-line", src: fill(body, "x", "\n")},
		{name: "max-frontmatter-string", src: fill(hostileHead+"notes: \"", "x", "\"\n---\n# Big\n")},
		{name: "max-keys", src: hostileHead + lines(1<<20, func(i int) string { return fmt.Sprintf("k%d: v\n", i) }) + "---\n# Keys\n"},
		{name: "max-lines-frontmatter", src: fill(hostileHead+"notes: |\n", "  line\n", "---\n# Lines\n")},
		{name: "deep-flow-seq", src: hostileHead + "x: " + rep("[", 100000) + rep("]", 100000) + "\n---\n# Deep\n", refuse: "max depth"},
		{name: "deep-flow-map", src: hostileHead + "x: " + rep("{a: ", 100000) + "1" + rep("}", 100000) + "\n---\n# Deep\n", refuse: "max depth"},
		{name: "deep-block", src: hostileHead + "x:\n" + lines(1400, func(i int) string { return rep(" ", i+1) + "- \n" }) + "---\n# Deep\n"},
		{name: "deep-quote-body", src: fill(body, ">", " x\n")},
		{name: "deep-quote-lines", src: body + lines(1<<20, func(i int) string { return rep("> ", 200) + "x\n" })},
		{name: "deep-list-body", src: body + lines(1<<20, func(i int) string { return rep("  ", i%2000) + "- x\n" })},
		{name: "nested-list-lines", src: body + lines(1<<20, func(i int) string { return rep("  ", i%100) + "- x\n" })},
		{name: "emphasis-body", src: fill(body, "*a **b _c ", "\n")},
		{name: "brackets-body", src: fill(body, "[a](", "\n")},
		{name: "link-refs", src: fill(body, "[a]: <", "\n")},
		{name: "html-body", src: fill(body, "<div><!-- ", "\n")},
		{name: "backticks-body", src: body + lines(3000, func(i int) string { return rep("`", i+1) + "x" }) + "\n"},
		{name: "fences", src: fill(body, "```\n# not a heading\n", "")},
		{name: "setext", src: fill(body, "a\n=\n", "")},
		{name: "many-headings", src: fill(body, "## Review Feedback (rejection #1)\n### From x\n- [ ] **R1.1** HIGH `a` — t\n", "")},
		{name: "many-issues", src: fill(body+"## Review Feedback (rejection #1)\n\n### From x\n\n", "- [ ] **R1.1** HIGH `a` — t\n  problem\n", "")},
		{name: "many-responses", src: fill(body+"## Review Feedback (rejection #1)\n\n### From x\n\n- [ ] **R1.1** HIGH `a` — t\n", "  - Response: FIXED (abc1234) — done\n", "")},
		{name: "many-documents", src: fill(hostileHead, "---\n", "# T\n")},
		{name: "invalid-utf8-title", src: "---\nid: T-h00000\ntitle: \"bad \xff\xfe title\"\nqueue: incoming\n---\n# T\n", refuse: "UTF-8"},
		{name: "invalid-utf8-body", src: hostileHead + "---\n# T\n\nbody \xc3\x28 here\n", refuse: "UTF-8"},
		{name: "surrogate-utf8", src: hostileHead + "---\n# T \xed\xa0\x80\n", refuse: "UTF-8"},
		{name: "nul", src: hostileHead + "---\n# T\x00\n", refuse: "NUL"},
		{name: "bom", src: "\xef\xbb\xbf" + hostileHead + "---\n# T\n"},
		{name: "long-key", src: fill(hostileHead, "k", ": v\n---\n# T\n")},
	}
}

// TestHostileFiles: every hostile file is parsed or refused, and reading it
// (Parse, Validate, Sections, FeedbackRounds, an edit, a new review round)
// allocates a bounded multiple of its size: the work is linear, which this
// checks without timing anything (tests never assert wall-clock times; the
// elapsed time is logged, and a hang fails the test run's timeout). Before the fixes
// that came with it, 800 KB of "[a](" took more than five minutes, a
// 100,000-key frontmatter over a minute, 100 KB of ">" ten seconds, and an
// alias bomb was committed to the state branch.
func TestHostileFiles(t *testing.T) {
	for _, h := range hostileFiles() {
		t.Run(h.name, func(t *testing.T) {
			src := []byte(h.src)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			f, err := Parse("tasks/hostile.md", src)
			var problems []*ParseError
			if err == nil {
				problems = f.Validate()
				_ = f.Sections()
				_ = f.FeedbackRounds()
				if _, err := f.Apply(Set(KeyQueue, String("done")), Set(KeyClaimedBy, String("agent-a"))); err != nil {
					if _, ok := err.(*EditError); !ok {
						t.Errorf("edit: %T %v", err, err)
					}
				}
				if _, err := f.AddRound(Round{Number: 1, Sources: []Source{{From: "x", Issues: []Issue{{ID: "R1.1", Severity: "HIGH", Title: "t"}}}}}); err != nil {
					if _, ok := err.(*ParseError); !ok || !errors.Is(err, ErrTooLarge) { // a file at the limit cannot grow
						t.Errorf("AddRound: %T %v", err, err)
					}
				}
			}
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes: %v, %d MB allocated, err=%.120v problems=%d", len(src), elapsed, alloc>>20, err, len(problems))
			if h.refuse != "" {
				pe, ok := err.(*ParseError)
				if !ok || !strings.Contains(pe.Msg, h.refuse) {
					t.Errorf("err = %v, want a *ParseError containing %q", err, h.refuse)
				}
			} else if err != nil {
				if _, ok := err.(*ParseError); !ok {
					t.Errorf("err = %T %v, want nil or a *ParseError", err, err)
				}
			}
			if h.problem != "" && err == nil && !hasProblem(problems, h.problem) {
				t.Errorf("Validate = %v, want a problem about %q", Problems(problems), h.problem)
			}
			// Allocation summed over every pass (each edit re-parses the
			// result): linear in the size, and at most 1.5 GB for the
			// largest file orch reads. Quadratic behaviour blows far past it.
			if limit := uint64(64<<20 + 1500*len(src)); alloc > limit {
				t.Errorf("allocated %d MB for a %d-byte file (limit %d MB)", alloc>>20, len(src), limit>>20)
			}
		})
	}
}

func hasProblem(ps []*ParseError, s string) bool {
	for _, p := range ps {
		if strings.Contains(p.Msg, s) {
			return true
		}
	}
	return false
}
