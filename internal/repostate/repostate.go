// Package repostate records what a failed orch command must leave alone in
// a repository (its files, for the end-to-end and script tests), and
// lists what changed between two such records.
package repostate

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// AddFiles records every regular file under dir, outside .git directories,
// as "file <path relative to dir>" -> content. It goes on past files it
// cannot read and returns the first such error.
func AddFiles(state map[string]string, dir string) error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			keep(err)
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				keep(err)
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			state["file "+rel] = string(b)
		}
		return nil
	})
	return first
}

// Diff lists, sorted, what changed from before to after: "removed: K",
// "changed: K" and "added: K" for each key K.
func Diff(before, after map[string]string) []string {
	var diffs []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			diffs = append(diffs, "removed: "+k)
		} else if w != v {
			diffs = append(diffs, "changed: "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, "added: "+k)
		}
	}
	sort.Strings(diffs)
	return diffs
}
