package statecache

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/taskfile"
)

// FuzzCacheDecode: the state cache decoder returns an error, never panics,
// on any bytes. The directories are decoded, and handed to the view scan,
// before the checksum is verified (see Loading.Dirs), so damage reaches
// decodeCacheDirs unfiltered; each input is also tried with its checksum
// made right, so that the rest of the decoder sees damage too.
func FuzzCacheDecode(f *testing.F) {
	c := newCache("refs/heads/orch")
	c.Tip = plumbing.NewHash("1111111111111111111111111111111111111111")
	c.Dirs[""] = &gitrepo.Tree{Entries: []gitrepo.TreeEntry{{Name: "tasks", Mode: gitrepo.ModeTree}}}
	c.Dirs["tasks"] = &gitrepo.Tree{Entries: []gitrepo.TreeEntry{{Name: "T-a-x.md", Mode: gitrepo.ModeFile}, {Name: "T-b.md", Mode: gitrepo.ModeExec}}}
	c.PutSummary(&Summary{Path: "tasks/T-a-x.md", Task: taskfile.Task{ID: "T-a", Queue: taskfile.Incoming, Priority: "P1",
		Created: time.Date(2026, 2, 6, 10, 0, 0, 5, time.UTC), DependsOn: []string{"T-b"}}})
	c.PutSummary(&Summary{Path: "tasks/T-b.md", Problem: "broken", ProblemLine: 3})
	c.Index.put("tasks/T-a-x.md", &IndexEntry{Size: 10, Mtime: 1, Ctime: 2, Ino: 3, Racy: true, Prev: []plumbing.Hash{{1}}})
	c.Index.put("tasks/T-b.md", &IndexEntry{ConflictW: plumbing.Hash{2}, ConflictR: plumbing.Hash{3}})
	good := c.encode()
	if _, err := decodeCache(good); err != nil {
		f.Fatalf("the seed does not decode: %v", err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(cacheMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		decode := func(b []byte) {
			if c, d, err := decodeCacheDirs(b); err == nil {
				c.decodeDirEntries()
				if c.decodeRest(d) == nil {
					c.Summaries.Each(func(r *Record) { r.Summary() })
				}
			}
		}
		decode(b)
		if len(b) >= len(cacheMagic)+8+4 {
			fixed := append([]byte(nil), b...)
			binary.LittleEndian.PutUint32(fixed[len(fixed)-4:], checksum(fixed[:len(fixed)-4]))
			decode(fixed)
		}
	})
}
