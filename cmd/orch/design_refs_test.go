package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The project's design is docs/design.md, in numbered sections that the
// code, the help texts, the docs and the test scripts cite as
// "docs/design.md §N". The brief the project answers is not in the
// repository, so nothing may cite it.

// briefCitation is a citation of the brief (spelt in pieces, so that this
// file does not match itself).
var briefCitation = regexp.MustCompile(`\b` + "DESIGN" + `(?: §|\.md\b|'s\b)`)

// designCitation is a citation of docs/design.md's sections: "design.md §3",
// "docs/design.md §1.5 and §11", "docs/design.md §4, §5, §6". Group 1 holds
// the sections; a letter right after a number ("§4a") is a section that
// does not exist.
var designCitation = regexp.MustCompile(`design\.md (§\d+(?:\.\d+)*[a-z]?(?:(?:,? and |, | or )§\d+(?:\.\d+)*[a-z]?)*)`)

// sectionRef is one "§N" of a citation, or of docs/design.md's own text.
var sectionRef = regexp.MustCompile(`§(\d+(?:\.\d+)*[a-z]?)`)

// designHeading is a numbered heading of docs/design.md: "## 1. Storage",
// "### 1.2 Reconciling the view".
var designHeading = regexp.MustCompile(`^#{2,4} (\d+(?:\.\d+)*)\.? `)

// skipDirs are directories that hold no file of the project's own: git's,
// the view of a working copy's own queue, build and bench output.
var skipDirs = map[string]bool{".git": true, ".orchestrator": true, "bin": true, "node_modules": true, "out": true}

// designSections reads the numbered headings of docs/design.md (outside
// code blocks), and the section references of its own text ("§N", each with
// where it stands).
func designSections(t *testing.T, path string) (sections map[string]bool, refs [][2]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sections = map[string]bool{}
	fence := "" // the backticks that opened the code block we are in
	for i, line := range strings.Split(string(data), "\n") {
		where := "docs/design.md:" + strconv.Itoa(i+1)
		trimmed := strings.TrimSpace(line)
		if ticks := trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]; len(ticks) >= 3 {
			switch {
			case fence == "":
				fence = ticks
			case len(ticks) >= len(fence) && ticks == trimmed:
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if m := designHeading.FindStringSubmatch(line); m != nil {
			if sections[m[1]] {
				t.Errorf("%s: section §%s is numbered twice", where, m[1])
			}
			sections[m[1]] = true
		}
		for _, m := range sectionRef.FindAllStringSubmatch(line, -1) {
			refs = append(refs, [2]string{m[1], where})
		}
	}
	return sections, refs
}

// TestDesignCitations fails when a file of the repository cites the brief,
// or cites a section of docs/design.md that it does not have.
func TestDesignCitations(t *testing.T) {
	root := filepath.Join("..", "..")
	design := filepath.Join(root, "docs", "design.md")
	sections, own := designSections(t, design)
	if len(sections) == 0 {
		t.Fatalf("%s has no numbered sections", design)
	}
	var problems []string
	for _, r := range own {
		if !sections[r[0]] {
			problems = append(problems, r[1]+": refers to §"+r[0]+", which docs/design.md does not have")
		}
	}
	cited := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
			return nil // a binary file
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for i, line := range strings.Split(string(data), "\n") {
			where := rel + ":" + strconv.Itoa(i+1)
			if m := briefCitation.FindString(line); m != "" {
				problems = append(problems, where+": cites the brief ("+strings.TrimSpace(m)+"): cite docs/design.md §N")
			}
			for _, m := range designCitation.FindAllStringSubmatch(line, -1) {
				for _, s := range sectionRef.FindAllStringSubmatch(m[1], -1) {
					cited++
					if !sections[s[1]] {
						problems = append(problems, where+": cites docs/design.md §"+s[1]+", which docs/design.md does not have")
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited == 0 {
		t.Error("no file cites docs/design.md: the search is broken")
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}
