package testgit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Main runs a package's tests with every git process (and the code's own
// config look-ups) in a private home: Home's config, UTC, and none of the
// GIT_* variables that would point git elsewhere; their scratch
// repositories in memory where the machine allows (MemoryTempDir).
func Main(m *testing.M, prefix string) {
	cleanup := MemoryTempDir()
	home, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env, err := Home(home, "Test User", "test@example.com")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	os.Setenv("TZ", "UTC")
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_GLOBAL", "GIT_OBJECT_DIRECTORY",
		"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE",
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	os.RemoveAll(home)
	cleanup()
	os.Exit(code)
}

// Git runs git in dir and returns its trimmed stdout; it fails the test on
// a non-zero exit.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := Run(dir, nil, "", args...)
	if err != nil {
		t.Fatalf("git %s (in %s): %v", strings.Join(args, " "), dir, err)
	}
	return out
}

// Run runs git with extra environment and stdin.
func Run(dir string, env []string, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(stdout.String()), fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// RealPath resolves symlinks, so that paths from git and from the code
// compare.
func RealPath(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// MakeRepo creates a non-bare repository with one commit on main (a
// README) and returns its top directory.
func MakeRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RealPath(t, t.TempDir()), "repo")
	Git(t, "", "init", "-q", dir)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", "README.md")
	Git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// SetHome gives the test a private git home (see Home) through its
// environment, so that only the test's identity and config count.
func SetHome(t testing.TB, name, email string) {
	t.Helper()
	env, err := Home(t.TempDir(), name, email)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// EmptyRepo creates a non-bare repository whose one commit, base, is
// empty, and returns its top directory.
func EmptyRepo(t testing.TB) string {
	t.Helper()
	dir := RealPath(t, t.TempDir())
	Git(t, dir, "init", "-q")
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
	return dir
}

// MakeBareRepo creates an empty bare repository.
func MakeBareRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RealPath(t, t.TempDir()), "bare.git")
	Git(t, "", "init", "-q", "--bare", dir)
	return dir
}

// WriteFile writes content to path, making its directory.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o666); err != nil {
		t.Fatal(err)
	}
}

// ReadFile returns path's content.
func ReadFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// RevParse returns the commit a rev names, or "" when it does not exist.
func RevParse(dir, rev string) string {
	out, err := Run(dir, nil, "", "rev-parse", "-q", "--verify", rev)
	if err != nil {
		return ""
	}
	return out
}

// Fsck runs git fsck --strict and fails on any error it reports.
func Fsck(t testing.TB, dir string) {
	t.Helper()
	out, err := Run(dir, nil, "", "fsck", "--strict", "--no-progress")
	if err != nil {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, "dangling ") {
			t.Fatalf("git fsck --strict: %s", out)
		}
	}
}
