package findings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

// TestBlockFromParamsOnly: the block a step asked for reaches the figures
// by one road, run.json's params. A run whose steps say another block than
// its params (a hand-edited run.json: the kit never wrote one) is refused,
// said so; never figures from the step's. (Before v13 the figures took
// the step's: 4 loops / 5ms = 800 req/s under params that said 10ms.)
func TestBlockFromParamsOnly(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/run")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The params ask 10ms for the sweep; the steps still say 5ms.
	s := strings.Replace(string(b), `"block_ns": 5000000,`, `"block_ns": 10000000,`, 1)
	if s == string(b) {
		t.Fatal("the fixture's params no longer say block_ns 5000000")
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "sweep-loop-gnet-c4 asked for 5ms, its params say 10ms") {
		t.Fatalf("a run whose steps say another block than its params: %v, want refused, said", err)
	}

	// Written as the kit writes it now, the block in the params alone.
	run, err := results.DecodeRun(b)
	if err != nil {
		t.Fatal(err)
	}
	run.Schema, run.Params.Block = results.RunSchema, results.Block(10*time.Millisecond)
	if err := results.WriteRun(dir, run); err != nil {
		t.Fatal(err)
	}
	f, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if f.Params.Block.D() != 10*time.Millisecond {
		t.Fatalf("params block %s, want 10ms", f.Params.Block)
	}
	if len(f.Sweep) == 0 {
		t.Fatal("no sweep rows")
	}
	for _, r := range f.Sweep {
		w := WorkersOf(r.Step, f.Params.OffloadWorkers)
		if want := CeilingPerS(w, f.Params.Block.D()); r.NominalCeiling != want {
			t.Errorf("%s: nominal ceiling %.0f req/s, want %d / %s = %.0f (the params' block)", r.Step.ID, r.NominalCeiling, w, f.Params.Block, want)
		}
	}
	for _, s := range f.Servers {
		if s.Block != f.Params.Block.D() {
			t.Errorf("server %s: block %s, want the params' %s", s.Name, s.Block, f.Params.Block)
		}
	}
	for _, g := range f.Groups {
		want := f.Params.Block
		if g.Step.Phase == "stall" || g.Step.Phase == "trace" || g.Step.Phase == "cliff" {
			want = f.Params.StallBlock
		}
		if g.Step.Block != want {
			t.Errorf("%s: block %s, want %s", g.Step.ID, g.Step.Block, want)
		}
	}
}
