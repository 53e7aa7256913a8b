package testgit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// MemoryTempDir points TMPDIR (and so t.TempDir and testscript's work
// directories) at a new directory in /dev/shm when the machine has that
// memory file system with room to spare (memMinFree), and returns what removes it
// and puts TMPDIR back. The tests' scratch repositories are tens of
// thousands of small files made and deleted; on a disk file system that was
// most of the suite's system time. ORCH_TEST_TMPDIR=disk keeps TMPDIR as it is. The e2e tests, which
// test durability and a full disk, do not call it. The directory's name
// carries the process ID, so that the directories of test runs that were
// killed (an interrupted go test) are removed by the next run instead of
// holding memory until a reboot.
func MemoryTempDir() (cleanup func()) {
	keep := func() {}
	if os.Getenv("ORCH_TEST_TMPDIR") == "disk" {
		return keep
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || uint64(st.Bavail)*uint64(st.Bsize) < memMinFree {
		return keep // none, or a small one (a container's 64 MB)
	}
	removeOrphans()
	dir, err := os.MkdirTemp("/dev/shm", fmt.Sprintf("orch-test-%d-", os.Getpid()))
	if err != nil {
		return keep
	}
	old, had := os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", dir)
	return func() {
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
		os.RemoveAll(dir)
	}
}

// removeOrphans removes the /dev/shm/orch-test-<pid>-* directories of
// processes that are gone.
func removeOrphans() {
	dirs, _ := filepath.Glob("/dev/shm/orch-test-*-*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), "orch-test-"), "-", 2)[0])
		if err == nil && pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
}

// memMinFree is the room /dev/shm must have for the tests' repositories.
const memMinFree = 2 << 30
