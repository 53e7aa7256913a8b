package taskfile

import (
	"reflect"
	"strings"
	"testing"
)

func TestMerge3Frontmatter(t *testing.T) {
	base := mustParse(t, designExample)
	for _, c := range []struct {
		name      string
		ours      []Edit
		theirs    []Edit
		want      string // the merged frontmatter
		conflicts []Conflict
	}{
		{
			name:   "disjoint field edits merge",
			ours:   []Edit{Set(KeyQueue, String("claimed"))},
			theirs: []Edit{Set(KeyLabels, List("sketch", "ui")), Unset("custom_field"), Set(KeyAssignedTo, String("bob"))},
			want: strings.NewReplacer(
				"queue: rejected", "queue: claimed",
				"labels: [sketch]", "labels: [sketch, ui]",
				"custom_field: kept exactly as written   # unknown keys and comments survive every edit\n", "",
				"claimed_by: agent-b\n", "claimed_by: agent-b\nassigned_to: bob\n",
			).Replace(designExample),
		},
		{
			name:      "same field changed both ways",
			ours:      []Edit{Set(KeyQueue, String("claimed"))},
			theirs:    []Edit{Set(KeyQueue, String("done"))},
			want:      strings.Replace(designExample, "queue: rejected", "queue: claimed", 1),
			conflicts: []Conflict{{Key: KeyQueue, Ours: "claimed", Theirs: "done"}},
		},
		{
			name:      "deleted on one side, changed on the other",
			ours:      []Edit{Unset(KeyClaimedBy)},
			theirs:    []Edit{Set(KeyClaimedBy, String("agent-c"))},
			want:      strings.Replace(designExample, "claimed_by: agent-b\n", "", 1),
			conflicts: []Conflict{{Key: KeyClaimedBy, Ours: "", Theirs: "agent-c"}},
		},
		{
			name:      "added both ways",
			ours:      []Edit{Set(KeyBaseBranch, String("main"))},
			theirs:    []Edit{Set(KeyBaseBranch, String("dev"))},
			want:      strings.Replace(designExample, "branch: task/T-4k9x2m-snap-fork-start\n", "branch: task/T-4k9x2m-snap-fork-start\nbase_branch: main\n", 1),
			conflicts: []Conflict{{Key: KeyBaseBranch, Ours: "main", Theirs: "dev"}},
		},
		{
			name:   "same change on both sides",
			ours:   []Edit{Set(KeyPRNumber, Int(50))},
			theirs: []Edit{Set(KeyPRNumber, Int(50))},
			want:   strings.Replace(designExample, "pr_number: 48", "pr_number: 50", 1),
		},
		{
			name:   "only ours changed",
			ours:   []Edit{Set(KeyRole, String("reviewer"))},
			theirs: nil,
			want:   strings.Replace(designExample, "role: implementer", "role: reviewer", 1),
		},
		{
			name:   "theirs adds an unknown key",
			ours:   nil,
			theirs: []Edit{Set("notes", String("see PR"))},
			want:   strings.Replace(designExample, "survive every edit\n---\n", "survive every edit\nnotes: see PR\n---\n", 1),
		},
	} {
		ours := applyOK(t, base, c.ours...)
		theirs := applyOK(t, base, c.theirs...)
		out, conflicts, err := Merge3(base, ours, theirs)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(out.Src) != c.want {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", c.name, out.Src[:out.BodyOffset()], c.want[:strings.Index(c.want, "\n---\n")+5])
		}
		if !reflect.DeepEqual(conflicts, c.conflicts) {
			t.Errorf("%s: conflicts = %+v, want %+v", c.name, conflicts, c.conflicts)
		}
	}
}

// TestMerge3KeepsTheirFormatting: a key taken from theirs is copied as they
// wrote it, comment and all.
func TestMerge3KeepsTheirFormatting(t *testing.T) {
	base := mustParse(t, "---\nid: T-abcd12\nqueue: incoming\nlabels: [a]\n---\n# T\n")
	ours := mustParse(t, "---\nid: T-abcd12\nqueue: claimed\nlabels: [a]\n---\n# T\n")
	theirs := mustParse(t, "---\nid: T-abcd12\nqueue: incoming\nlabels:   # hand edit\n  - a\n  - b\n---\n# T\n")
	out, conflicts, err := Merge3(base, ours, theirs)
	if err != nil || len(conflicts) > 0 {
		t.Fatalf("Merge3: %v %v", conflicts, err)
	}
	want := "---\nid: T-abcd12\nqueue: claimed\nlabels:   # hand edit\n  - a\n  - b\n---\n# T\n"
	if string(out.Src) != want {
		t.Errorf("got\n%s\nwant\n%s", out.Src, want)
	}
}

func TestMerge3Body(t *testing.T) {
	base := mustParse(t, designExample)
	ours, err := base.WithBody([]byte(strings.Replace(string(base.Body()), "## Context\n...\n", "## Context\nThe snapping code lives in SketchView2D.\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	ours = applyOK(t, ours, Set(KeyQueue, String("claimed")))
	theirs, err := base.Insert(base.AfterTitle(), "## Review Feedback (rejection #2)\n\nStill broken.")
	if err != nil {
		t.Fatal(err)
	}
	out, conflicts, err := Merge3(base, ours, theirs)
	if err != nil || len(conflicts) > 0 {
		t.Fatalf("Merge3: %v %v", conflicts, err)
	}
	body := string(out.Body())
	if !strings.Contains(body, "# Snap fork start like the other shapes\n\n## Review Feedback (rejection #2)\n\nStill broken.\n\n## Review Feedback (rejection #1)") ||
		!strings.Contains(body, "## Context\nThe snapping code lives in SketchView2D.\n") {
		t.Errorf("merged body:\n%s", body)
	}
	if out.Task.Queue != Claimed {
		t.Errorf("queue = %q", out.Task.Queue)
	}

	// The same lines changed both ways: a body conflict, ours kept.
	theirs2, err := base.WithBody([]byte(strings.Replace(string(base.Body()), "## Context\n...\n", "## Context\nSomething else.\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	out, conflicts, err = Merge3(base, ours, theirs2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(conflicts, []Conflict{{Key: "", Ours: "(body)", Theirs: "(body)"}}) {
		t.Errorf("conflicts = %+v", conflicts)
	}
	if string(out.Src) != string(ours.Src) {
		t.Errorf("a conflicted merge did not keep ours:\n%s", out.Src)
	}
}

// TestMerge3NoFrontmatter: a task written by hand without frontmatter,
// given an id on one side and edited on the other, merges.
func TestMerge3NoFrontmatter(t *testing.T) {
	base := mustParse(t, "# Hand-made task\n\nDo the thing.\n")
	ours, err := base.WithBody([]byte("# Hand-made task\n\nDo the thing, carefully.\n"))
	if err != nil {
		t.Fatal(err)
	}
	theirs := applyOK(t, base, Set(KeyID, String("T-abcd12")), Set(KeyQueue, String("incoming")))
	out, conflicts, err := Merge3(base, ours, theirs)
	if err != nil || len(conflicts) > 0 {
		t.Fatalf("Merge3: %v %v", conflicts, err)
	}
	want := "---\nid: T-abcd12\nqueue: incoming\n---\n# Hand-made task\n\nDo the thing, carefully.\n"
	if string(out.Src) != want {
		t.Errorf("got\n%q\nwant\n%q", out.Src, want)
	}
}

func TestTakeFieldAndSameField(t *testing.T) {
	a := mustParse(t, "---\nid: T-abcd12\nqueue: incoming # c\n---\n")
	b := mustParse(t, "---\nid: T-abcd12\nqueue: 'done'\nrole: x\n---\n")
	out, err := TakeField(a, b, KeyQueue)
	if err != nil || string(out.Src) != "---\nid: T-abcd12\nqueue: 'done'\n---\n" {
		t.Errorf("TakeField queue = %q, %v", out.Src, err)
	}
	out, err = TakeField(a, b, KeyRole)
	if err != nil || string(out.Src) != "---\nid: T-abcd12\nqueue: incoming # c\nrole: x\n---\n" {
		t.Errorf("TakeField role = %q, %v", out.Src, err)
	}
	out, err = TakeField(b, a, KeyRole)
	if err != nil || out.Has(KeyRole) {
		t.Errorf("TakeField of a missing key = %q, %v", out.Src, err)
	}
	if !SameField(a, b, KeyID) || SameField(a, b, KeyQueue) || SameField(a, b, KeyRole) || !SameField(a, b, "absent") {
		t.Error("SameField is wrong")
	}
	if !SameField(mustParse(t, "---\nq: 'x'\n---\n"), mustParse(t, "---\nq: \"x\"  # c\n---\n"), "q") {
		t.Error("SameField compares spelling, not meaning")
	}
	if SameField(mustParse(t, "---\nq:\n---\n"), mustParse(t, "---\n---\n"), "q") {
		t.Error("SameField takes a key set to nothing for a missing key")
	}
	// A value too deep to compare node by node is the same when written
	// alike.
	deep := "---\nq: " + strings.Repeat("[", 80) + strings.Repeat("]", 80) + "\n---\n"
	if !SameField(mustParse(t, deep), mustParse(t, deep), "q") {
		t.Error("SameField: a deep value written alike differs")
	}
}

func TestMergeText(t *testing.T) {
	for _, c := range []struct {
		name               string
		base, ours, theirs string
		want               string
		ok                 bool
	}{
		{"unchanged", "a\nb\n", "a\nb\n", "a\nb\n", "a\nb\n", true},
		{"only ours", "a\nb\n", "a\nB\n", "a\nb\n", "a\nB\n", true},
		{"only theirs", "a\nb\n", "a\nb\n", "a\nB\n", "a\nB\n", true},
		{"same change", "a\nb\n", "a\nB\n", "a\nB\n", "a\nB\n", true},
		{"different places", "a\nb\nc\nd\ne\n", "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n", "A\nb\nc\nd\nE\n", true},
		{"insert and delete apart", "1\n2\n3\n4\n5\n", "1\nnew\n2\n3\n4\n5\n", "1\n2\n3\n4\n", "1\nnew\n2\n3\n4\n", true},
		{"same place insertions keep both, theirs first", "a\nb\nc\n", "a\nx\nb\nc\n", "a\ny\nb\nc\n", "a\ny\nx\nb\nc\n", true},
		{"both append", "a\n", "a\nours\n", "a\ntheirs\n", "a\ntheirs\nours\n", true},
		{"empty base", "", "x\n", "y\n", "y\nx\n", true},
		{"both append the same lines, ours more", "a\n", "a\nL1\nL2\nL3\n", "a\nL1\nL2\n", "a\nL1\nL2\nL3\n", true},
		{"both append the same lines, theirs more", "a\n", "a\nL1\n", "a\nL1\nL2\n", "a\nL1\nL2\n", true},
		{"both append, shared start and end", "a\n", "a\nS\nx\nE\n", "a\nS\ny\nE\n", "a\nS\ny\nx\nE\n", true},
		{"same line changed", "a\nb\nc\n", "a\nB\nc\n", "a\nBB\nc\n", "a\nB\nc\n", false},
		{"adjacent lines changed", "a\nb\nc\n", "a\nB\nc\n", "a\nb\nC\n", "a\nB\nc\n", false},
		{"deleted and changed", "a\nb\nc\n", "a\nc\n", "a\nB\nc\n", "a\nc\n", false},
		{"both delete the same", "a\nb\nc\n", "a\nc\n", "a\nc\n", "a\nc\n", true},
		{"no final newline", "a\nb", "a\nb\nc", "z\na\nb", "z\na\nb\nc", true},
		{"last line changed both ways", "a\nb", "a\nbX", "a\nbY", "a\nbX", false},
		{"crlf", "a\r\nb\r\nc\r\nd\r\n", "a\r\nB\r\nc\r\nd\r\n", "a\r\nb\r\nc\r\nD\r\n", "a\r\nB\r\nc\r\nD\r\n", true},
	} {
		got, ok := MergeText(c.base, c.ours, c.theirs)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: MergeText = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestMerge3Disjoint: edits of two different keys always merge, whatever
// the keys and however the file is written, and nothing else changes.
func TestMerge3Disjoint(t *testing.T) {
	edits := func(k string) []Edit {
		return []Edit{Set(k, String("x")), Set(k, String("needs: quotes")), Set(k, List("a", "b")), Set(k, List()), Unset(k)}
	}
	for _, src := range []string{designExample, handWritten, trickyFiles["crlf"], trickyFiles["comments"], trickyFiles["block-scalars"]} {
		base := mustParse(t, src)
		keys := append(base.Keys(), KeyQueue, KeyAssignedTo, "zz")
		for _, k1 := range keys {
			for _, k2 := range keys {
				if k1 == k2 {
					continue
				}
				for _, e1 := range edits(k1) {
					for _, e2 := range edits(k2) {
						ours, err1 := base.Apply(e1)
						theirs, err2 := base.Apply(e2)
						if err1 != nil || err2 != nil {
							continue // not a valid value for that key
						}
						out, conflicts, err := Merge3(base, ours, theirs)
						if err != nil || len(conflicts) > 0 {
							t.Fatalf("%s + %s: %v %v", describeEdit(e1), describeEdit(e2), conflicts, err)
						}
						if !SameField(out, ours, k1) || !SameField(out, theirs, k2) || string(out.Body()) != string(base.Body()) {
							t.Fatalf("%s + %s merged to\n%s", describeEdit(e1), describeEdit(e2), out.Src)
						}
						for _, k := range base.Keys() {
							if k != k1 && k != k2 && !SameField(out, base, k) {
								t.Fatalf("%s + %s changed %s:\n%s", describeEdit(e1), describeEdit(e2), k, out.Src)
							}
						}
					}
				}
			}
		}
	}
}
