package workflow

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/orch-tool/orch/gitstore/privfile"
	"github.com/orch-tool/orch/gitstore/statecache"
)

// The caches workflow keeps in the private state directory (fields,
// archived-done, archived-summaries) share one framing: a head that names
// the format, the body, and the CRC-32 of both. A missing, damaged or
// other-format file is made again; losing one costs time, never data.

// readCacheFile returns the body of the cache file at path written with
// head; ok is false when it is missing, not a regular file (a FIFO there
// is refused, not waited on), of another head or damaged.
func readCacheFile(path, head string) (body []byte, ok bool) {
	body, _, ok = readCacheFileSum(path, head)
	return body, ok
}

// readCacheFileSum is readCacheFile that also returns the file's CRC-32,
// by which a file that depends on it names it.
func readCacheFileSum(path, head string) (body []byte, sum uint32, ok bool) {
	b, err := privfile.Read(path)
	if err != nil || len(b) < len(head)+4 || string(b[:len(head)]) != head {
		return nil, 0, false
	}
	sum = binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(b[:len(b)-4]) != sum {
		return nil, 0, false
	}
	return b[len(head) : len(b)-4 : len(b)-4], sum, true
}

// writeCacheFile replaces the cache file at path with b (its head and
// body) and their CRC-32.
func writeCacheFile(path string, b []byte) {
	replaceCacheFile(path, binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b)))
}

// replaceCacheFile writes a cache file whole, under a temporary name
// first, so that a reader sees the old file or the new one; the name is
// the state cache's temporary one, so that one a killed process left is
// removed like the state cache's. A cache that cannot be written is made
// again next time: errors are dropped.
func replaceCacheFile(path string, b []byte) {
	f, err := os.CreateTemp(filepath.Dir(path), statecache.TempPrefix)
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
}
