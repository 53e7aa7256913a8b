package coordinator

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LogFile is one run's log: <privDir>/logs/<task>/<attempt>.log for an
// implementer's attempt, review-<n>.log for a reviewer's review claim.
type LogFile struct {
	Path     string    `json:"path"`
	Attempt  int       `json:"attempt"`
	Reviewer bool      `json:"reviewer,omitempty"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// Logs lists a task's logs on this clone, oldest first.
func Logs(privDir, task string) []LogFile {
	if task == "" || strings.ContainsAny(task, `/\`) || strings.HasPrefix(task, ".") {
		return nil
	}
	dir := filepath.Join(LogDir(privDir), task)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []LogFile
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		lf := LogFile{Path: filepath.Join(dir, e.Name())}
		if n, ok := strings.CutPrefix(name, "review-"); ok {
			lf.Reviewer, name = true, n
		}
		n, err := strconv.Atoi(name)
		if err != nil || n < 1 {
			continue
		}
		lf.Attempt = n
		if fi, err := e.Info(); err == nil {
			lf.Size, lf.Modified = fi.Size(), fi.ModTime()
		}
		out = append(out, lf)
	}
	sort.Slice(out, func(i, k int) bool {
		if !out[i].Modified.Equal(out[k].Modified) {
			return out[i].Modified.Before(out[k].Modified)
		}
		return out[i].Path < out[k].Path
	})
	return out
}

// LogPaths lists a task's log files, oldest first.
func LogPaths(privDir, task string) []string {
	var out []string
	for _, l := range Logs(privDir, task) {
		out = append(out, l.Path)
	}
	return out
}
