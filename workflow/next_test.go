package workflow

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// parseWorkflow parses workflow's own source files (not its tests).
func parseWorkflow(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}

// TestNoHintTextInWorkflow: workflow says what a refused caller can do next
// as a Next (an advice and its facts); cmd/orch words it. A composite
// literal that sets a field named Hint in workflow's own code would be hint
// text written here again, where cmd/orch cannot see it.
func TestNoHintTextInWorkflow(t *testing.T) {
	fset, files := parseWorkflow(t)
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			for _, el := range lit.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Hint" {
						t.Errorf("%s: sets Hint: say what comes next with a Next, and word it in cmd/orch", fset.Position(kv.Pos()))
					}
				}
			}
			return true
		})
	}
}

// TestAdvicesListsEveryAdvice: Advices (which cmd/orch's tests walk, so
// that every advice has words) holds each Advice constant once.
func TestAdvicesListsEveryAdvice(t *testing.T) {
	_, files := parseWorkflow(t)
	declared := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Advice" {
					for _, n := range vs.Names {
						declared[n.Name] = true
					}
				}
			}
		}
	}
	seen := map[Advice]bool{}
	for _, a := range Advices {
		if a == "" || seen[a] {
			t.Errorf("Advices holds %q twice or empty", a)
		}
		seen[a] = true
	}
	if len(declared) == 0 || len(declared) != len(Advices) {
		t.Errorf("%d Advice constants declared, %d in Advices", len(declared), len(Advices))
	}
}
