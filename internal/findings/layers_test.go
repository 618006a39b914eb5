package findings

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestLayers: the house keeps its layers, and nothing imports upward: a
// program (loadgen, loopserver, poolserver, prober, report) imports only
// internal packages and the public loopwatch; an internal package imports
// only internal packages, examples/java (the published experiment's
// servers, embedded: a leaf that imports nothing of the kit) and loopwatch;
// loopwatch and its subpackages, imported by strangers, import nothing of
// the kit but each other; no package imports a program; the figures
// (internal/findings) import no words of the pages or of internal/prose,
// which says them. (Go itself refuses an import cycle.)
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "github.com/bystander-kit/bystander/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/bystander-kit/bystander/"
	programs := map[string]bool{"loadgen": true, "loopserver": true, "poolserver": true, "prober": true, "report": true}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		n++
		self := strings.TrimPrefix(p.ImportPath, mod)
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, mod)
			if !ok {
				continue
			}
			public := dep == "loopwatch" || strings.HasPrefix(dep, "loopwatch/")
			switch {
			case self == "internal/findings" && (dep == "internal/prose" || dep == "internal/page"):
				t.Errorf("internal/findings imports %s: the figures are said by it, not the other way", dep)
			case programs[dep]:
				t.Errorf("%s imports the program %s", self, dep)
			case self == "examples/java":
				t.Errorf("examples/java imports %s: it must stay a leaf", dep)
			case strings.HasPrefix(self, "loopwatch") && !public:
				t.Errorf("the public %s imports %s: a stranger's import of it must bring nothing of the kit", self, dep)
			case !strings.HasPrefix(dep, "internal/") && dep != "examples/java" && !public:
				t.Errorf("%s imports %s, which is neither internal, examples/java nor the public loopwatch", self, dep)
			}
		}
	}
	if n < 20 {
		t.Fatalf("go list found %d packages", n)
	}
}
