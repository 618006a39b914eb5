package experiment

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

func ids(p Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.ID)
	}
	return out
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"sweep only", []string{"--phases", "sweep", "--conc", "4,16"},
			[]string{"sweep-loop-gnet-c4", "sweep-pool-c4", "sweep-loop-gnet-c16", "sweep-pool-c16"}},
		{"both engines", []string{"--phases", "sweep", "--conc", "8", "--engines", "gnet,evio", "--servers", "loop"},
			[]string{"sweep-loop-gnet-c8", "sweep-loop-evio-c8"}},
		{"stall", []string{"--phases", "stall"},
			[]string{"stall-loop-gnet-k0", "stall-loop-gnet-k1", "stall-loop-gnet-k2", "stall-loop-gnet-k3", "stall-loop-gnet-k4", "stall-pool-k0", "stall-pool-k4"}},
		{"offload at the highest concurrency", []string{"--phases", "offload", "--conc", "16,64,4"},
			[]string{"offload-loop-gnet-blocking", "offload-loop-gnet-offloaded", "offload-pool"}},
		{"trace and cliff", []string{"--phases", "trace,cliff"},
			[]string{"trace-loop-gnet", "trace-pool", "cliff-pool-64pct", "cliff-pool-100pct", "cliff-pool-150pct"}},
		{"no pool, no cliff", []string{"--phases", "cliff,sweep", "--servers", "loop", "--conc", "4"},
			[]string{"sweep-loop-gnet-c4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseFlags(tc.args, io.Discard, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(BuildPlan(o)); !slices.Equal(got, tc.want) {
				t.Fatalf("steps %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestPlanDetails(t *testing.T) {
	o, err := ParseFlags([]string{"--block=5ms", "--conc=4,16,64"}, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	p := BuildPlan(o)
	if o.Out != "results/20261130T080000Z" {
		t.Errorf("default out %q", o.Out)
	}
	for _, s := range p.Steps {
		wantBlock := 5 * time.Millisecond
		if s.Phase == "stall" || s.Phase == "trace" || s.Phase == "cliff" {
			wantBlock = 100 * time.Millisecond
		}
		if time.Duration(s.Server.BlockNs) != wantBlock {
			t.Errorf("%s: block %s, want %s", s.ID, time.Duration(s.Server.BlockNs), wantBlock)
		}
		switch {
		case s.Phase == "offload" && s.Conc != 64:
			t.Errorf("%s at %d callers, want the highest (64)", s.ID, s.Conc)
		case s.ID == "cliff-pool-150pct" && s.Conc != 300:
			t.Errorf("cliff at 150%% has %d callers, want 300", s.Conc)
		case s.Server.Kind == "loop" && s.Server.Workers != 4, s.Server.Kind == "pool" && s.Server.Workers != 200:
			t.Errorf("%s: %d workers", s.ID, s.Server.Workers)
		}
	}
	// The default run must fit in 2 minutes on this machine.
	if d := p.Expected(); d > 2*time.Minute {
		t.Errorf("default plan expects %s, over 2 minutes", d)
	}
	var sb strings.Builder
	p.Describe(&sb)
	for _, want := range []string{"sweep", "stall", "offload", "trace", "cliff", "expected"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("plan description lacks %q:\n%s", want, sb.String())
		}
	}
	if a, _ := ParseFlags([]string{"--bin", "bin", "--conc=4", "--bin=x"}, io.Discard, now); !slices.Equal(a.Args, []string{"--conc=4"}) {
		t.Errorf("recorded args %v", a.Args)
	}
	q, _ := ParseFlags([]string{"--quick"}, io.Discard, now)
	if q.Duration >= o.Duration || q.Warmup >= o.Warmup {
		t.Errorf("--quick: duration %s warm-up %s", q.Duration, q.Warmup)
	}
	q, _ = ParseFlags([]string{"--quick", "--duration", "3s"}, io.Discard, now)
	if q.Duration != 3*time.Second {
		t.Errorf("--quick overrode an explicit --duration: %s", q.Duration)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--block=0"}, {"--block=-5ms"}, {"--block=fast"}, {"--block=11s"},
		{"--conc=4,x"}, {"--conc=0"}, {"--conc="}, {"--conc=4,4"},
		{"--engines=netty"}, {"--servers=loop,tomcat"}, {"--phases=sweep,nap"}, {"--phases="},
		{"--duration=100ms"}, {"--warmup=-1s"}, {"--repeat=0"}, {"--repeat=21"},
		{"--stall-block=0s"}, {"extra"}, {"--nope"},
	} {
		if _, err := ParseFlags(args, io.Discard, now); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
