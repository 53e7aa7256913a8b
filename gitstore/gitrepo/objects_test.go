package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/internal/testgit"
)

func TestHashBlobMatchesGit(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	for _, s := range []string{"", "a\n", strings.Repeat("x", 70000), "---\nid: T-1\n---\n"} {
		out, err := testgit.Run(dir, nil, s, "hash-object", "--stdin")
		if s == "" {
			out, err = testgit.Run(dir, nil, "", "hash-object", os.DevNull)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := HashBlob([]byte(s)).String(); got != out {
			t.Errorf("HashBlob(%d bytes) = %s, git says %s", len(s), got, out)
		}
	}
}

// TestStoredObjectsReadByGit writes objects of sizes around the 65,535-byte
// limit of a stored deflate block and has git and orch's own reader read
// them back byte for byte; git fsck checks the zlib streams.
func TestStoredObjectsReadByGit(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	objs := NewObjectStore(filepath.Join(dir, ".git"))
	for _, n := range []int{0, 1, 65535 - 8, 65535 - 7, 65535, 65536, 2*65535 + 3, 700000} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*7 + i/251)
		}
		h, err := objs.Write(plumbing.BlobObject, data)
		if err != nil {
			t.Fatal(err)
		}
		if h != HashBlob(data) {
			t.Fatalf("%d bytes: id %s, want %s", n, h, HashBlob(data))
		}
		got, err := testgit.Run(dir, nil, "", "cat-file", "-s", h.String())
		if err != nil || got != fmt.Sprint(n) {
			t.Fatalf("%d bytes: git cat-file -s = %q, %v", n, got, err)
		}
		back, err := objs.Read(plumbing.BlobObject, h)
		if err != nil || string(back) != string(data) {
			t.Fatalf("%d bytes: read back %d bytes, %v", n, len(back), err)
		}
	}
	if out, err := testgit.Run(dir, nil, "", "fsck", "--strict", "--unreachable"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
}

// TestObjectWriteRacesPrunePacked: `git prune-packed` (run by git gc)
// removes the object fan-out directories it empties, at any moment. A
// loose object write must survive its directory vanishing under it.
func TestObjectWriteRacesPrunePacked(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	objs := NewObjectStore(filepath.Join(dir, ".git"))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i := 0; i < 256; i++ {
				os.Remove(filepath.Join(objs.dir, fmt.Sprintf("%02x", i))) // only empty ones go
			}
		}
	}()
	n := 300
	if testing.Short() {
		n = 150
	}
	var written []plumbing.Hash
	for i := 0; i < n; i++ {
		h, err := objs.Write(plumbing.BlobObject, []byte(fmt.Sprintf("blob %d\n", i)))
		if err != nil {
			close(stop)
			<-done
			t.Fatalf("write %d: %v", i, err)
		}
		written = append(written, h)
	}
	close(stop)
	<-done
	for _, h := range written {
		if _, err := objs.Read(plumbing.BlobObject, h); err != nil {
			t.Fatalf("object %s lost: %v", h, err)
		}
	}
}

// orch's loose-object reader: git's compressed objects, orch's stored ones,
// a damaged one (its checksum fails: ErrObjectDamaged, never other bytes)
// and a type other than the one asked (missing, as go-git says).
func TestReadLooseObjects(t *testing.T) {
	t.Parallel()
	dir := testgit.MakeRepo(t)
	objs := NewObjectStore(filepath.Join(dir, ".git"))
	text := strings.Repeat("compressed by git\n", 5000)
	id, err := testgit.Run(dir, nil, text, "hash-object", "-w", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := objs.Read(plumbing.BlobObject, plumbing.NewHash(id)); err != nil || string(got) != text {
		t.Fatalf("git's object: %d bytes, %v", len(got), err)
	}
	if _, err := objs.Read(plumbing.TreeObject, plumbing.NewHash(id)); err == nil {
		t.Fatal("a blob read as a tree")
	} else if _, ok := err.(*ErrObjectMissing); !ok {
		t.Fatalf("a blob read as a tree: %T %v, want ErrObjectMissing", err, err)
	}
	h, err := objs.Write(plumbing.BlobObject, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p := objs.loosePath(h)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0x20 // one content byte of the stored block
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := objs.Read(plumbing.BlobObject, h)
	var damaged *ErrObjectDamaged
	if !errors.As(err, &damaged) {
		t.Fatalf("a damaged stored object: %d bytes, %v; want ErrObjectDamaged", len(got), err)
	}
}

// ReadBlobs answers what Read answers, blob by blob and in order, whether
// git cat-file reads them (packed and loose, deltified or not) or, without
// git, Read itself: a missing object and an object of another type give
// Read's errors.
func TestReadBlobs(t *testing.T) {
	dir := testgit.MakeRepo(t)
	objs := NewObjectStore(filepath.Join(dir, ".git"))
	var hs []plumbing.Hash
	for i := range batchReadMin {
		h, err := objs.Write(plumbing.BlobObject, []byte(strings.Repeat(fmt.Sprintf("task %d\n", i), 1+i%50)))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	// Half of them packed (deltified against each other), half loose.
	if _, err := testgit.Run(dir, nil, strings.Join(hashStrings(hs[:batchReadMin/2]), "\n")+"\n", "pack-objects", "-q", ".git/objects/pack/pack"); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs[:batchReadMin/2] {
		if err := os.Remove(objs.loosePath(h)); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := objs.Write(plumbing.TreeObject, nil)
	if err != nil {
		t.Fatal(err)
	}
	missing := plumbing.NewHash("0123456789012345678901234567890123456789")
	hs = append(hs, missing, tree, hs[3], hs[batchReadMin-1])
	check := func(name string) {
		t.Helper()
		next := 0
		objs.ReadBlobs(hs, func(i int, data []byte, err error) {
			if i != next {
				t.Fatalf("%s: blob %d answered at %d", name, i, next)
			}
			next++
			want, werr := objs.Read(plumbing.BlobObject, hs[i])
			if string(data) != string(want) || fmt.Sprintf("%T %v", err, err) != fmt.Sprintf("%T %v", werr, werr) {
				t.Errorf("%s: blob %d (%s): %q %v, Read says %q %v", name, i, hs[i], data, err, want, werr)
			}
		})
		if next != len(hs) {
			t.Errorf("%s: %d answers for %d blobs", name, next, len(hs))
		}
	}
	check("with git")
	if n := objs.catFileBlobs(hs, func(int, []byte, error) {}); n != len(hs) {
		t.Errorf("git cat-file answered %d of %d", n, len(hs))
	}
	t.Setenv("PATH", t.TempDir()) // no git: go-git reads them all
	check("without git")
}

func hashStrings(hs []plumbing.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}
