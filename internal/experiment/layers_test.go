package experiment

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFilesLayered: no two files of the package use each other's names.
// A file that uses a name declared in another (a function, type, variable
// or constant of the package's, a method or a field of one of its types)
// sits above it; two files that use each other's are one file cut in two,
// and a reader cannot read either first. The helpers every file wants sit
// in a file of their own that uses nobody's names.
func TestFilesLayered(t *testing.T) {
	uses := fileUses(t, ".")
	var cycles []string
	for a, bs := range uses {
		for b, why := range bs {
			if back, ok := uses[b][a]; ok && a < b {
				cycles = append(cycles, a+" uses "+why+" of "+b+", and "+b+" uses "+back+" of "+a)
			}
		}
	}
	slices.Sort(cycles)
	for _, c := range cycles {
		t.Error(c)
	}
}

// fileUses is, for each non-test file of the package in dir, the other
// files whose names it uses (with one such name). Names are resolved by
// go/types over the package's own files; the imported packages are
// stood in for by empty ones (their names are not the package's, and a
// type check of every dependency from source would take half a minute).
func fileUses(t *testing.T, dir string) map[string]map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) < 2 {
		t.Fatalf("%s holds %d files", dir, len(files))
	}
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, _ := conf.Check(files[0].Name.Name, fset, files, info)
	uses := map[string]map[string]string{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		if !declaredInPackage(obj, pkg) {
			continue
		}
		from, to := filepath.Base(fset.File(id.Pos()).Name()), filepath.Base(fset.File(obj.Pos()).Name())
		if from == to {
			continue
		}
		if uses[from] == nil {
			uses[from] = map[string]string{}
		}
		if _, ok := uses[from][to]; !ok || obj.Name() < uses[from][to] {
			uses[from][to] = obj.Name()
		}
	}
	return uses
}

// declaredInPackage: obj is a name of the package's own (at its top
// level, or a method or field of one of its types), not a local.
func declaredInPackage(obj types.Object, pkg *types.Package) bool {
	switch o := obj.(type) {
	case *types.Func:
		if o.Signature().Recv() != nil {
			return true
		}
	case *types.Var:
		if o.IsField() {
			return true
		}
	}
	return obj.Parent() == pkg.Scope()
}

// emptyImporter stands an empty package in for every import.
type emptyImporter struct{}

func (emptyImporter) Import(p string) (*types.Package, error) {
	name := path.Base(p)
	if strings.HasPrefix(name, "v") && strings.Trim(name[1:], "0123456789") == "" {
		name = path.Base(path.Dir(p)) // a major version's suffix: .../progressbar/v3
	}
	pkg := types.NewPackage(p, name)
	pkg.MarkComplete()
	return pkg, nil
}
