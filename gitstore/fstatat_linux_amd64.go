package gitstore

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatat is unix.Fstatat (no symlinks followed) without its allocation of
// a NUL-terminated copy of the name, ten thousand times per view scan: name
// must end in a NUL byte.
func fstatat(dirfd int, name []byte, st *unix.Stat_t) error {
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&name[0])), uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
