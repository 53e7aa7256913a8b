package statecache

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// mixedCache is sampleCache with tasks in every queue and priority, made
// at random times, so that list order and path order differ.
func mixedCache(n int, rng *rand.Rand) *Cache {
	c := sampleCache(0)
	prios := []string{"P0", "P1", "P2", "P3", "urgent-ish"}
	queues := append(slices.Clone(taskfile.Queues), "by-hand")
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("T-%06d", rng.Intn(1_000_000))
		p := "tasks/" + id + "-x.md"
		if rng.Intn(10) == 0 {
			p = fmt.Sprintf("tasks/named-by-hand-%d.md", i) // its id not in its name
		}
		var created time.Time
		if rng.Intn(8) > 0 {
			created = time.Unix(int64(rng.Intn(1000)), 0).UTC()
		}
		c.PutSummary(&Summary{Path: p, Blob: gitrepo.HashBlob([]byte(p)), Task: taskfile.Task{
			ID: id, Title: "t " + p, Queue: queues[rng.Intn(len(queues))], Priority: prios[rng.Intn(len(prios))], Created: created}})
	}
	return c
}

// A base file stores the summaries in list order and finds them by path:
// loaded, Each gives list order, Sorted path order, Get and ByNamedID find
// every one.
func TestBaseInListOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	path := filepath.Join(t.TempDir(), "state")
	want := mixedCache(500, rng)
	if err := want.Save(path); err != nil {
		t.Fatal(err)
	}
	n := want.Summaries.Len()
	for round := 0; round < 3; round++ {
		c := Load(path, "refs/heads/orch", true)
		if c.Summaries.Len() != n || c.mapping == nil {
			t.Fatalf("round %d: loaded %d summaries of %d (mapped: %v)", round, c.Summaries.Len(), n, c.mapping != nil)
		}
		var each []*Record
		c.Summaries.Each(func(r *Record) { each = append(each, r) })
		if round == 0 && !slices.IsSortedFunc(each, cmpListOrder) {
			t.Fatal("a base file's summaries are not in list order")
		}
		if !slices.IsSortedFunc(c.Summaries.Sorted(), func(a, b *Record) int { return strings.Compare(a.Path, b.Path) }) {
			t.Fatalf("round %d: Sorted is not in path order", round)
		}
		for _, r := range each {
			if got := c.Summaries.Get(r.Path); got != r {
				t.Fatalf("round %d: Get(%s) = %v", round, r.Path, got)
			}
			if NamedFor("tasks", r.Path, r.ID) && c.Summaries.ByNamedID("tasks", r.ID) == nil {
				t.Fatalf("round %d: ByNamedID(%s) found nothing", round, r.ID)
			}
			if s := r.Summary(); s.Path != r.Path || s.Task.ID != r.ID || s.Task.Queue != r.Queue || s.Task.Priority != r.Priority || CreatedKey(s.Task.Created) != r.Created {
				t.Fatalf("round %d: header %+v, summary %+v", round, r.SummaryHeader, s)
			}
		}
		// Changes go to the journal, then (round 1) into a new base,
		// merged into list order.
		for i := 0; i < 40; i++ {
			r := each[rng.Intn(len(each))]
			if rng.Intn(3) == 0 {
				c.DropSummary(r.Path)
				continue
			}
			s := *r.Summary()
			s.Task.Queue = taskfile.Queues[rng.Intn(len(taskfile.Queues))]
			s.Task.Priority = fmt.Sprintf("P%d", rng.Intn(4))
			c.PutSummary(&s)
		}
		c.PutSummary(&Summary{Path: "tasks/T-new-x.md", Task: taskfile.Task{ID: "T-new", Queue: taskfile.Incoming}})
		var merged []*Record
		c.Summaries.EachInListOrder(func(r *Record) { merged = append(merged, r) })
		if len(merged) != c.Summaries.Len() || !slices.IsSortedFunc(merged, cmpListOrder) {
			t.Fatalf("round %d: EachInListOrder after changes: %d of %d summaries, in list order: %v", round, len(merged), c.Summaries.Len(), slices.IsSortedFunc(merged, cmpListOrder))
		}
		if round == 1 {
			if err := c.writeBase(path); err != nil {
				t.Fatal(err)
			}
		} else if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
		n = c.Summaries.Len()
		c.Close()
		if round == 1 {
			c = Load(path, "refs/heads/orch", true)
			var after []*Record
			c.Summaries.Each(func(r *Record) { after = append(after, r) })
			if len(after) != n || !slices.IsSortedFunc(after, cmpListOrder) {
				t.Fatalf("a base written after changes: %d summaries of %d, in list order: %v", len(after), n, slices.IsSortedFunc(after, cmpListOrder))
			}
			c.Close()
		}
	}
}

// A base file whose places in path order are out of range is corrupt. (One
// out of order would mislead lookups; the decoder does not check that, at
// the cost of reaching every record again: see decodeRest.)
func TestBaseByPathChecked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	if err := mixedCache(50, rand.New(rand.NewSource(3))).Save(path); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Where the places start: after the directories and the records.
	_, d, err := decodeCacheDirs(good)
	if err != nil {
		t.Fatal(err)
	}
	ns := int(d.uv())
	for i := 0; i < ns; i++ {
		if _, end, ok := d.record(); ok {
			d.pos = end
		}
	}
	at := d.pos
	for name, tamper := range map[string]func(b []byte){
		"out of range": func(b []byte) { binary.LittleEndian.PutUint32(b[at:], uint32(ns)) },
		"negative":     func(b []byte) { binary.LittleEndian.PutUint32(b[at+4:], 1<<31) },
	} {
		b := slices.Clone(good)
		tamper(b)
		binary.LittleEndian.PutUint32(b[len(b)-4:], checksum(b[:len(b)-4]))
		bad := filepath.Join(t.TempDir(), "state")
		if err := os.WriteFile(bad, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if c := Load(bad, "refs/heads/orch", false); c.Summaries.Len() != 0 {
			t.Errorf("%s: a file with its places in path order broken loaded %d summaries", name, c.Summaries.Len())
		}
	}
	if c := Load(path, "refs/heads/orch", false); c.Summaries.Len() != 50 {
		t.Fatalf("the untouched file loaded %d summaries", c.Summaries.Len())
	}
}

// Read fills one scratch summary again and again (orch list --json): each
// task's lists are its own, whatever the task before it had, though the
// scratch's arrays are reused.
func TestReadIntoScratch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	c := sampleCache(0)
	for i := 0; i < 200; i++ {
		p := fmt.Sprintf("tasks/T-%03d.md", i)
		var labels, deps []string
		for j := 0; j < i%4; j++ {
			labels = append(labels, fmt.Sprintf("l%d-%d", i, j))
		}
		if i%3 == 0 {
			deps = []string{fmt.Sprintf("T-%03d", i+1)}
		}
		c.PutSummary(&Summary{Path: p, Blob: gitrepo.HashBlob([]byte(p)), Task: taskfile.Task{
			ID: fmt.Sprintf("T-%03d", i), Queue: taskfile.Incoming, Labels: labels, DependsOn: deps, LockedOut: labels}})
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded := Load(path, "refs/heads/orch", true)
	defer loaded.Close()
	var scratch Summary
	loaded.Summaries.Each(func(r *Record) {
		want := c.Summaries.Get(r.Path).Summary().Task
		got := r.SummaryHeader.Read(&scratch).Task
		if !slices.Equal(got.Labels, want.Labels) || !slices.Equal(got.DependsOn, want.DependsOn) || !slices.Equal(got.LockedOut, want.LockedOut) {
			t.Errorf("%s read into scratch: labels %q, depends_on %q, locked_out %q; want %q, %q, %q",
				r.Path, got.Labels, got.DependsOn, got.LockedOut, want.Labels, want.DependsOn, want.LockedOut)
		}
	})
}
