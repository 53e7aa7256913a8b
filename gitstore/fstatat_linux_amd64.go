package gitstore

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatat is unix.Fstatat (no symlinks followed) without its allocation of
// a NUL-terminated copy of the name, ten thousand times per view scan: name
// must end in a NUL byte. It is a raw system call, without telling the
// scheduler: the scheduler's bookkeeping around that many short calls was
// a visible part of every command's CPU time. The price is that a stat
// that waits for the disk (a cold inode) keeps its P meanwhile, which only
// the scan's own workers do.
func fstatat(dirfd int, name []byte, st *unix.Stat_t) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&name[0])), uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
