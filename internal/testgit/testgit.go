// Package testgit gives the tests of every package one private git home:
// a fixed identity and branch name, no system or user config, and no
// background work (gc, maintenance) that would race the tests.
package testgit

import (
	"fmt"
	"os"
	"path/filepath"
)

// config is the whole global git config of a test run.
func config(name, email string) string {
	return fmt.Sprintf("[user]\n\tname = %s\n\temail = %s\n[init]\n\tdefaultBranch = main\n"+
		"[advice]\n\tdetachedHead = false\n[gc]\n\tautoDetach = false\n[maintenance]\n\tauto = false\n", name, email)
}

// Home writes config into dir (created if need be) and returns the
// environment (KEY=VALUE) that makes git use it and nothing else.
func Home(dir, name, email string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitconfig"), []byte(config(name, email)), 0o666); err != nil {
		return nil, err
	}
	return []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, ".config"), "GIT_CONFIG_NOSYSTEM=1"}, nil
}
