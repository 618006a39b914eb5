package findings

import (
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/results"
)

// realRun is a default run of ./run.sh kept by the report's tests.
const realRun = "../../report/testdata/run"

func TestTables(t *testing.T) {
	f, err := Read(realRun)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	f.WriteTables(&sb)
	out := sb.String()
	for _, want := range []string{
		"/slow throughput against the ceiling (block 5ms, syscall mode", "loop-gnet", "workers", "callers",
		"Stalled connections", "12 of 12  12", "Blocking on the loop vs offloaded vs the pool",
		"taken apart", "The pool's cliff", "300 (150%)", "Cost per request", "SATURATED", "grows without bound",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Not measured") {
		t.Error("a complete run lists measurements as not measured")
	}
}

// TestTablesOfRepeats: repetitions give medians with [min-max].
func TestTablesOfRepeats(t *testing.T) {
	real, err := results.ReadRun(realRun)
	if err != nil {
		t.Fatal(err)
	}
	var ms []results.Measurement
	for rep := 1; rep <= 2; rep++ {
		for _, m := range real.Measurements {
			if m.Phase == "sweep" {
				m.Repeat = rep
				ms = append(ms, m)
			}
		}
	}
	real.Measurements = ms
	var sb strings.Builder
	Compute(realRun, real).WriteTables(&sb)
	if !strings.Contains(sb.String(), "] ") && !strings.Contains(sb.String(), "]\n") {
		t.Fatalf("no [min-max] spread in:\n%s", sb.String())
	}
	if results.Median([]float64{3, 1, 2}) != 2 || results.Median([]float64{4, 1, 2, 3}) != 2.5 || results.Median(nil) != 0 {
		t.Fatal("Median")
	}
}

// TestTablesOnStage: a run given on stage says so once, above its tables;
// a run without the stage does not.
func TestTablesOnStage(t *testing.T) {
	run, err := results.ReadRun(realRun)
	if err != nil {
		t.Fatal(err)
	}
	var plain, staged strings.Builder
	Compute(realRun, run).WriteTables(&plain)
	run.Params.Stage = true
	Compute(realRun, run).WriteTables(&staged)
	if strings.Contains(plain.String(), OnStage) {
		t.Error("a run without the stage says it was given on stage")
	}
	if n := strings.Count(staged.String(), OnStage); n != 1 {
		t.Errorf("a run given on stage says so %d times, want once:\n%s", n, staged.String())
	}
}
