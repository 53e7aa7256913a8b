package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// internal/ holds ground helpers only: no package there imports one of
// orch's own outside internal/ (presentation lives in answer and
// termboard, the store in gitstore).
func TestInternalImportsNothingOfOrch(t *testing.T) {
	root := filepath.Join("..", "..", "internal")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/orch-tool/orch/") && !strings.HasPrefix(path, "github.com/orch-tool/orch/internal/") {
				t.Errorf("%s imports %s: internal/ is for ground helpers that import nothing of orch's", p, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
