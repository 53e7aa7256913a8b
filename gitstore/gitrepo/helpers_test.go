package gitrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orch-tool/orch/internal/testgit"
)

// TestMain gives every git process of the package's tests a private,
// predictable configuration (internal/testgit).
func TestMain(m *testing.M) { testgit.Main(m, "gitrepo-home-") }

func gitCmd(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return testgit.Git(t, dir, args...)
}

func gitRun(dir string, env []string, stdin string, args ...string) (string, error) {
	return testgit.Run(dir, env, stdin, args...)
}

func realPath(t testing.TB, p string) string { t.Helper(); return testgit.RealPath(t, p) }
func makeRepo(t testing.TB) string           { t.Helper(); return testgit.MakeRepo(t) }
func makeBareRepo(t testing.TB) string       { t.Helper(); return testgit.MakeBareRepo(t) }

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o666); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// revParse returns the commit a rev names, or "" when it does not exist.
func revParse(dir, rev string) string {
	out, err := gitRun(dir, nil, "", "rev-parse", "-q", "--verify", rev)
	if err != nil {
		return ""
	}
	return out
}

// fsck runs git fsck --strict and fails on any error it reports.
func fsck(t testing.TB, dir string) {
	t.Helper()
	out, err := gitRun(dir, nil, "", "fsck", "--strict", "--no-progress")
	if err != nil {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, "dangling ") {
			t.Fatalf("git fsck --strict: %s", out)
		}
	}
}
