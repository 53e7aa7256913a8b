package gitrepo

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
)

// ErrUnsupportedRepo is a repository orch cannot write without corrupting
// it: a SHA-256 object format (orch writes SHA-1 objects), reftable ref
// storage (orch writes loose refs and packed-refs), a repository format
// version above 1, or an extension orch does not know. Every command stops
// before anything is written.
type ErrUnsupportedRepo struct {
	Config string // the config file that says so
	Key    string // "extensions.objectformat", "core.repositoryformatversion"
	Value  string
	Why    string
}

func (e *ErrUnsupportedRepo) Error() string {
	return fmt.Sprintf("%s sets %s = %s: %s; orch changes nothing in this repository", e.Config, e.Key, e.Value, e.Why)
}

// knownExtensions are the repository extensions orch can live with, and the
// values it accepts ("" for any). git's own list is in
// Documentation/config/extensions.txt; an extension missing here stops
// orch, since git itself refuses repositories with extensions it does not
// know (a newer git may have added one that changes what a write means).
var knownExtensions = map[string][]string{
	"objectformat":    {"sha1"},  // orch hashes and writes SHA-1 objects
	"refstorage":      {"files"}, // orch writes loose refs and packed-refs
	"noop":            nil,
	"noop-v1":         nil,
	"preciousobjects": nil, // orch never deletes objects
	"partialclone":    nil, // orch reads only the objects of its own branch
	"worktreeconfig":  nil, // config.worktree files: orch reads the common config
}

// readCommonConfig reads the repository's config file with go-git's
// parser (quoting, escapes, subsections, the last value wins; includes are
// not followed: the keys orch reads live in the file itself). No file is an
// empty config: git works without one, and so does orch.
func readCommonConfig(path string) (*gitconfig.Config, error) {
	cfg := gitconfig.New()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return cfg, nil
	}
	if err != nil {
		return nil, err
	}
	if err := gitconfig.NewDecoder(bytes.NewReader(data)).Decode(cfg); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return cfg, nil
}

// checkFormat refuses what orch cannot write correctly, by the
// repository's config (path names it in messages).
func checkFormat(path string, cfg *gitconfig.Config) error {
	version := 0
	if v := strings.TrimSpace(section(cfg, "core").Option("repositoryformatversion")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1 {
			return &ErrUnsupportedRepo{Config: path, Key: "core.repositoryformatversion", Value: v, Why: "orch knows repository format versions 0 and 1"}
		}
		version = n
	}
	if version == 0 || !cfg.HasSection("extensions") {
		// In version 0, git ignores extensions (they may be left by an
		// old tool); so does orch.
		return nil
	}
	ext := section(cfg, "extensions")
	keys := []string{}
	values := map[string]string{}
	for _, o := range ext.Options {
		k := strings.ToLower(o.Key)
		if _, seen := values[k]; !seen {
			keys = append(keys, k)
		}
		values[k] = strings.ToLower(strings.TrimSpace(o.Value))
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := values[k]
		allowed, known := knownExtensions[k]
		switch {
		case !known:
			return &ErrUnsupportedRepo{Config: path, Key: "extensions." + k, Value: v, Why: "orch does not know this repository extension, and writing without understanding it could corrupt the repository"}
		case len(allowed) > 0 && !slices.Contains(allowed, v):
			why := fmt.Sprintf("orch supports only %s", strings.Join(allowed, ", "))
			switch k {
			case "objectformat":
				why = "orch writes SHA-1 objects, and git would read them as corrupt in a " + v + " repository"
			case "refstorage":
				why = "orch writes loose refs and packed-refs, which git ignores in a " + v + " repository"
			}
			return &ErrUnsupportedRepo{Config: path, Key: "extensions." + k, Value: v, Why: why}
		}
	}
	return nil
}
