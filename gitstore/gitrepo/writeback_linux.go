package gitrepo

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing the file out now, without
// waiting (the batch's one flush then waits for all of them at once).
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
