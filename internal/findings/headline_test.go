package findings

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
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
	for _, dir := range []string{realRun, "testdata/quick-run", "testdata/offload-run", "testdata/node-run"} {
		t.Run(dir, func(t *testing.T) {
			f, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			f.WriteTables(&sb)
			tables := sb.String()
			h := f.Headline()
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
				if sv := f.Server(s.Name); sv.CeilingText() != s.Ceiling {
					t.Errorf("%s: headline ceiling %q, the servers' %q", s.Name, s.Ceiling, sv.CeilingText())
				}
			}
			for _, st := range h.Stalls {
				var want []string
				for _, r := range f.Stall {
					if r.Step.Server.Name == st.Name && r.Step.K > 0 {
						want = append(want, r.StalledText())
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

func TestStallLine(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"3 of 12", "6 of 12", "9 of 12", "12 of 12"}, "3, 6, 9, 12 of 12"},
		{[]string{"3 of 12", "machine too busy to judge"}, "k=1: 3 of 12; k=2: machine too busy to judge"},
		{[]string{"3 [2-3] of 12"}, "k=1: 3 [2-3] of 12"},
		{[]string{"3 of 12 (1 of 3 repetitions judged)"}, "k=1: 3 of 12 (1 of 3 repetitions judged)"},
	} {
		if got := (HeadlineStall{Stalled: c.in}).Line(); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPublishedFor: a headline tile's published figure carries what
// differs from the publication, all of it but a condition the publication
// does not state: a database run's tiles said "17,189 req/s" beside a pool
// its database bound, dropping that the published call was Thread.sleep.
func TestPublishedFor(t *testing.T) {
	rows := []PublishedRow{
		{What: publishedSweep, Server: "pool", Published: "17,189 req/s",
			Differs: "callers: 64 here, not published; the call: a database call through 10 connections here, Thread.sleep published"},
		{What: publishedSweep, Server: "loop-gnet", Published: "549 req/s", Differs: "callers: 64 here, not published"},
		{What: publishedOffload, Server: "loop-gnet", Published: "18,311 req/s", Differs: "callers: 64 here, 128 published"},
	}
	for _, tc := range []struct{ what, server, want string }{
		{publishedSweep, "pool", "17,189 req/s (the call: a database call through 10 connections here, Thread.sleep published)"},
		{publishedSweep, "loop-gnet", "549 req/s"},
		{publishedOffload, "loop-gnet", "18,311 req/s (callers: 64 here, 128 published)"},
		{publishedOffload, "pool", ""},
	} {
		if got := publishedFor(rows, tc.what, tc.server); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.what, tc.server, got, tc.want)
		}
	}
}

// TestSayOnce: a tile's two published figures say what differs once.
func TestSayOnce(t *testing.T) {
	for _, tc := range [][4]string{
		{"17,189 req/s (the call: x)", "0 ms (the call: x)", "17,189 req/s", "0 ms (the call: x)"},
		{"549 req/s (callers: 64 here, 128 published)", "217 ms", "549 req/s (callers: 64 here, 128 published)", "217 ms"},
		{"549 req/s (a)", "217 ms (b)", "549 req/s (a)", "217 ms (b)"},
		{"549 req/s", "", "549 req/s", ""},
	} {
		if a, b := sayOnce(tc[0], tc[1]); a != tc[2] || b != tc[3] {
			t.Errorf("sayOnce(%q, %q) = %q, %q", tc[0], tc[1], a, b)
		}
	}
}
