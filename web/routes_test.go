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
