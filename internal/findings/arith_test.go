package findings

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// arithmetic finds what computes a figure or a rule: a ceiling, a share
// of one, CPU per request or per core, a stall threshold.
var arithmetic = []*regexp.Regexp{
	regexp.MustCompile(`CeilingPerS\(`),                                // a ceiling: findings.StepCeiling and the rows give them
	regexp.MustCompile(`CPUNs\(\)[^\n]*/`),                             // CPU per request or per core
	regexp.MustCompile(`(?i)per_?request\s*=[^=]`),                     // a per-request figure assigned
	regexp.MustCompile(`(?i)(stall)?block\w*\s*/\s*[24]\b`),            // a stall threshold (half, a quarter of the block)
	regexp.MustCompile(`ThroughputPerS\s*[/*]|/\s*\w*\.?\w*Ceiling\b`), // a share of a ceiling
}

// TestNoFiguresOutsideFindings: the formatters (report, the stage) and the
// orchestrator compute no figure and no rule: internal/findings and
// internal/stall do, once, and they call them. A new line of such
// arithmetic elsewhere fails here.
func TestNoFiguresOutsideFindings(t *testing.T) {
	for _, dir := range []string{"../../report", "../stage", "../experiment"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if c := strings.TrimSpace(line); strings.HasPrefix(c, "//") {
					continue
				}
				for _, re := range arithmetic {
					if re.MatchString(line) {
						t.Errorf("%s:%d computes what findings computes (%s): %s", f, i+1, re, strings.TrimSpace(line))
					}
				}
			}
		}
	}
}

// TestArithmeticIsFound: the patterns find the arithmetic they are for.
func TestArithmeticIsFound(t *testing.T) {
	for _, line := range []string{
		`ceil := findings.CeilingPerS(workers, f.Params.Block)`,
		`c.ServerCPUUsPerRequest = float64(s1.server.CPUNs()-s0.server.CPUNs()) / 1e3 / reqs`,
		`"stall_threshold_ms": ms(o.StallBlock / 2),`,
		`pct = append(pct, 100*t/r.NominalCeiling)`,
	} {
		found := false
		for _, re := range arithmetic {
			found = found || re.MatchString(line)
		}
		if !found {
			t.Errorf("not found: %s", line)
		}
	}
}
