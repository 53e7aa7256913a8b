package gitstore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchangeFiles swaps the files at a and b in one step (renameat2
// RENAME_EXCHANGE): whatever b held, even a file saved a microsecond ago,
// survives under the name a. A file system without the flag gets the
// emulation.
func exchangeFiles(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return emulatedExchange(a, b)
	}
	return pathErr("exchange", a, b, err)
}

// renameNoReplace renames a to b unless b exists (os.ErrExist then).
func renameNoReplace(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return linkNoReplace(a, b)
	}
	return pathErr("rename", a, b, err)
}

// setLease sets or releases a lease on f (F_SETLEASE).
func setLease(f *os.File, kind int) error {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, kind)
	return err
}

// getLease returns the lease f holds (F_GETLEASE): F_UNLCK once a process
// has started to open the file for writing.
func getLease(f *os.File) (int, error) {
	return unix.FcntlInt(f.Fd(), unix.F_GETLEASE, 0)
}

// writerAttached reports whether any process has the file open for
// writing: a read lease is granted only when none has. known is false when
// the lease cannot be asked for (a file of another user without CAP_LEASE,
// leases switched off, a file system without them).
func writerAttached(f *os.File) (attached, known bool) {
	switch err := setLease(f, unix.F_RDLCK); {
	case err == nil:
		_ = setLease(f, unix.F_UNLCK)
		return false, true
	case errors.Is(err, unix.EAGAIN):
		return true, true
	}
	return false, false
}
