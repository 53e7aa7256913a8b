package gitstore

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
// before the checksum is verified (see Store.Lock), so damage reaches
// decodeCacheDirs unfiltered; each input is also tried with its checksum
// made right, so that the rest of the decoder sees damage too.
func FuzzCacheDecode(f *testing.F) {
	c := newStateCache("refs/heads/orch")
	c.tip = plumbing.NewHash("1111111111111111111111111111111111111111")
	c.dirs[""] = &gitrepo.Tree{Entries: []gitrepo.TreeEntry{{Name: "tasks", Mode: gitrepo.ModeTree}}}
	c.dirs[TasksDir] = &gitrepo.Tree{Entries: []gitrepo.TreeEntry{{Name: "T-a-x.md", Mode: gitrepo.ModeFile}, {Name: "T-b.md", Mode: gitrepo.ModeExec}}}
	c.putSummary(&Summary{Path: "tasks/T-a-x.md", Task: taskfile.Task{ID: "T-a", Queue: taskfile.Incoming, Priority: "P1",
		Created: time.Date(2026, 2, 6, 10, 0, 0, 5, time.UTC), DependsOn: []string{"T-b"}}})
	c.putSummary(&Summary{Path: "tasks/T-b.md", Problem: "broken", ProblemLine: 3})
	c.index.put("tasks/T-a-x.md", &indexEntry{size: 10, mtime: 1, ctime: 2, ino: 3, racy: true, prev: []plumbing.Hash{{1}}})
	c.index.put("tasks/T-b.md", &indexEntry{conflictW: plumbing.Hash{2}, conflictR: plumbing.Hash{3}})
	good := c.encode()
	if _, err := decodeStateCache(good); err != nil {
		f.Fatalf("the seed does not decode: %v", err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(cacheMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		decode := func(b []byte) {
			if c, d, err := decodeCacheDirs(b); err == nil {
				if c.decodeRest(d) == nil {
					c.sums.each(func(r *sumRec) { r.summary() })
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
