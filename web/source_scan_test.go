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
// file of the package registers a route (a chi method called with a path);
// the instructor area it mounts registers its own in instructor/routes.go.
func TestRoutesInOnePlace(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	area, err := filepath.Glob("instructor/*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, area...)
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
			if name != "routes.go" && name != "instructor/routes.go" {
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

// TestEveryStringTableMerged: a feature's `var xxxStrings = page.Table{…}` is
// only seen by pages once it is in a list of tables: web's one
// page.NewStrings call in i18n.go, or the instructor area's Tables (which
// that call merges); one left out would show its keys raw.
func TestEveryStringTableMerged(t *testing.T) {
	for _, dir := range []string{".", "instructor"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
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
				cl, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				if typ, ok := cl.Type.(*ast.ArrayType); ok { // []page.Table{…}: a list of tables
					if sel, ok := typ.Elt.(*ast.SelectorExpr); ok && sel.Sel.Name == "Table" {
						for _, a := range cl.Elts {
							if id, ok := a.(*ast.Ident); ok {
								merged[id.Name] = true
							}
						}
					}
				}
				return true
			})
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, sp := range gd.Specs {
					vs, ok := sp.(*ast.ValueSpec)
					if !ok {
						continue
					}
					for i, v := range vs.Values {
						if cl, ok := v.(*ast.CompositeLit); ok {
							if sel, ok := cl.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Table" {
								declared[vs.Names[i].Name] = true
							}
						}
					}
				}
			}
		}
		if len(declared) < 6 {
			t.Fatalf("%s: found %d string tables; the scan is broken", dir, len(declared))
		}
		for name := range declared {
			if !merged[name] {
				t.Errorf("%s: string table %s is in no list of tables (i18n.go's page.NewStrings, instructor.Tables)", dir, name)
			}
		}
	}
}
