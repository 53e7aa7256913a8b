package statecache

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"slices"

	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/gitstore/privfile"
)

// The cache journal. Rewriting the whole cache after every transition cost
// more than the transition; instead a command appends
// one batch describing what it changed, and a command that finds the
// journal large writes a new base. A batch is all or nothing: length,
// CRC-32, then its operations; a torn or damaged batch, and everything after
// it, is ignored (the cache then notices the branch moved and catches up,
// as it does when the file is missing).
const (
	journalSuffix = ".journal"
	journalMagic  = "orch-cache-journal v2\n"
)

// journalLimit is the journal size at which the next save writes a base.
func journalLimit(base int) int64 {
	// Every load replays the whole journal, and a new base costs one write
	// of the base's size: at a sixteenth, the base is rewritten every few
	// hundred commands and replay stays a small part of a load.
	l := int64(base / 16)
	if l < 64<<10 {
		l = 64 << 10
	}
	return l
}

// Journal operations.
const (
	opTip byte = iota + 1
	opDir
	opDirDel
	opSum
	opSumDel
	opIdx
	opIdxDel
	opDirDelta // a directory as changes to the entries it had when read
)

// A journal is replayed in two passes, so that the directories are ready
// before the summaries and the sync index are decoded (the view scan stats
// the files they list while the rest loads): replayDirs applies every
// batch's directory operations, replayRest the summary and index ones of
// the same batches. The two kinds never touch the same state, so the
// order within each kind is all that matters.
type journalReplay struct {
	data    []byte
	batches [][]byte // the whole, well-formed batches, in order
	end     int      // the offset after the last of them
}

// replayDirs reads the journal and, if it is of this base generation,
// applies the directory operations of its batches. A batch that is torn,
// damaged or malformed ends the replay. It returns the file as read (nil
// when there is none) and what replayRest needs.
func (c *Cache) replayDirs(path string) ([]byte, *journalReplay) {
	f, err := privfile.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if data == nil {
		data = []byte{}
	}
	if err != nil || len(data) < len(journalMagic)+8 || string(data[:len(journalMagic)]) != journalMagic ||
		!bytes.Equal(data[len(journalMagic):len(journalMagic)+8], c.gen[:]) {
		return data, nil
	}
	j := &journalReplay{data: data}
	pos := len(journalMagic) + 8
	for pos < len(data) {
		n, k := binary.Uvarint(data[pos:])
		if k <= 0 || n > uint64(len(data)) || uint64(len(data)-pos-k) < n+4 {
			break
		}
		sum := binary.LittleEndian.Uint32(data[pos+k:])
		batch := data[pos+k+4 : pos+k+4+int(n)]
		if checksum(batch) != sum || !c.applyBatch(batch, true) {
			break
		}
		j.batches = append(j.batches, batch)
		pos += k + 4 + int(n)
	}
	j.end = pos
	for p := range c.overlays {
		c.flushOverlay(p)
	}
	return data, j
}

// replayRest applies the summary and index operations of the batches
// replayDirs applied, and makes everything applied "as loaded": the next
// save appends only what changes after this point.
func (c *Cache) replayRest(j *journalReplay) {
	if j != nil {
		for _, b := range j.batches {
			c.applyBatch(b, false) // well formed: replayDirs parsed it whole
		}
		c.journalSize = int64(j.end)
		c.journalRaw = append(c.journalRaw, j.data)
	}
	for p, dt := range c.Dirs {
		c.loadedDirs[p] = dt
	}
	for p := range c.loadedDirs {
		if c.Dirs[p] == nil {
			delete(c.loadedDirs, p)
		}
	}
	c.loadedTip = c.Tip
}

// applyJournal replays the journal of this base generation.
func (c *Cache) applyJournal(path string) {
	_, j := c.replayDirs(path)
	c.replayRest(j)
}

// applyBatch parses one batch and applies its directory operations (dirs)
// or its summary and index operations (!dirs); it reports false (and
// applies nothing more) on a malformed one. A batch's operations are
// applied in order, so a malformed batch can leave part of itself applied
// only if its checksum matched, which a torn write cannot do.
func (c *Cache) applyBatch(b []byte, dirs bool) bool {
	d := &dec{buf: b}
	for d.pos < len(b) && d.err == nil {
		op := b[d.pos]
		d.pos++
		switch op {
		case opTip:
			tip, root := d.hash(), d.hash()
			if dirs {
				c.Tip, c.Root = tip, root
			}
		case opDir:
			path, dt := decodeDir(d)
			if dt == nil {
				return false
			}
			if dirs {
				c.flushOverlay(path)
				c.Dirs[path] = dt
			}
		case opDirDel:
			path := d.str()
			if dirs {
				c.flushOverlay(path)
				delete(c.Dirs, path)
			}
		case opDirDelta:
			path := d.str()
			if dirs && c.Dirs[path] == nil {
				return false
			}
			h := d.hash()
			nu, nd := d.uv(), d.uv()
			if nu > uint64(len(b)) || nd > uint64(len(b)) {
				return false
			}
			if !dirs {
				for j := uint64(0); j < nu; j++ {
					d.str()
					d.uv()
					d.hash()
				}
				for j := uint64(0); j < nd; j++ {
					d.str()
					d.uv()
				}
				continue
			}
			ov := c.overlay(path)
			ov.hash = h
			ups := make([]gitrepo.TreeEntry, 0, min(nu, 64))
			for j := uint64(0); j < nu; j++ {
				ups = append(ups, gitrepo.TreeEntry{Name: d.str(), Mode: uint32(d.uv()), Hash: d.hash()})
			}
			for j := uint64(0); j < nd; j++ {
				name := d.str()
				d.uv()                                                // its mode
				ov.put[name] = gitrepo.TreeEntry{Name: name, Mode: 0} // deleted
			}
			// After the deletions: a name in both changed kind (a file
			// became a directory), and the new entry stands.
			for _, en := range ups {
				ov.put[en.Name] = en
			}
		case opSum:
			r := &Record{}
			// The journal is read into the heap: its strings need no copy.
			if decodeSumRec(d, r); d.err != nil {
				return false
			}
			if !dirs {
				c.Summaries.put(r)
			}
		case opSumDel:
			path := d.str()
			if !dirs {
				c.Summaries.drop(path)
			}
		case opIdx:
			path := d.str()
			ie := &IndexEntry{}
			decodeIndexEntry(d, ie)
			if !dirs {
				c.Index.put(path, ie)
			}
		case opIdxDel:
			path := d.str()
			if !dirs {
				c.Index.drop(path)
			}
		default:
			return false
		}
	}
	return d.err == nil
}

// appendJournal appends a batch with everything that changed since the
// cache was read. It reports false when a base must be written instead.
func (c *Cache) appendJournal(path string) (bool, error) {
	e := &enc{b: make([]byte, 0, 4096)}
	if c.Tip != c.loadedTip {
		e.b = append(e.b, opTip)
		e.hash(c.Tip)
		e.hash(c.Root)
	}
	for p, dt := range c.Dirs {
		old := c.loadedDirs[p]
		if old == dt {
			continue
		}
		if old != nil {
			ups, dels := diffEntries(old.Entries, dt.Entries)
			e.b = append(e.b, opDirDelta)
			e.str(p)
			e.hash(dt.Hash)
			e.uv(uint64(len(ups)))
			e.uv(uint64(len(dels)))
			for _, en := range ups {
				e.str(en.Name)
				e.uv(uint64(en.Mode))
				e.hash(en.Hash)
			}
			for _, en := range dels {
				e.str(en.Name)
				e.uv(uint64(en.Mode))
			}
			continue
		}
		e.b = append(e.b, opDir)
		encodeDir(e, p, dt)
	}
	for p := range c.loadedDirs {
		if c.Dirs[p] == nil {
			e.b = append(e.b, opDirDel)
			e.str(p)
		}
	}
	for p := range c.delSummaries {
		if c.Summaries.Get(p) == nil {
			e.b = append(e.b, opSumDel)
			e.str(p)
		}
	}
	for _, r := range c.Summaries.added {
		if r.gone || r.rawBytes != nil {
			continue // replaced since, or as read
		}
		e.b = append(e.b, opSum)
		encodeSummary(e, r.s)
	}
	for p := range c.delIndex {
		if c.Index.Get(p) == nil {
			e.b = append(e.b, opIdxDel)
			e.str(p)
		}
	}
	scratch := &enc{b: make([]byte, 0, 256)}
	c.Index.eachDecoded(func(p string, ie *IndexEntry) {
		if ie.raw != nil {
			return // as read: every change to an entry clears raw
		}
		scratch.b = scratch.b[:0]
		encodeIndexEntry(scratch, ie)
		e.b = append(e.b, opIdx)
		e.str(p)
		e.b = append(e.b, scratch.b...)
	})
	if len(e.b) == 0 {
		return true, nil // nothing changed
	}
	// A batch that touches most of the cache is better written as a base.
	if int64(len(e.b)) > journalLimit(len(c.raw))/2 {
		return false, nil
	}
	var rec []byte
	rec = binary.AppendUvarint(rec, uint64(len(e.b)))
	rec = binary.LittleEndian.AppendUint32(rec, checksum(e.b))
	rec = append(rec, e.b...)
	f, err := privfile.Open(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	hdrLen := int64(len(journalMagic) + 8)
	off := st.Size()
	switch {
	case c.journalSize >= hdrLen && off >= c.journalSize:
		// Our journal; anything past what we read is a torn batch.
		off = c.journalSize
	case c.journalSize == 0:
		// No journal of this generation: start one.
		if err := f.Truncate(0); err != nil {
			return false, err
		}
		hdr := append([]byte(journalMagic), c.gen[:]...)
		if _, err := f.WriteAt(hdr, 0); err != nil {
			return false, err
		}
		off = hdrLen
	default:
		// The journal we read is gone or shorter: write a base instead.
		return false, nil
	}
	if _, err := f.WriteAt(rec, off); err != nil {
		return false, err
	}
	if err := f.Truncate(off + int64(len(rec))); err != nil {
		return false, err
	}
	c.journalSize = off + int64(len(rec))
	return true, nil
}

// diffEntries compares two sorted entry lists: the entries of b that are new
// or different, and those of a that b lacks.
func diffEntries(a, b []gitrepo.TreeEntry) (ups, dels []gitrepo.TreeEntry) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && gitrepo.CompareEntries(&a[i], &b[j]) < 0):
			dels = append(dels, a[i])
			i++
		case i == len(a) || gitrepo.CompareEntries(&a[i], &b[j]) > 0:
			ups = append(ups, b[j])
			j++
		default:
			if a[i].Hash != b[j].Hash || a[i].Mode != b[j].Mode {
				ups = append(ups, b[j])
			}
			i++
			j++
		}
	}
	return ups, dels
}

// dirOverlay collects a directory's deltas while a journal is replayed, so
// that a directory changed by many batches is rebuilt once, not once per
// batch.
type dirOverlay struct {
	hash [20]byte
	put  map[string]gitrepo.TreeEntry // mode 0: deleted
}

func (c *Cache) overlay(path string) *dirOverlay {
	if c.overlays == nil {
		c.overlays = map[string]*dirOverlay{}
	}
	ov := c.overlays[path]
	if ov == nil {
		ov = &dirOverlay{put: map[string]gitrepo.TreeEntry{}}
		c.overlays[path] = ov
	}
	return ov
}

// flushOverlay applies the collected deltas of a directory.
func (c *Cache) flushOverlay(path string) {
	ov := c.overlays[path]
	if ov == nil {
		return
	}
	delete(c.overlays, path)
	base := c.Dirs[path]
	if base == nil {
		return
	}
	// One pass: the base's entries that no delta names, merged with the
	// updated ones (a name deleted or changed, whatever its mode, takes
	// its old entry out).
	var ups []gitrepo.TreeEntry
	for _, en := range ov.put {
		if en.Mode != 0 {
			ups = append(ups, en)
		}
	}
	slices.SortFunc(ups, func(a, b gitrepo.TreeEntry) int { return gitrepo.CompareEntries(&a, &b) })
	// The base's entries, decoded as they are merged when the load has
	// not decoded them yet (see decodeDirEntries).
	n, at := len(base.Entries), func(i int) gitrepo.TreeEntry { return base.Entries[i] }
	if r, ok := c.rawDirs[path]; ok && r.undecoded && r.tree == base {
		d := &dec{buf: r.raw}
		_, _, n = decodeDirHead(d) // read whole by decodeCacheDirs
		at = func(int) gitrepo.TreeEntry { return d.entry() }
	}
	out := make([]gitrepo.TreeEntry, 0, n+len(ups))
	u := 0
	for i := range n {
		en := at(i)
		if _, changed := ov.put[en.Name]; changed {
			continue
		}
		for u < len(ups) && gitrepo.CompareEntries(&ups[u], &en) < 0 {
			out = append(out, ups[u])
			u++
		}
		out = append(out, en)
	}
	out = append(out, ups[u:]...)
	c.Dirs[path] = &gitrepo.Tree{Hash: ov.hash, Entries: out}
	// The base's bytes no longer describe the directory; keeping them
	// would keep the replaced tree too.
	delete(c.rawDirs, path)
}
