package gitstore

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readNames lists a directory. The names are not copied: each is a string
// over the getdents buffer it came in (a fresh buffer per call, never
// written again), which at 10,000 tasks saves ten thousand allocations and
// the pages they would fault in.
func readNames(fd int) []string {
	names := make([]string, 0, 1024)
	for {
		buf := make([]byte, 128<<10)
		n, err := unix.ReadDirent(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8,
		// name NUL-terminated.
		for off := 0; off+19 < n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen <= 19 || off+reclen > n {
				break
			}
			ino := binary.NativeEndian.Uint64(buf[off:])
			name := buf[off+19 : off+reclen]
			terminated := false
			for i, c := range name {
				if c == 0 {
					name, terminated = name[:i], true
					break
				}
			}
			off += reclen
			if ino == 0 || !terminated || len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			names = append(names, unsafe.String(&name[0], len(name)))
		}
	}
	return names
}

// cName returns name, from readNames, with the NUL byte that follows it in
// its getdents buffer: a C string for fstatat without a copy. (readNames
// keeps only names the kernel terminated.)
func cName(name string, _ []byte) []byte {
	return unsafe.Slice(unsafe.StringData(name), len(name)+1)
}

// countFiles counts the names of a directory that MirroredName accepts and
// that may be regular files (by the type getdents gives, when it gives
// one), listing it into buf.
func countFiles(fd int, dir string, buf []byte) int {
	count := 0
	for {
		n, err := unix.ReadDirent(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		for off := 0; off+19 < n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen <= 19 || off+reclen > n {
				break
			}
			ino := binary.NativeEndian.Uint64(buf[off:])
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			off += reclen
			if ino == 0 || typ != unix.DT_REG && typ != unix.DT_UNKNOWN {
				continue
			}
			for i, c := range name {
				if c == 0 {
					if i > 0 && MirroredName(dir, unsafe.String(&name[0], i)) {
						count++
					}
					break
				}
			}
		}
	}
	return count
}
