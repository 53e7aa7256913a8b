package gitstore

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cName returns name, from eachName, with the NUL byte that follows it in
// its getdents buffer: a C string for fstatat without a copy. (eachName
// passes only names the kernel terminated.)
func cName(name string, _ []byte) []byte {
	return unsafe.Slice(unsafe.StringData(name), len(name)+1)
}

// countFiles counts the names of a directory that maybeMirrored accepts and
// that may be regular files (by the type getdents gives, when it gives
// one), listing it into buf.
func countFiles(fd int, dir string, buf []byte) (count int, leftovers bool) {
	readDirents(fd, buf, func(name string, _ uint64, typ byte) {
		if (typ == unix.DT_REG || typ == unix.DT_UNKNOWN) && maybeMirrored(dir, name) {
			count++
		} else if name[0] == '.' && isViewTemp(name) {
			leftovers = true
		}
	})
	return count, leftovers
}

// eachName calls fn with every name of a directory and its inode number;
// name is only valid during the call.
func eachName(fd int, fn func(name string, ino uint64)) {
	readDirents(fd, make([]byte, 32<<10), func(name string, ino uint64, _ byte) { fn(name, ino) })
}

// readDirents lists a directory into buf, calling fn with each entry's
// name (a string over buf, valid during the call and followed by its NUL
// byte, see cName), inode number and type.
func readDirents(fd int, buf []byte, fn func(name string, ino uint64, typ byte)) {
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil || n <= 0 {
			return
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8,
		// name NUL-terminated.
		for off := 0; off+19 < n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen <= 19 || off+reclen > n {
				break
			}
			ino := binary.NativeEndian.Uint64(buf[off:])
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			off += reclen
			if ino == 0 {
				continue
			}
			for i, c := range name {
				if c == 0 {
					if i > 0 {
						fn(unsafe.String(&name[0], i), ino, typ)
					}
					break
				}
			}
		}
	}
}
