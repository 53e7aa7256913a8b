package termboard

import (
	"regexp"
	"strings"
	"testing"

	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/taskfile"
)

func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		n, width      int
		perBand, colW int
	}{
		{7, 200, 7, 26},  // all open queues side by side
		{7, 100, 4, 23},  // 5 fit at 18; balanced into 4 + 3
		{7, 60, 3, 18},   // 3 + 3 + 1
		{10, 100, 5, 18}, // --all: 5 + 5
		{10, 60, 3, 18},  // 3 + 3 + 3 + 1
		{1, 100, 1, 48},  // one queue: capped, not 100 wide
		{2, 38, 2, 18},   // exactly two minimum columns
		{2, 37, 1, 37},   // one short: wrap
		{3, 10, 1, 12},   // narrower than anything: one column a band
		{0, 100, 0, 0},
	} {
		p, w := layout(tc.n, tc.width)
		if p != tc.perBand || w != tc.colW {
			t.Errorf("layout(%d, %d) = %d, %d; want %d, %d", tc.n, tc.width, p, w, tc.perBand, tc.colW)
		}
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven ch…"},
		{"x", 0, ""},
		{"abc", 1, "…"},
		{"bell\a and \x1b[31mred", 40, "bell? and ?[31mred"},
		{"日本語のタイトル", 7, "日本語…"}, // wide characters take two columns
		{"日本語", 6, "日本語"},
		{"bad \xff byte", 20, "bad ? byte"},
	} {
		got := Clip(tc.in, tc.w)
		if got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.w, got, tc.want)
		}
		if displayWidth(got) > tc.w {
			t.Errorf("Clip(%q, %d) = %q is %d wide", tc.in, tc.w, got, displayWidth(got))
		}
	}
}

func TestWrapText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w, n int
		want []string
	}{
		{"Fix the flaky autosave test", 16, 2, []string{"Fix the flaky", "autosave test"}},
		{"Write the export-to-SVG command", 16, 2, []string{"Write the", "export-to-SVG c…"}},
		{"short", 16, 2, []string{"short"}},
		{"a supercalifragilistic word", 8, 2, []string{"a", "superca…"}},
		{"supercalifragilistic", 8, 3, []string{"supercal", "ifragili", "stic"}},
		{"  spaced   out  ", 20, 2, []string{"spaced out"}},
		{"one two three", 20, 1, []string{"one two three"}},
		{"tab\there", 20, 2, []string{"tab?here"}},
		{"", 10, 2, nil},
	} {
		in := tc.in
		got := wrapText(in, tc.w, tc.n)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrapText(%q, %d, %d) = %q, want %q", in, tc.w, tc.n, got, tc.want)
		}
	}
}

func boardFixture() []*gitstore.Summary {
	mk := func(id, title string, q taskfile.Queue, pri string, mod func(*taskfile.Task)) *gitstore.Summary {
		s := &gitstore.Summary{Task: taskfile.Task{ID: id, Title: title, Queue: q, Priority: pri}}
		if mod != nil {
			mod(&s.Task)
		}
		return s
	}
	return []*gitstore.Summary{
		mk("T-aaaaaa", "Write the export-to-SVG command", taskfile.Incoming, "P1", nil),
		mk("T-bbbbbb", "Kept for carol", taskfile.Incoming, "P2", func(t *taskfile.Task) { t.AssignedTo = "carol" }),
		mk("T-cccccc", "Migrate settings", taskfile.Claimed, "P2", func(t *taskfile.Task) { t.ClaimedBy = "agent-b" }),
		mk("T-dddddd", "Snap fork start", taskfile.Rejected, "P1", func(t *taskfile.Task) { t.RejectionCount = 2; t.SubmittedBy = "agent-a" }),
		mk("T-eeeeee", "Fix the flaky autosave test", taskfile.Escalated, "P0", func(t *taskfile.Task) { t.RejectionCount = 3 }),
		mk("T-ffffff", "Finished", taskfile.Done, "P3", nil),
	}
}

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

func TestRender(t *testing.T) {
	open := []taskfile.Queue{taskfile.Incoming, taskfile.Claimed, taskfile.Provisional, taskfile.Rejected, taskfile.NeedsContinuation, taskfile.Blocked, taskfile.Escalated}
	cols := Group(open, boardFixture())
	if len(cols) != 7 || len(cols[0].Tasks) != 2 || len(cols[2].Tasks) != 0 || len(cols[6].Tasks) != 1 {
		t.Fatalf("Group: %+v", cols)
	}

	plain := Render(cols, 60, false)
	want := `incoming (2)        claimed (1)         provisional (0)
------------------  ------------------  ------------------
T-aaaaaa P1         T-cccccc P2         (none)
  Write the           Migrate settings
  export-to-SVG c…    @agent-b
T-bbbbbb P2
  Kept for carol
  for carol

rejected (1)        needs_continu… (0)  blocked (0)
------------------  ------------------  ------------------
T-dddddd P1 rej 2   (none)              (none)
  Snap fork start

escalated (1)
------------------
!T-eeeeee P0 rej 3
  Fix the flaky
  autosave test
`
	if plain != want {
		t.Errorf("plain board at 60:\n%s\nwant:\n%s", plain, want)
	}

	for _, width := range []int{30, 60, 80, 100, 140, 250} {
		for _, color := range []bool{false, true} {
			out := Render(cols, width, color)
			if !color && ansiRE.MatchString(out) {
				t.Errorf("width %d: escape codes without colour", width)
			}
			if color && !strings.Contains(out, ansiRed+"!T-eeeeee"+ansiReset) {
				t.Errorf("width %d: the escalated task is not in red:\n%q", width, out)
			}
			if !strings.Contains(ansiRE.ReplaceAllString(out, ""), "!T-eeeeee") {
				t.Errorf("width %d colour %v: no ! before the escalated task", width, color)
			}
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				bare := ansiRE.ReplaceAllString(line, "")
				if displayWidth(bare) > width {
					t.Errorf("width %d colour %v: line is %d wide: %q", width, color, displayWidth(bare), bare)
				}
				if strings.HasSuffix(line, " ") {
					t.Errorf("width %d colour %v: trailing space: %q", width, color, line)
				}
			}
		}
	}

	// --all: done shows up in its own column.
	all := Render(Group(taskfile.Queues, boardFixture()), 100, false)
	if !strings.Contains(all, "done (1)") || !strings.Contains(all, "T-ffffff P3") {
		t.Errorf("--all board lacks the done task:\n%s", all)
	}
}
