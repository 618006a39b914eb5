package findings

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// names are findings' exported functions that return a string and say no
// sentence: an id or a name.
var names = map[string]string{
	"LoadRow.Kind": "the bound's kind, an id (workers, callers, cpu, generator, none, or - without one)",
}

// sentencesLeft are the functions of findings that still make English
// while they compute (issue 50: figures in findings, words in
// internal/prose): none now. The list only shrinks: TestFiguresSayNoWords
// fails on a function that makes words and is not listed, and on a listed
// one that no longer does.
var sentencesLeft = map[string]string{}

// TestFiguresSayNoWords: internal/findings computes figures and typed
// verdicts, internal/prose says them. Every function of findings' non-test
// files that calls fmt.Sprint* or internal/words, and every exported one
// that returns a string, is either a name (names) or a sentence left to
// move (sentencesLeft).
func TestFiguresSayNoWords(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	read := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			read++
			name := funcName(fd)
			words := makesWords(fd.Body)
			if words {
				seen[name] = true
			}
			switch {
			case words && sentencesLeft[name] == "":
				t.Errorf("%s (%s) makes words (fmt.Sprint* or internal/words): say them in internal/prose from its figures", name, fset.Position(fd.Pos()))
			case !words && fd.Name.IsExported() && returnsString(fd) && names[name] == "" && sentencesLeft[name] == "":
				t.Errorf("%s (%s) returns a string: a name belongs in names, with why; a sentence in internal/prose", name, fset.Position(fd.Pos()))
			case !words && returnsString(fd) && sentencesLeft[name] != "":
				seen[name] = true // a sentence built without fmt
			}
		}
	}
	var stale []string
	for name := range sentencesLeft {
		if !seen[name] {
			stale = append(stale, name)
		}
	}
	slices.Sort(stale)
	if len(stale) > 0 {
		t.Errorf("sentencesLeft lists %v, which findings no longer has or which make no words: take them off", stale)
	}
	if read < 100 {
		t.Fatalf("read %d functions of findings: the test reads the wrong directory", read)
	}
}

// TestMakesWordsCatches: the rule finds a sentence made with fmt or
// internal/words, and not arithmetic or an error.
func TestMakesWordsCatches(t *testing.T) {
	src := `package x
func a(n int) string { return fmt.Sprintf("%d callers", n) }
func b(n int) string { return words.Plural(n, "caller") }
func c(n int) string { s := fmt.Sprint(n); return s }
func d(n int) int { return n * 2 }
func e() error { return fmt.Errorf("findings: bad") }
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"a": true, "b": true, "c": true, "d": false, "e": false}
	for _, d := range f.Decls {
		fd := d.(*ast.FuncDecl)
		if got := makesWords(fd.Body); got != want[fd.Name.Name] {
			t.Errorf("%s: makesWords %v, want %v", fd.Name.Name, got, want[fd.Name.Name])
		}
	}
}

// funcName is "Type.Method" or "Func".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// makesWords: the body calls fmt.Sprint* or a function of internal/words.
func makesWords(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		if se, ok := c.Fun.(*ast.SelectorExpr); ok {
			if id, ok := se.X.(*ast.Ident); ok && (id.Name == "words" || id.Name == "fmt" && strings.HasPrefix(se.Sel.Name, "Sprint")) {
				found = true
			}
		}
		return !found
	})
	return found
}

// returnsString: one of its results is a string or a []string.
func returnsString(fd *ast.FuncDecl) bool {
	if fd.Type.Results == nil {
		return false
	}
	for _, r := range fd.Type.Results.List {
		switch t := r.Type.(type) {
		case *ast.Ident:
			if t.Name == "string" {
				return true
			}
		case *ast.ArrayType:
			if id, ok := t.Elt.(*ast.Ident); ok && id.Name == "string" {
				return true
			}
		}
	}
	return false
}
