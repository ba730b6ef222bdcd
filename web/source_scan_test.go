package web

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoutesInOnePlace: routes.go says it is the whole URL space, so no other
// file of the package registers a route (a chi method called with a path).
func TestRoutesInOnePlace(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	register := map[string]bool{"Get": true, "Post": true, "Put": true, "Patch": true, "Delete": true,
		"Head": true, "Options": true, "Handle": true, "HandleFunc": true, "Method": true, "MethodFunc": true,
		"Mount": true, "Route": true, "Connect": true, "Trace": true}
	fset := token.NewFileSet()
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !register[sel.Sel.Name] {
				return true
			}
			var path string
			switch a := call.Args[0].(type) {
			case *ast.BasicLit:
				path = strings.Trim(a.Value, "\"`")
			case *ast.BinaryExpr: // staticPrefix+"*"
				if id, ok := a.X.(*ast.Ident); ok && id.Name == "staticPrefix" {
					path = "/"
				}
			}
			if !strings.HasPrefix(path, "/") {
				return true
			}
			if name != "routes.go" {
				t.Errorf("%s: route %s registered outside routes.go", fset.Position(call.Pos()), path)
			}
			seen++
			return true
		})
	}
	if seen < 40 {
		t.Errorf("found %d route registrations in routes.go; the scan is broken", seen)
	}
}

// TestEveryStringTableMerged: a feature's `var xxxStrings = uiTable{…}` is
// only seen by pages once it is in mergeStrings' list in i18n.go; one left
// out would show its keys raw.
func TestEveryStringTableMerged(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	declared, merged := map[string]bool{}, map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, v := range n.Values {
					if cl, ok := v.(*ast.CompositeLit); ok {
						if id, ok := cl.Type.(*ast.Ident); ok && id.Name == "uiTable" {
							declared[n.Names[i].Name] = true
						}
					}
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "mergeStrings" {
					for _, a := range n.Args {
						if id, ok := a.(*ast.Ident); ok {
							merged[id.Name] = true
						}
					}
				}
			}
			return true
		})
	}
	if len(declared) < 10 {
		t.Fatalf("found %d string tables; the scan is broken", len(declared))
	}
	for name := range declared {
		if !merged[name] {
			t.Errorf("string table %s is not in mergeStrings' list (i18n.go)", name)
		}
	}
}
