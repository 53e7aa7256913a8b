package workflow

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeFiles is a state branch made of a map, for eventChange.
type fakeFiles map[string][]byte

func (f fakeFiles) Read(p string) ([]byte, error) {
	if b, ok := f[p]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("%s: not on the state branch", p)
}

func (f fakeFiles) Has(p string) bool { _, ok := f[p]; return ok }

// TestEventFilesRoll: events go to the day's newest file until it reaches
// maxEventFile, then to a new numbered one; full files before it are never
// appended to again.
func TestEventFilesRoll(t *testing.T) {
	e := &Engine{Now: func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }, Actor: "lead", clone: "abc123"}
	files := fakeFiles{}
	base := "events/2026-11-23-abc123"
	big := strings.Repeat("x", 200)
	for i := 0; i < 2000; i++ {
		c, err := e.eventChange(files, Event{Time: "t", Task: "T-aaaa", Action: ActionNew, Actor: "lead"}, &NewData{Title: big})
		if err != nil {
			t.Fatal(err)
		}
		files[c.Path] = c.Data
	}
	if len(files) < 3 {
		t.Fatalf("2000 events of 250 bytes went to %d files", len(files))
	}
	total := 0
	for n := 1; n <= len(files); n++ {
		p := base + ".jsonl"
		if n > 1 {
			p = fmt.Sprintf("%s-%d.jsonl", base, n)
		}
		b, ok := files[p]
		if !ok {
			t.Fatalf("%s missing (files: %d)", p, len(files))
		}
		if n < len(files) && (len(b) < maxEventFile || len(b) > maxEventFile+1024) {
			t.Errorf("%s: %d bytes, want just over %d", p, len(b), maxEventFile)
		}
		total += strings.Count(string(b), "\n")
	}
	if total != 2000 {
		t.Errorf("%d event lines, want 2000", total)
	}
}
