package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	bolt "go.etcd.io/bbolt"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/statecache"
)

// The embedded store's side: the same records in a bbolt file.
//
//	meta     "tip", "root" → 20 bytes each
//	dirhash  "/" + directory path → its tree hash (20 bytes), its entry count
//	dirs     one bucket per directory, named "/" + its path: entry name →
//	         mode (uvarint), hash
//	sums     task path → the summary record statecache.AppendSummary writes
//	index    path → the sync-index entry, encoded as the cache file does
var (
	bMeta    = []byte("meta")
	bDirHash = []byte("dirhash")
	bDirs    = []byte("dirs")
	bSums    = []byte("sums")
	bIndex   = []byte("index")
)

func boltReadPath(dir string) string  { return filepath.Join(dir, "read.bolt") }
func boltWritePath(dir string) string { return filepath.Join(dir, "write.bolt") }
func boltSwarmPath(dir string) string { return filepath.Join(dir, "swarm.bolt") }

// boltBuild writes the bbolt file of the loaded cache c, in one
// transaction, keys in order and pages filled (FillPercent 1: the densest
// file, the best case for reading it).
func boltBuild(c *statecache.Cache, path string) error {
	_ = os.Remove(path)
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error {
		bk := map[string]*bolt.Bucket{}
		for _, n := range [][]byte{bMeta, bDirHash, bDirs, bSums, bIndex} {
			b, err := tx.CreateBucket(n)
			if err != nil {
				return err
			}
			b.FillPercent = 1
			bk[string(n)] = b
		}
		if err := bk["meta"].Put([]byte("tip"), c.Tip[:]); err != nil {
			return err
		}
		if err := bk["meta"].Put([]byte("root"), c.Root[:]); err != nil {
			return err
		}
		for p, d := range c.Dirs {
			if err := bk["dirhash"].Put([]byte("/"+p), binary.AppendUvarint(append([]byte(nil), d.Hash[:]...), uint64(len(d.Entries)))); err != nil {
				return err
			}
			db, err := bk["dirs"].CreateBucket([]byte("/" + p))
			if err != nil {
				return err
			}
			db.FillPercent = 1
			for _, en := range d.Entries {
				if err := db.Put([]byte(en.Name), entryValue(en.Mode, en.Hash)); err != nil {
					return err
				}
			}
		}
		for _, r := range c.Summaries.Sorted() {
			if err := bk["sums"].Put([]byte(r.Path), statecache.AppendSummary(nil, r.Summary())); err != nil {
				return err
			}
		}
		var perr error
		c.Index.Each(func(p string, ie *statecache.IndexEntry) {
			if perr == nil {
				perr = bk["index"].Put([]byte(p), encodeIndex(nil, ie))
			}
		})
		return perr
	})
}

// boltUsed is the size of the pages of the bbolt file in use (bbolt grows
// the file in steps ahead of them).
func boltUsed(path string) (int64, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil })
	return n, err
}

func entryValue(mode uint32, h plumbing.Hash) []byte {
	return append(binary.AppendUvarint(nil, uint64(mode)), h[:]...)
}

// encodeIndex is statecache's encoding of a sync-index entry (codec.go's
// encodeIndexEntry, which is not exported).
func encodeIndex(b []byte, ie *statecache.IndexEntry) []byte {
	b = append(b, ie.Blob[:]...)
	b = binary.AppendVarint(b, ie.Size)
	b = binary.AppendVarint(b, ie.Mtime)
	b = binary.AppendVarint(b, ie.Ctime)
	b = binary.AppendUvarint(b, ie.Ino)
	flags := uint64(0)
	if ie.Racy {
		flags |= 1
	}
	conflict := !ie.ConflictW.IsZero() || !ie.ConflictR.IsZero()
	if conflict {
		flags |= 2
	}
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendUvarint(b, uint64(len(ie.Prev)))
	for _, p := range ie.Prev {
		b = append(b, p[:]...)
	}
	if conflict {
		b = append(b, ie.ConflictW[:]...)
		b = append(b, ie.ConflictR[:]...)
	}
	return b
}

// decodeIndex reads what encodeIndex wrote into ie (reusing its Prev); false
// when it does not decode.
func decodeIndex(b []byte, ie *statecache.IndexEntry) bool {
	if len(b) < 20 {
		return false
	}
	copy(ie.Blob[:], b)
	b = b[20:]
	var k int
	ie.Size, k = binary.Varint(b)
	if k <= 0 {
		return false
	}
	b = b[k:]
	if ie.Mtime, k = binary.Varint(b); k <= 0 {
		return false
	}
	b = b[k:]
	if ie.Ctime, k = binary.Varint(b); k <= 0 {
		return false
	}
	b = b[k:]
	if ie.Ino, k = binary.Uvarint(b); k <= 0 {
		return false
	}
	b = b[k:]
	flags, k := binary.Uvarint(b)
	if k <= 0 {
		return false
	}
	b = b[k:]
	ie.Racy = flags&1 != 0
	np, k := binary.Uvarint(b)
	if k <= 0 || np > 16 || uint64(len(b)-k) < np*20 {
		return false
	}
	b = b[k:]
	ie.Prev = ie.Prev[:0]
	for range np {
		ie.Prev = append(ie.Prev, plumbing.Hash(b[:20]))
		b = b[20:]
	}
	ie.ConflictW, ie.ConflictR = plumbing.ZeroHash, plumbing.ZeroHash
	if flags&2 != 0 {
		if len(b) < 40 {
			return false
		}
		ie.ConflictW, ie.ConflictR = plumbing.Hash(b[:20]), plumbing.Hash(b[20:40])
	}
	return true
}

// str is b as a string without a copy: it points into bbolt's mapping, as
// statecache's decoded strings point into its file, and is valid while the
// transaction is open.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// readSummary decodes a record into scratch as SummaryHeader.Read does
// (reusing the scratch's lists).
func readSummary(v []byte, scratch *statecache.Summary) bool {
	t := scratch.Task
	*scratch = statecache.Summary{}
	scratch.Task.LockedOut, scratch.Task.WorkedBy, scratch.Task.GitHubReviews = t.LockedOut[:0], t.WorkedBy[:0], t.GitHubReviews[:0]
	scratch.Task.DependsOn, scratch.Task.Labels = t.DependsOn[:0], t.Labels[:0]
	_, ok := statecache.ReadSummary(v, scratch)
	return ok
}

// boltReadAll reads, in one read transaction, everything `orch list` needs
// from the cache: with trees, the directories' entries, decoded into tree
// entries as statecache.Load decodes them, and every sync-index entry
// decoded, as Load checks them (what every command reads: the view's
// reconcile compares the index with the files the trees list); with sums,
// every summary decoded, as the list does. It returns the summaries it saw.
func boltReadAll(tx *bolt.Tx, trees, sums bool) (int, error) {
	if trees {
		dirs := map[string]*gitrepo.Tree{}
		hashes := tx.Bucket(bDirHash)
		err := tx.Bucket(bDirs).ForEachBucket(func(k []byte) error {
			p := str(k[1:])
			hv := hashes.Get(k)
			if len(hv) < 21 {
				return fmt.Errorf("directory %q: no hash", p)
			}
			n, _ := binary.Uvarint(hv[20:])
			d := &gitrepo.Tree{Hash: plumbing.Hash(hv[:20]), Entries: make([]gitrepo.TreeEntry, 0, n)}
			err := tx.Bucket(bDirs).Bucket(k).ForEach(func(name, v []byte) error {
				mode, k := binary.Uvarint(v)
				if k <= 0 || len(v)-k != 20 {
					return fmt.Errorf("directory %q: bad entry %q", p, name)
				}
				d.Entries = append(d.Entries, gitrepo.TreeEntry{Name: str(name), Mode: uint32(mode), Hash: plumbing.Hash(v[k:])})
				return nil
			})
			dirs[p] = d
			return err
		})
		if err != nil {
			return 0, err
		}
		var ie statecache.IndexEntry
		if err := tx.Bucket(bIndex).ForEach(func(k, v []byte) error {
			if !decodeIndex(v, &ie) {
				return fmt.Errorf("index %q: bad entry", k)
			}
			return nil
		}); err != nil {
			return 0, err
		}
	}
	if !sums {
		return 0, nil
	}
	var scratch statecache.Summary
	n := 0
	err := tx.Bucket(bSums).ForEach(func(k, v []byte) error {
		if !readSummary(v, &scratch) {
			return fmt.Errorf("summary %q does not decode", k)
		}
		n++
		return nil
	})
	return n, err
}

// boltPutSummary puts the summary of path again with a new blob, as
// changeSummary does in the cache file.
func boltPutSummary(tx *bolt.Tx, path string) error {
	b := tx.Bucket(bSums)
	var s statecache.Summary
	if !readSummary(b.Get([]byte(path)), &s) {
		return fmt.Errorf("no summary of %s", path)
	}
	s.Blob = randHash()
	return b.Put([]byte(path), statecache.AppendSummary(nil, &s))
}

// boltTransition puts what transition puts in the cache file: tip and
// root, the task's directory entry and its directory's in the root (and
// their hashes), the summary and the index entry.
func boltTransition(tx *bolt.Tx, path string) error {
	meta := tx.Bucket(bMeta)
	for _, k := range []string{"tip", "root"} {
		h := randHash()
		if err := meta.Put([]byte(k), h[:]); err != nil {
			return err
		}
	}
	dir, name := taskDir(path), path[len(taskDir(path))+1:]
	parent, pname := "", dir
	if j := strings.LastIndexByte(dir, '/'); j >= 0 {
		parent, pname = dir[:j], dir[j+1:]
	}
	for _, e := range [][2]string{{dir, name}, {parent, pname}} {
		b := tx.Bucket(bDirs).Bucket([]byte("/" + e[0]))
		if b == nil {
			return fmt.Errorf("no directory %q", e[0])
		}
		if err := b.Put([]byte(e[1]), entryValue(0o100644, randHash())); err != nil {
			return err
		}
		hv := append([]byte(nil), tx.Bucket(bDirHash).Get([]byte("/"+e[0]))...)
		h := randHash()
		copy(hv, h[:])
		if err := tx.Bucket(bDirHash).Put([]byte("/"+e[0]), hv); err != nil {
			return err
		}
	}
	if err := boltPutSummary(tx, path); err != nil {
		return err
	}
	ib := tx.Bucket(bIndex)
	var ie statecache.IndexEntry
	if !decodeIndex(ib.Get([]byte(path)), &ie) {
		return fmt.Errorf("no index entry of %s", path)
	}
	ie.Mtime++
	ie.Blob = randHash()
	return ib.Put([]byte(path), encodeIndex(nil, &ie))
}

// boltOp is one single-process operation on the bbolt file.
func boltOp(o *opts) (childResult, error) {
	var r childResult
	t := time.Now()
	switch o.op {
	case "b-read", "b-read-sums", "b-read-trees", "b-path", "b-id":
		db, err := bolt.Open(boltReadPath(o.dir), 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			return r, err
		}
		r.OpenMs = msSince(t)
		err = db.View(func(tx *bolt.Tx) error {
			switch o.op {
			case "b-read", "b-read-sums", "b-read-trees":
				n, err := boltReadAll(tx, o.op != "b-read-sums", o.op != "b-read-trees")
				r.N = n
				return err
			}
			t1 := time.Now()
			var v []byte
			if o.op == "b-path" {
				v = tx.Bucket(bSums).Get([]byte(o.path))
			} else {
				// By id: orch names a task's file after its id, so the
				// first key at or after dir/id is the task's.
				prefix := []byte(taskDir(o.path) + "/" + o.id)
				cur := tx.Bucket(bSums).Cursor()
				for k, val := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, val = cur.Next() {
					if statecache.NamedFor(taskDir(o.path), string(k), o.id) {
						v = val
						break
					}
				}
			}
			var s statecache.Summary
			if v != nil && readSummary(v, &s) && s.Task.ID == o.id {
				r.N = 1
			}
			r.LookupUs = float64(time.Since(t1).Nanoseconds()) / 1e3
			return nil
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return r, err
		}
	case "b-put", "b-put-nosync", "b-tr", "b-tr-nosync":
		db, err := bolt.Open(boltWritePath(o.dir), 0o600, &bolt.Options{NoSync: strings.HasSuffix(o.op, "-nosync")})
		if err != nil {
			return r, err
		}
		r.OpenMs = msSince(t)
		t1 := time.Now()
		err = db.Update(func(tx *bolt.Tx) error {
			r.N = o.expect
			if strings.HasPrefix(o.op, "b-tr") {
				return boltTransition(tx, o.path)
			}
			return boltPutSummary(tx, o.path)
		})
		r.Ms = msSince(t1)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		return r, err
	default:
		return r, fmt.Errorf("unknown operation %q", o.op)
	}
	r.Ms = msSince(t)
	return r, nil
}
