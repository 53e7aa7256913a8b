package gitrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/orch-tool/orch/internal/testgit"
)

// The git cat-file that ReadBlobs starts does not outlive an orch killed
// with SIGKILL in the middle of reading: a child test process reads, stops
// in its first callback (git blocks writing the rest), and is killed.
func TestCatFileDiesWithOrch(t *testing.T) {
	if dir := os.Getenv("ORCH_CATFILE_REPO"); dir != "" {
		objs := NewObjectStore(filepath.Join(dir, ".git"))
		var hs []plumbing.Hash
		for _, s := range strings.Fields(os.Getenv("ORCH_CATFILE_BLOBS")) {
			hs = append(hs, plumbing.NewHash(s))
		}
		objs.catFileBlobs(hs, func(int, []byte, error) {
			if err := os.WriteFile(filepath.Join(dir, "reading"), []byte("yes\n"), 0o666); err != nil {
				panic(err)
			}
			time.Sleep(time.Hour)
		})
		return
	}
	dir := testgit.MakeRepo(t)
	objs := NewObjectStore(filepath.Join(dir, ".git"))
	var ids []string
	for i := range batchReadMin {
		h, err := objs.Write(plumbing.BlobObject, []byte(strings.Repeat(fmt.Sprintf("blob %d\n", i), 200)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, h.String())
	}
	exe, _ := os.Executable()
	attr := &os.ProcAttr{Env: append(os.Environ(), "ORCH_CATFILE_REPO="+dir, "ORCH_CATFILE_BLOBS="+strings.Join(ids, " ")),
		Files: []*os.File{nil, os.Stderr, os.Stderr}}
	child, err := os.StartProcess(exe, []string{exe, "-test.run=^TestCatFileDiesWithOrch$"}, attr)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, "reading")); err == nil {
			break
		}
		if i == 500 {
			_ = child.Kill()
			t.Fatal("the child never read a blob")
		}
		time.Sleep(20 * time.Millisecond)
	}
	git := childrenOf(child.Pid)
	if len(git) != 1 {
		_ = child.Kill()
		t.Fatalf("the child runs %d processes, want its git cat-file", len(git))
	}
	_ = child.Kill()
	_, _ = child.Wait()
	for i := 0; ; i++ {
		if !running(git[0]) {
			return
		}
		if i == 250 {
			_ = syscall.Kill(git[0], syscall.SIGKILL)
			t.Fatalf("git cat-file (pid %d) outlived the orch that started it", git[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, state, ok := procStat(p); ok && ppid == pid && state != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != 'Z'
}

// procStat reads a process's parent and state from /proc/<pid>/stat.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if i < 0 || len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}
