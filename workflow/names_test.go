package workflow

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestConstantNamesMatchValues holds the five definitions to one name per
// thing: a state constant is its workflow's name followed by the state's
// name in camel case (PrepareImportStart = "import_start"), an event
// constant is Event followed by the event's name (EventMetadataVerified =
// "metadata_verified"). The values are persistence keys; a constant that
// says something else invites a reader to mistake one key for another.
func TestConstantNamesMatchValues(t *testing.T) {
	for _, file := range []string{"install.go", "prepare.go", "repair.go", "collect.go", "uninstall.go"} {
		t.Run(file, func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			workflow := camel(strings.TrimSuffix(file, ".go"))
			n := 0
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					typ, ok := vs.Type.(*ast.Ident)
					if !ok || (typ.Name != "State" && typ.Name != "Event") || len(vs.Values) != len(vs.Names) {
						continue
					}
					for i, name := range vs.Names {
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok {
							t.Errorf("%s: not a string literal", name.Name)
							continue
						}
						value, _ := strconv.Unquote(lit.Value)
						prefix := workflow
						if typ.Name == "Event" {
							prefix = "Event"
						}
						if want := prefix + camel(value); name.Name != want {
							t.Errorf("%s %s = %q: name it %s", typ.Name, name.Name, value, want)
						}
						n++
					}
				}
			}
			if n == 0 {
				t.Fatal("no state or event constants found")
			}
		})
	}
}

// camel turns snake_case into CamelCase.
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
