package gitrepo

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ObjectStore reads objects through go-git (loose and packed, with deltas
// and alternates) and writes new loose objects.
type ObjectStore struct {
	block    []byte // writeStored's buffer, reused for every object
	batching bool   // inside Batch.Flush: one flush for all objects
	dir      string // <common>/objects
	once     sync.Once
	storage  *filesystem.Storage
	lastNew  string // the last object file the current batch created
	syncDir  map[string]bool
}

// NewObjectStore is the object store of the repository whose common dir
// is commonDir.
func NewObjectStore(commonDir string) *ObjectStore {
	return &ObjectStore{dir: filepath.Join(commonDir, "objects"), syncDir: map[string]bool{}}
}

func (o *ObjectStore) gogit() *filesystem.Storage {
	o.once.Do(func() {
		fs := osfs.New(filepath.Dir(o.dir), osfs.WithBoundOS())
		o.storage = filesystem.NewStorageWithOptions(fs, cache.NewObjectLRU(2<<20), filesystem.Options{})
	})
	return o.storage
}

// ErrObjectMissing is a referenced object that the repository lacks.
type ErrObjectMissing struct{ Hash plumbing.Hash }

func (e *ErrObjectMissing) Error() string { return "object " + e.Hash.String() + " is missing" }

// Read returns the content of an object of the given type.
func (o *ObjectStore) Read(t plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	b, err := o.readObject(t, h)
	var missing *ErrObjectMissing
	if err != nil && !errors.As(err, &missing) {
		return nil, &ErrObjectDamaged{Hash: h, Type: t, Err: err}
	}
	return b, err
}

// ErrObjectDamaged is an object that is there but cannot be read (a
// truncated or corrupt loose object, a damaged pack).
type ErrObjectDamaged struct {
	Hash plumbing.Hash
	Type plumbing.ObjectType
	Err  error
}

func (e *ErrObjectDamaged) Error() string {
	return fmt.Sprintf("%s %s cannot be read (%v)", e.Type, e.Hash, e.Err)
}

func (e *ErrObjectDamaged) Unwrap() error { return e.Err }

func (o *ObjectStore) readObject(t plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	if b, ok, err := o.readLoose(t, h); ok || err != nil {
		return b, err
	}
	var obj plumbing.EncodedObject
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		obj, err = o.gogit().EncodedObject(t, h)
		if err == nil {
			break
		}
		if !errors.Is(err, plumbing.ErrObjectNotFound) {
			return nil, err
		}
		// A concurrent `git gc` may have just moved the object into a new
		// pack (or out of one): look again with fresh pack lists.
		o.reset()
		time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
	}
	if err != nil {
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return nil, &ErrObjectMissing{Hash: h}
		}
		return nil, err
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b := make([]byte, 0, obj.Size())
	buf := bytes.NewBuffer(b)
	if _, err := io.Copy(buf, r); err != nil {
		return nil, err
	}
	if int64(buf.Len()) != obj.Size() {
		return nil, fmt.Errorf("object %s: %d bytes, its header says %d", h, buf.Len(), obj.Size())
	}
	return buf.Bytes(), nil
}

// readLoose reads a loose object itself (ok false: there is none, go-git
// looks in the packs). go-git reads a loose object into a buffer that
// grows as it inflates, and readObject copied it again; and orch writes
// its objects as stored (uncompressed) deflate blocks, which need no
// inflating at all: the archive's shard trees that orch list consults cost
// more than the rest of the listing through go-git, and compress/zlib in a
// fresh process is slow to start. Stored blocks are copied out (with their
// Adler-32 checked); anything else is inflated with compress/zlib.
func (o *ObjectStore) readLoose(t plumbing.ObjectType, h plumbing.Hash) ([]byte, bool, error) {
	data, err := os.ReadFile(o.loosePath(h))
	if err != nil {
		return nil, false, nil // not loose (or not readable here): go-git decides
	}
	raw, ok := readStored(data)
	if !ok {
		zr, err := zlib.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, true, fmt.Errorf("object %s: %v", h, err)
		}
		raw, err = io.ReadAll(zr)
		zr.Close()
		if err != nil {
			return nil, true, fmt.Errorf("object %s: %v", h, err)
		}
	}
	nul := bytes.IndexByte(raw, 0)
	if nul < 0 {
		return nil, true, fmt.Errorf("object %s: no header", h)
	}
	typ, size, ok := strings.Cut(string(raw[:nul]), " ")
	n, perr := strconv.Atoi(size)
	if !ok || perr != nil || n != len(raw)-nul-1 {
		return nil, true, fmt.Errorf("object %s: header %q, %d bytes after it", h, raw[:nul], len(raw)-nul-1)
	}
	if t != plumbing.AnyObject && typ != t.String() {
		return nil, true, &ErrObjectMissing{Hash: h} // as go-git answers: no object of that type
	}
	return raw[nul+1:], true, nil
}

// readStored is the content of a zlib stream of stored deflate blocks, as
// writeStored writes them (ok false: another kind of stream, or damaged;
// compress/zlib then reads it and says what is wrong).
func readStored(z []byte) ([]byte, bool) {
	if len(z) < 2+5+4 || z[0] != 0x78 || (uint16(z[0])<<8|uint16(z[1]))%31 != 0 || z[1]&0x20 != 0 {
		return nil, false
	}
	var out []byte
	p := z[2:]
	for {
		if len(p) < 5 || p[0]&^1 != 0 { // only BFINAL may be set: BTYPE 00, stored
			return nil, false
		}
		final := p[0]&1 == 1
		n := int(binary.LittleEndian.Uint16(p[1:3]))
		if binary.LittleEndian.Uint16(p[3:5]) != ^uint16(n) || len(p) < 5+n {
			return nil, false
		}
		if out == nil {
			out = make([]byte, 0, len(z)) // the content is a little shorter than the stream
		}
		out = append(out, p[5:5+n]...)
		p = p[5+n:]
		if final {
			break
		}
	}
	if len(p) != 4 || binary.BigEndian.Uint32(p) != adler32.Checksum(out) {
		return nil, false
	}
	return out, true
}

func (o *ObjectStore) reset() {
	o.once = sync.Once{}
	o.storage = nil
}

func (o *ObjectStore) loosePath(h plumbing.Hash) string {
	s := h.String()
	return filepath.Join(o.dir, s[:2], s[2:])
}

// Has reports whether the object exists, loose or packed.
func (o *ObjectStore) Has(h plumbing.Hash) bool {
	if _, err := os.Stat(o.loosePath(h)); err == nil {
		return true
	}
	return o.gogit().HasEncodedObject(h) == nil
}

// hashObject computes the object id git would give data (go-git's hasher,
// with SHA-1 collision detection, as git's own).
func hashObject(t plumbing.ObjectType, data []byte) plumbing.Hash {
	return plumbing.ComputeHash(t, data)
}

// HashBlob is the blob id git would give data.
func HashBlob(data []byte) plumbing.Hash { return hashObject(plumbing.BlobObject, data) }

// pendingObject is an object hashed but not yet written.
type pendingObject struct {
	t    plumbing.ObjectType
	data []byte
	hash plumbing.Hash
}

// Batch collects the objects of one commit, so that they are compressed,
// written and fsynced in parallel instead of one after the other (a
// transition writes five or six, one of them the large tasks tree).
type Batch struct {
	objs *ObjectStore
	list []pendingObject
	seen map[plumbing.Hash]bool
}

func (o *ObjectStore) NewBatch() *Batch { return &Batch{objs: o, seen: map[plumbing.Hash]bool{}} }

// Add hashes an object and queues it.
func (b *Batch) Add(t plumbing.ObjectType, data []byte) plumbing.Hash {
	h := hashObject(t, data)
	if !b.seen[h] {
		b.seen[h] = true
		b.list = append(b.list, pendingObject{t, data, h})
	}
	return h
}

// fullFsync (ORCH_FSYNC=full) fsyncs every object file and directory, for
// filesystems that do not order metadata and data the way journaled ones do.
var fullFsync = os.Getenv("ORCH_FSYNC") == "full"

// Flush writes every queued object, in parallel, and makes them durable
// before it returns. As git's core.fsyncMethod=batch does, each file's
// writeback is started as it is written, and one fsync at the end flushes
// the journal and the disk cache for all of them (on ext4, xfs and btrfs a
// flush covers every earlier write and directory change). One flush instead
// of one per object and directory is most of what makes a transition cost
// less than git commit. ORCH_FSYNC=full syncs each file and directory.
func (b *Batch) Flush() error {
	b.objs.batching = true
	defer func() { b.objs.batching = false }()
	// One after the other: with a single flush at the end, writing in
	// parallel only makes goroutines fight over the journal and allocate
	// a compressor each.
	// The first failure ends the batch: on a full disk or a read-only
	// repository every later write fails the same way, and one clear error
	// beats one per object.
	list := b.list
	b.list = nil
	b.objs.lastNew = ""
	for _, p := range list {
		dir, err := b.objs.writeOne(p.t, p.data, p.hash)
		if dir != "" {
			b.objs.syncDir[dir] = true
		}
		if err != nil {
			return fmt.Errorf("writing the commit's objects: %w", err)
		}
	}
	if fullFsync {
		return nil // each file was synced; SyncDirs does the directories
	}
	b.objs.syncDir = map[string]bool{}
	return b.objs.flushAll()
}

// flushAll is the batch's one flush: fsync of the last object the batch
// created. Its inode is in the filesystem's running transaction, so the
// fsync commits that transaction, with every earlier object of the batch
// (as fsync of a new empty file does, which cost an inode made and freed
// per commit; ext4 then searches past recently freed inodes on every
// create). When the batch created nothing, a new empty file serves.
func (o *ObjectStore) flushAll() error {
	if o.lastNew != "" {
		if f, err := os.Open(o.lastNew); err == nil {
			err = f.Sync()
			f.Close()
			return err
		}
	}
	f, err := os.CreateTemp(o.dir, "tmp_flush_")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Write stores one object now.
func (o *ObjectStore) Write(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := hashObject(t, data)
	dir, err := o.writeOne(t, data, h)
	if dir != "" {
		o.syncDir[dir] = true
	}
	return h, err
}

// writeOne stores a loose object: compressed into a temp file in the object's
// fan-out directory, then linked into place. An object that already exists
// is only freshened, so that a concurrent `git gc` does not prune it
// between our write and the ref update that makes it reachable.
//
// orch writes loose objects itself rather than through go-git's object
// writer because that writer neither fsyncs nor freshens existing objects,
// and both are needed for "a transition that returned success survives
// power loss and git gc".
func (o *ObjectStore) writeOne(t plumbing.ObjectType, data []byte, h plumbing.Hash) (string, error) {
	path := o.loosePath(h)
	if _, err := os.Stat(path); err == nil {
		now := time.Now()
		_ = os.Chtimes(path, now, now)
		return "", nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "tmp_obj_")
	for i := 0; i < 100 && errors.Is(err, os.ErrNotExist); i++ {
		// A concurrent `git prune-packed` (git gc) removes fan-out
		// directories it emptied: make it again, as git itself does.
		if err = os.MkdirAll(dir, 0o777); err == nil {
			tmp, err = os.CreateTemp(dir, "tmp_obj_")
		}
	}
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := o.writeStored(tmp, []byte(t.String()+" "+strconv.Itoa(len(data))+"\x00"), data); err != nil {
		return "", err
	}
	if fullFsync || !o.batching {
		if err := tmp.Sync(); err != nil {
			return "", err
		}
	} else {
		startWriteback(tmp) // made durable by the batch's one flush
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	_ = os.Chmod(tmp.Name(), 0o444)
	// Link, not rename: if another process created the object meanwhile,
	// keep theirs (same content) and drop ours.
	err = os.Link(tmp.Name(), path)
	if err != nil && !errors.Is(err, os.ErrExist) {
		if rerr := os.Rename(tmp.Name(), path); rerr != nil {
			return "", rerr
		}
		ok = true
		o.lastNew = path
		return dir, nil
	}
	if err == nil {
		o.lastNew = path // our file (not another process's: see flushAll)
	}
	os.Remove(tmp.Name())
	ok = true
	return dir, nil
}

// writeStored writes an object's header and data as a zlib stream of
// stored (uncompressed) deflate blocks. Compression bought nothing worth its
// cost: a loose object takes whole disk blocks, so compressing the small
// blobs and commits of a transition saves no space, and Huffman-coding the
// one large object, the tasks tree that every transition rewrites, cost a
// visible share of the command's CPU to save a little space until git gc
// packs it, which recompresses it anyway. Stored blocks cost a copy and a checksum. git and
// go-git read such objects like any other (core.looseCompression=0 makes
// git write the same).
func (o *ObjectStore) writeStored(w io.Writer, hdr, data []byte) error {
	const maxBlock = 65535 // a stored block's largest length
	if o.block == nil {
		o.block = make([]byte, 0, 2+5+maxBlock+4)
	}
	sum := adler32.New()
	sum.Write(hdr)
	sum.Write(data)
	// The zlib header: deflate, the largest window, the "fastest" level,
	// with the check bits RFC 1950 asks for.
	b := append(o.block[:0], 0x78, 0x01)
	rest := len(hdr) + len(data)
	for {
		n := min(rest, maxBlock)
		rest -= n
		final := byte(0)
		if rest == 0 {
			final = 1
		}
		b = append(b, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		k := min(n, len(hdr)) // what is left of hdr comes first, then data
		b = append(b, hdr[:k]...)
		b = append(b, data[:n-k]...)
		hdr, data = hdr[k:], data[n-k:]
		if final == 1 {
			b = binary.BigEndian.AppendUint32(b, sum.Sum32())
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if final == 1 {
			return nil
		}
		b = b[:0]
	}
}

// SyncDirs makes the directory entries of new objects durable before the ref
// that makes them reachable is moved.
func (o *ObjectStore) SyncDirs() {
	var wg sync.WaitGroup
	for d := range o.syncDir {
		wg.Add(1)
		go func(d string) {
			defer wg.Done()
			syncDir(d)
		}(d)
	}
	wg.Wait()
	o.syncDir = map[string]bool{}
}

// HasObject reports whether the repository has an object (for a commit
// found in a remote-tracking ref or a reflog).
func (r *Repo) HasObject(h plumbing.Hash) bool { return NewObjectStore(r.CommonDir).Has(h) }
