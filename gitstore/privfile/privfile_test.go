package privfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Read gives the whole file whatever its size relative to the buffer it
// sizes from the file's length, and refuses what is not a regular file
// without blocking on it.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 511, 512, 513, 4096, 70_000} {
		p := filepath.Join(dir, "f")
		want := bytes.Repeat([]byte("x"), n)
		if err := os.WriteFile(p, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Read(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%d bytes: read %d bytes, %v", n, len(got), err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	var nr *ErrNotRegular
	if _, err := Read(fifo); !errors.As(err, &nr) {
		t.Errorf("a FIFO: %v, want ErrNotRegular", err)
	}
	if _, err := Read(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want not exist", err)
	}
}
