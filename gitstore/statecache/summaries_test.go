package statecache

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// tasksDir is where orch keeps task files, whose names the lookups by id
// rely on.
const tasksDir = "tasks"

// TestByNamedIDAgainstWalk checks the binary search by id against the walk
// over every record, over random base and added records (replaced,
// dropped, sharing ids), whenever every file is named after its id.
func TestByNamedIDAgainstWalk(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	ids := []string{"T-aaaaaa", "T-aaaaab", "T-b", "T-bb", "T-bbb", "T-c01", "T-c0", "X"}
	pathFor := func(id string) string {
		switch rng.Intn(3) {
		case 0:
			return tasksDir + "/" + id + ".md"
		case 1:
			return tasksDir + "/" + id + "-" + string(rune('a'+rng.Intn(3))) + ".md"
		}
		return tasksDir + "/" + id + "-zz-" + fmt.Sprint(rng.Intn(5)) + ".md"
	}
	for round := 0; round < 300; round++ {
		var ss Summaries
		var base []string
		seen := map[string]bool{}
		for i := rng.Intn(40); i > 0; i-- {
			id := ids[rng.Intn(len(ids))]
			if p := pathFor(id); !seen[p] {
				seen[p] = true
				base = append(base, p+"\x00"+id)
			}
		}
		// The base in path order, as the file stores it.
		sort.Strings(base)
		ss.base = make([]Record, len(base))
		for i, b := range base {
			var p, id string
			for j := range b {
				if b[j] == 0 {
					p, id = b[:j], b[j+1:]
				}
			}
			r := &ss.base[i]
			r.SummaryHeader = SummaryHeader{Path: p, ID: id, Queue: taskfile.Incoming, rec: r}
		}
		ss.n = len(base)
		misnamed := rng.Intn(4) == 0
		for i := rng.Intn(20); i > 0; i-- {
			switch rng.Intn(3) {
			case 0:
				id := ids[rng.Intn(len(ids))]
				p := pathFor(id)
				if misnamed && rng.Intn(3) == 0 {
					p = tasksDir + "/by-hand-" + fmt.Sprint(rng.Intn(3)) + ".md"
				}
				ss.put(newRecord(&Summary{Path: p, Task: taskfile.Task{ID: id}}))
			case 1:
				if len(base) > 0 {
					ss.drop(ss.base[rng.Intn(len(base))].Path)
				}
			case 2:
				// Lookups between changes: the added map is rebuilt.
				if ss.NamedByID(tasksDir) {
					ss.ByNamedID(tasksDir, ids[rng.Intn(len(ids))])
				}
			}
		}
		named := ss.NamedByID(tasksDir)
		if !misnamed && !named {
			t.Fatalf("round %d: files named after their ids not seen as such", round)
		}
		if !named {
			continue
		}
		for _, id := range append(ids, "T-", "T-aaaaa", "T-zzz") {
			if got, want := ss.ByNamedID(tasksDir, id), ss.ByID(id); got != want {
				t.Fatalf("round %d: ByNamedID(%s) = %+v, walk finds %+v", round, id, got, want)
			}
		}
	}
}

func TestNamedFor(t *testing.T) {
	for _, tc := range []struct {
		path, id string
		want     bool
	}{
		{"tasks/T-abc-fix-it.md", "T-abc", true},
		{"tasks/T-abc.md", "T-abc", true},
		{"tasks/T-abcd-fix.md", "T-abc", false},
		{"tasks/T-abc", "T-abc", false},
		{"tasks/fix-it.md", "T-abc", false},
		{"other/T-abc-x.md", "T-abc", false},
		{"tasks/T-ab", "T-abc", false},
		{"tasks-T-abc.md", "T-abc", false},
	} {
		if got := NamedFor(tasksDir, tc.path, tc.id); got != tc.want {
			t.Errorf("NamedFor(%q, %q, %q) = %v", tasksDir, tc.path, tc.id, got)
		}
	}
}

// Read decodes a loaded record into the scratch summary without making the
// record keep it, and gives what Summary gives; a summary held already (put,
// or decoded by Summary) is handed out as it is.
func TestReadKeepsNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	if err := sampleCache(3).Save(path); err != nil {
		t.Fatal(err)
	}
	c := Load(path, "refs/heads/orch", false)
	var scratch Summary
	var recs []*Record
	c.Summaries.Each(func(r *Record) { recs = append(recs, r) })
	for _, r := range recs {
		if want := gitrepo.HashBlob([]byte(r.Path)); r.Blob() != want || r.s != nil {
			t.Fatalf("%s: a loaded record's blob is %v, want %v (without decoding it whole)", r.Path, r.Blob(), want)
		}
		got := r.SummaryHeader.Read(&scratch)
		if got != &scratch || r.s != nil {
			t.Fatalf("%s: Read returned %p (scratch %p), the record keeps %p", r.Path, got, &scratch, r.s)
		}
		if got.Path != r.Path || got.Task.ID != r.ID || got.Task.Title != "t" || !reflect.DeepEqual(got.Task.Labels, []string{"a"}) {
			t.Fatalf("%s: Read gave %+v", r.Path, got)
		}
		want := *got
		if s := r.Summary(); !reflect.DeepEqual(*s, want) || r.SummaryHeader.Read(&scratch) != s {
			t.Fatalf("%s: Summary gave %+v, Read %+v", r.Path, *s, want)
		}
	}
}

// CreatedKey orders creation times as time.Time does, within and beyond
// the years Unix nanoseconds reach, and puts no creation time last.
func TestCreatedKey(t *testing.T) {
	times := []time.Time{
		time.Date(1200, 1, 1, 0, 0, 0, 0, time.UTC), // clamped
		time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 0),
		time.Unix(1, 5),
		time.Date(2026, 11, 29, 1, 0, 0, 0, time.FixedZone("x", 3600)),
		time.Date(2026, 11, 29, 1, 0, 0, 1, time.UTC),
		time.Date(2250, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), // clamped
		{},
	}
	for i := 1; i < len(times); i++ {
		a, b := CreatedKey(times[i-1]), CreatedKey(times[i])
		if a >= b {
			t.Errorf("CreatedKey(%v) = %d, not before CreatedKey(%v) = %d", times[i-1], a, times[i], b)
		}
	}
	if k := CreatedKey(time.Time{}); k != NoCreated {
		t.Errorf("no creation time: %d, want NoCreated", k)
	}
	if k, want := CreatedKey(times[4]), times[4].UnixNano(); k != want {
		t.Errorf("CreatedKey(%v) = %d, want its Unix nanoseconds %d", times[4], k, want)
	}
}
