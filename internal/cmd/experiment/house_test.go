package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The house's sizes (issue 50): no Go file of the repository, tests and
// vendored code aside, of 600 lines or more, and no function of 100 lines
// or more: a file read at one sitting, a function on a screen or two.

// longAllowed are the functions let stay long, with why.
var longAllowed = map[string]string{
	"internal/h1/parse.go:Parse": "the HTTP parser's state machine, read whole",
}

// notOurs are the directories whose Go is not the kit's own.
var notOurs = map[string]bool{"third_party": true, "vendor": true, "testdata": true, "node_modules": true, "bin": true}

func TestHouseSizes(t *testing.T) {
	long, files, funcs, err := houseSizes(root)
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen the house, not an empty directory.
	if files < 150 || funcs < 1000 {
		t.Fatalf("read %d files and %d functions: the walk missed the repository (root %s)", files, funcs, root)
	}
	for _, l := range long {
		t.Error(l)
	}
	for k := range longAllowed {
		file, name, _ := strings.Cut(k, ":")
		if _, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, file), nil, 0); err != nil {
			t.Errorf("longAllowed names %s, whose file %s is gone: take it off", name, file)
		}
	}
}

// TestHouseSizesCatch: a long file and a long function in a doctored
// tree are named; a long test file, a vendored file and the allowed
// parser are not.
func TestHouseSizesCatch(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string, lines int, fn string) {
		t.Helper()
		var b strings.Builder
		b.WriteString("package x\n\nfunc " + fn + "() {\n")
		for range lines {
			b.WriteString("\t_ = 0\n")
		}
		b.WriteString("}\n")
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/long.go", 98, "Long")           // 100 lines: too long
	write("a/short.go", 97, "Short")         // 99: fine
	write("b/big.go", 650, "Big")            // a long file too
	write("a/long_test.go", 700, "LongTest") // tests aside
	write("third_party/v/v.go", 700, "V")    // vendored
	write("internal/h1/parse.go", 200, "Parse")
	long, files, funcs, err := houseSizes(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(long, "\n")
	for _, want := range []string{"a/long.go: Long is 100 lines", "b/big.go is 654 lines", "b/big.go: Big is 652 lines"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q among:\n%s", want, got)
		}
	}
	if len(long) != 3 || files != 4 || funcs != 4 {
		t.Errorf("%d findings over %d files, %d functions (want 3 over 4 files, 4 functions):\n%s", len(long), files, funcs, got)
	}
}

// houseSizes names every file of 600 lines or more and every function of
// 100 or more under root, tests and others' code aside.
func houseSizes(root string) (long []string, files, funcs int, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if notOurs[d.Name()] || (strings.HasPrefix(d.Name(), ".") && rel != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		rel = filepath.ToSlash(rel)
		if n := fset.File(f.Pos()).LineCount(); n >= 600 {
			long = append(long, fmt.Sprintf("%s is %d lines long (600 at most: split it where its concerns part)", rel, n))
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			funcs++
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n >= 100 && longAllowed[rel+":"+fd.Name.Name] == "" {
				long = append(long, fmt.Sprintf("%s: %s is %d lines long (100 at most: name its steps)", rel, fd.Name.Name, n))
			}
		}
		return nil
	})
	return long, files, funcs, err
}
