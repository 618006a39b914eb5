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
// internal/prose), by the topic they will move with. The list only
// shrinks: TestFiguresSayNoWords fails on a function that makes words and
// is not listed, and on a listed one that no longer does.
var sentencesLeft = map[string]string{
	// The reasons a stall measurement or a connection was not judged.
	"tally": "stall", "StallRow.addRep": "stall",
	// A slip's binding workers, and a repetition not read.
	"slipBinds": "slip", "SlipRow.addRep": "slip",
	// The servers' ceiling workers in words, for the slip's binding
	// workers and the calculator's presets.
	"ServerSummary.CeilingNoun": "servers", "Findings.Presets": "servers",
	// Why a measurement was not measured or not read, said as the run is
	// read; a row's short reason; the bystander's saturation and window.
	"Compute": "reading", "groups": "reading", "phaseStatus": "reading", "Unread.String": "reading", "Group.Short": "reading",
	"bystanderOf": "reading", "loadRow": "reading", "Bystander.CensoredText": "reading",
	// The figures' format the left ones use.
	"num": "format",
}

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
				seen[name] = true // a sentence built without fmt (Group.Short, ...)
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
	if len(seen) == 0 {
		t.Fatal("no function of findings found: the test reads the wrong directory")
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
