package experiment

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the plans' goldens in testdata")

// TestPlanGolden: the plan of run.sh's defaults (and of --stage's) is the
// one in testdata, step by step: its order, servers, callers, durations
// and what the steps ask. A change to the plan shows here as a diff to
// read; go test -run TestPlanGolden -update rewrites the goldens.
func TestPlanGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		edit   func(o *Options)
	}{
		{"plan-default.golden", func(*Options) {}},
		{"plan-stage.golden", onStage},
	} {
		o := opts(t, func(o *Options) {
			tc.edit(o)
			o.Bin, o.Out = "/kit/bin", DefaultOut("/kit/bin", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		})
		got := planText(BuildPlan(o))
		path := filepath.Join("testdata", tc.golden)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run TestPlanGolden -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("the plan is not %s (go test -run TestPlanGolden -update rewrites it once the change is meant):\n%s", path, lineDiff(string(want), got))
		}
	}
}

// planText is a plan a line a step, in its order, with what it takes.
func planText(p Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d steps x %d repetitions, expected %s, out %s\n", len(p.Steps), p.Options.Repeat, p.Expected(), p.Options.Out)
	for _, s := range p.Steps {
		fmt.Fprintf(&b, "%-24s %-7s %-9s kind=%s engine=%s workers=%d endpoint=%s conc=%d k=%d variant=%q warmup=%s duration=%s",
			s.ID, s.Phase, s.Server.Name, s.Server.Kind, s.Server.Engine, s.Server.Workers, s.Endpoint, s.Conc, s.K, s.Variant, s.Warmup, s.Duration)
		if s.SlipAtNs > 0 {
			fmt.Fprintf(&b, " slip_at=%s", time.Duration(s.SlipAtNs))
		}
		if why := p.Skips[s.ID]; why != "" {
			fmt.Fprintf(&b, " skipped=%q", why)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// lineDiff lists the lines of want and got that differ, by line number.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %s\n  got  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
