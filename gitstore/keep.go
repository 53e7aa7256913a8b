package gitstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// editsDir is the directory of the private state (<git common dir>/orch/)
// that keeps text a person gave and a failed command did not commit.
const editsDir = "edits"

// KeepText keeps text a person gave that a failed command did not commit
// (an edited file, what came on stdin, what was typed into the board), in
// privDir's edits/, else beside the system's temporary files, named
// <time>-<name>; a copy made in the same instant gets a number after the
// time rather than overwriting the other. It returns the path, "" when
// nothing could be written.
func KeepText(privDir, name string, data []byte) string {
	stamp := time.Now().UTC().Format("20060102T150405.000Z")
	dirs := []string{filepath.Join(os.TempDir(), "orch-edits")}
	if privDir != "" {
		dirs = append([]string{filepath.Join(privDir, editsDir)}, dirs...)
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			continue
		}
		for n := 0; n < 100; n++ {
			base := stamp + "-" + name
			if n > 0 {
				base = stamp + "." + strconv.Itoa(n) + "-" + name
			}
			p := filepath.Join(dir, base)
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			if err != nil {
				break
			}
			_, werr := f.Write(data)
			if err := errors.Join(werr, f.Close()); err != nil {
				_ = os.Remove(p)
				break
			}
			return p
		}
	}
	return ""
}
