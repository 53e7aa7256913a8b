package statecache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/gitstore/privfile"
)

// Two small caches of the archive sit beside the state cache: the archived
// done tasks' IDs (for dependencies) and the archived tasks' summaries (for
// orch list --all and the board). Each is one file framed as a head that
// names its format, the body, and the CRC-32 of both; a missing, damaged or
// other-format file is made again from the branch, so losing one costs
// time, never data.

// The archive caches' files in the private state directory, and their heads.
const (
	ArchivedDoneName      = "archived-done"
	archivedIDsMagic      = "orch archived ids 1\n"
	ArchivedSummariesName = "archived-summaries"
	archivedSumsMagic     = "orch archived summaries 1\n"
)

// readFramed returns the body of the file at path written with head; ok is
// false when it is missing, not a regular file (a FIFO there is refused,
// not waited on), of another head or damaged.
func readFramed(path, head string) (body []byte, ok bool) {
	b, err := privfile.Read(path)
	if err != nil || len(b) < len(head)+4 || string(b[:len(head)]) != head {
		return nil, false
	}
	if crc32.ChecksumIEEE(b[:len(b)-4]) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, false
	}
	return b[len(head) : len(b)-4 : len(b)-4], true
}

// writeFramed replaces the file at path with b (its head and body) and
// their CRC-32, under a temporary name first so that a reader sees the old
// file or the new one. A file that cannot be written is made again next
// time: errors are dropped.
func writeFramed(path string, b []byte) {
	_ = replaceFile(path, binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b)))
}

// ArchivedIDs is a set of task IDs read from one archive tree, sorted.
type ArchivedIDs struct {
	Tree plumbing.Hash
	ids  []string
}

// Has reports whether id is in the set.
func (a *ArchivedIDs) Has(id string) bool {
	_, ok := slices.BinarySearch(a.ids, id)
	return ok
}

// newArchivedIDs is the set of tree whose IDs body holds, one a line.
func newArchivedIDs(tree plumbing.Hash, body []byte) *ArchivedIDs {
	a := &ArchivedIDs{Tree: tree}
	if len(body) > 0 {
		a.ids = strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	}
	return a
}

// LoadArchivedIDs reads the IDs cached at path if they were read from tree,
// and otherwise reads them with list and writes the cache. Nil: list
// failed. Layout: the head, the 20-byte id of the tree, the IDs in byte
// order, each ended by a newline.
func LoadArchivedIDs(path string, tree plumbing.Hash, list func() ([]string, error)) *ArchivedIDs {
	if body, ok := readFramed(path, archivedIDsMagic); ok && len(body) >= len(tree) && bytes.Equal(body[:len(tree)], tree[:]) {
		return newArchivedIDs(tree, body[len(tree):])
	}
	ids, err := list()
	if err != nil {
		return nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	b := append([]byte(archivedIDsMagic), tree[:]...)
	for _, id := range ids {
		b = append(append(b, id...), '\n')
	}
	writeFramed(path, b)
	return &ArchivedIDs{Tree: tree, ids: ids}
}

// ReadArchivedSummaries loads the archived summaries cached at path (nil
// when the file is missing, damaged or of another format). Layout: the
// head, the state cache's format, then each summary as the state cache
// encodes it.
func ReadArchivedSummaries(path string) []*Summary {
	body, ok := readFramed(path, archivedSumsMagic+SummaryFormat)
	if !ok {
		return nil
	}
	var out []*Summary
	for len(body) > 0 {
		s := &Summary{}
		if body, ok = ReadSummary(body, s); !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// WriteArchivedSummaries replaces the archived summaries' cache at path.
func WriteArchivedSummaries(path string, sums []*Summary) {
	b := []byte(archivedSumsMagic + SummaryFormat)
	for _, s := range sums {
		b = AppendSummary(b, s)
	}
	writeFramed(path, b)
}
