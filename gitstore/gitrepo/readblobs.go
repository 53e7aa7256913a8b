package gitrepo

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// batchReadMin is the number of blobs from which ReadBlobs asks one git
// cat-file --batch for them. go-git resolves each deltified object in a
// pack from its base chain again, unless the base is still in its small
// object cache, where git, with its delta base cache, reads a whole pack's
// blobs many times faster (bench/README.md). Under a few hundred blobs
// starting git costs more than it saves.
const batchReadMin = 500

// ReadBlobs reads the blobs hs and calls fn with each one's content, or the
// error Read gives, in the order given. Many are read through git cat-file
// --batch when git can be started; whatever that does not answer (a
// missing or damaged object, another type, git failing) goes through Read.
func (o *ObjectStore) ReadBlobs(hs []plumbing.Hash, fn func(i int, data []byte, err error)) {
	done := 0
	if len(hs) >= batchReadMin {
		done = o.catFileBlobs(hs, fn)
	}
	for i := done; i < len(hs); i++ {
		data, err := o.Read(plumbing.BlobObject, hs[i])
		fn(i, data, err)
	}
}

// catFileBlobs reads hs from one git cat-file --batch, in order, as far as
// git answers them: it returns how many it passed to fn. The process is
// gone when it returns.
func (o *ObjectStore) catFileBlobs(hs []plumbing.Hash, fn func(i int, data []byte, err error)) int {
	cmd := exec.Command("git", "--git-dir", filepath.Dir(o.dir), "cat-file", "--batch")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0
	}
	if err := cmd.Start(); err != nil {
		return 0 // no git here: go-git reads them all
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill() // when it stopped answering; a finished one is gone already
		_ = cmd.Wait()
	}()
	go func() {
		w := bufio.NewWriterSize(stdin, 64<<10)
		for _, h := range hs {
			_, _ = w.WriteString(h.String() + "\n")
		}
		_ = w.Flush()
		_ = stdin.Close() // git exits once it has answered the last
	}()
	r := bufio.NewReaderSize(stdout, 64<<10)
	for i, h := range hs {
		line, err := r.ReadString('\n')
		if err != nil {
			return i
		}
		// "<id> blob <size>", then the content and a newline; or
		// "<id> missing" (or another type): Read gives the error.
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != h.String() {
			return i
		}
		if len(f) != 3 {
			data, err := o.Read(plumbing.BlobObject, h)
			fn(i, data, err)
			continue
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 {
			return i
		}
		data := make([]byte, n+1)
		if _, err := io.ReadFull(r, data); err != nil || data[n] != '\n' {
			return i
		}
		if f[1] != "blob" {
			data, err := o.Read(plumbing.BlobObject, h)
			fn(i, data, err)
			continue
		}
		fn(i, data[:n:n], nil)
	}
	return len(hs)
}
