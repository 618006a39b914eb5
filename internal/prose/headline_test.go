package prose

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
)

// numbers are the numbers of s in order, commas dropped: "at least
// 1,151.0 ms" is [1151].
func numbers(s string) []float64 {
	var out []float64
	for _, m := range regexp.MustCompile(`\d[\d,]*(\.\d+)?`).FindAllString(s, -1) {
		v, _ := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
		out = append(out, v)
	}
	return out
}

// tableRow is the first line of the tables that starts with the cells
// first and contains all of want.
func tableRow(t *testing.T, tables string, first string, want ...string) []string {
	t.Helper()
	for _, l := range strings.Split(tables, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != first {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(l, " "+w+" ")
		}
		if ok {
			return f
		}
	}
	t.Fatalf("no table row %q with %q in:\n%s", first, want, tables)
	return nil
}

// TestHeadlineMatchesTables: every number of the headline is the number
// the terminal's tables print for the same row.
func TestHeadlineMatchesTables(t *testing.T) {
	for _, dir := range []string{realRun, "../findings/testdata/quick-run", "../findings/testdata/offload-run", "../findings/testdata/node-run"} {
		t.Run(dir, func(t *testing.T) {
			f, err := findings.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			WriteTables(&sb, f)
			tables := sb.String()
			h := Headline(f)
			if f.Params.SweepEndpoint == "/slow" && len(f.Sweep) > 0 && len(h.Servers) == 0 {
				t.Fatal("a sweep of /slow and no server in the headline")
			}
			for _, s := range h.Servers {
				// The sweep table: callers, server, req/s; the bystander
				// table: callers, server, p50 from due.
				rows := strings.SplitN(tables, "/fast bystander meanwhile", 2)
				tp := tableRow(t, rows[0], strconv.Itoa(s.Callers), s.Name)
				if got := numbers(s.Throughput); len(got) != 1 || strconv.FormatFloat(got[0], 'f', 0, 64) != tp[2] {
					t.Errorf("%s: headline %q, table %q", s.Name, s.Throughput, tp[2])
				}
				if s.Fast != "" {
					by := tableRow(t, rows[1], strconv.Itoa(s.Callers), s.Name)
					if got := numbers(s.Fast); len(got) != 1 || strconv.FormatFloat(got[0], 'f', 1, 64)+"ms" != by[2] {
						t.Errorf("%s: headline /fast %q, table %q", s.Name, s.Fast, by[2])
					}
				}
				if sv := f.Server(s.Name); ServerCeiling(sv) != s.Ceiling {
					t.Errorf("%s: headline ceiling %q, the servers' %q", s.Name, s.Ceiling, ServerCeiling(sv))
				}
			}
			for _, st := range h.Stalls {
				var want []string
				for _, r := range f.Stall {
					if r.Step.Server.Name == st.Name && r.Step.K > 0 {
						want = append(want, StallStalled(r))
					}
				}
				if strings.Join(st.Stalled, "|") != strings.Join(want, "|") || len(want) == 0 {
					t.Errorf("%s: headline stalled %q, the stall table's %q", st.Name, st.Stalled, want)
				}
			}
			for _, fx := range h.Fixes {
				off := tableRow(t, tables, "offloaded", fx.Name, "/offload")
				blk := tableRow(t, tables, "blocking", fx.Name, "/slow")
				if got := numbers(fx.Offloaded); len(got) != 1 || strconv.FormatFloat(got[0], 'f', 0, 64) != off[3] {
					t.Errorf("%s: headline offloaded %q, table %q", fx.Name, fx.Offloaded, off[3])
				}
				if got := numbers(fx.Blocking); len(got) != 1 || strconv.FormatFloat(got[0], 'f', 0, 64) != blk[3] {
					t.Errorf("%s: headline blocking %q, table %q", fx.Name, fx.Blocking, blk[3])
				}
			}
		})
	}
}
