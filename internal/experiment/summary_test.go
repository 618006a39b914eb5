package experiment

import (
	"io"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// realRun is a default run of ./run.sh kept by the report's tests.
const realRun = "../../report/testdata/run"

func TestSummarize(t *testing.T) {
	f, err := findings.Read(realRun)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	Summarize(&sb, f)
	out := sb.String()
	for _, want := range []string{
		"/slow throughput against the ceiling", "loop-gnet", "workers", "callers",
		"Stalled connections", "12             12", "Blocking on the loop vs offloaded vs the pool",
		"taken apart", "The pool's cliff", "300 (150%)", "Cost per request", "SATURATED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Not measured") {
		t.Error("a complete run lists measurements as not measured")
	}
}

// TestRepeat: with --repeat the variants alternate within each repetition,
// and the tables give medians with the spread.
func TestRepeat(t *testing.T) {
	o, err := ParseFlags([]string{"--repeat", "2", "--phases", "sweep", "--conc", "4,16"}, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	run := newRun(BuildPlan(o), now)
	var order []string
	for _, m := range run.Measurements {
		order = append(order, m.ID+"/"+string(rune('0'+m.Repeat)))
	}
	want := "sweep-loop-gnet-c4/1 sweep-pool-c4/1 sweep-loop-gnet-c16/1 sweep-pool-c16/1 sweep-loop-gnet-c4/2 sweep-pool-c4/2 sweep-loop-gnet-c16/2 sweep-pool-c16/2"
	if got := strings.Join(order, " "); got != want {
		t.Fatalf("order %s\nwant  %s", got, want)
	}
	// Medians and spread: the real run's sweep read twice as two repetitions.
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
	Summarize(&sb, findings.Compute(realRun, real))
	if !strings.Contains(sb.String(), "] ") && !strings.Contains(sb.String(), "]\n") {
		t.Fatalf("no [min-max] spread in:\n%s", sb.String())
	}
	if results.Median([]float64{3, 1, 2}) != 2 || results.Median([]float64{4, 1, 2, 3}) != 2.5 || results.Median(nil) != 0 {
		t.Fatal("Median")
	}
}
