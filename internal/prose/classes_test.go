package prose

import (
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// TestClassWords: each class said with its figures: the loop servers'
// stalls in one line, the pool of its slots as configured and as
// measured, a server measured as it is by its sweep.
func TestClassWords(t *testing.T) {
	read := func(dir string) map[string]FaceClass {
		f, err := findings.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]FaceClass{}
		for _, c := range Classes(f) {
			got[c.Server] = c
		}
		return got
	}
	run := read(realRun)
	if c := run["loop-gnet"]; c.Stalled != "3, 6, 9, 12 of 12" || !strings.HasPrefix(c.Text, "a loop server: k blocked loops stalled exactly the connections on them (3, 6, 9, 12 of 12; 4 loops, from X-Loop)") {
		t.Errorf("loop-gnet: %+v", c)
	}
	if c := run["pool"]; !strings.Contains(c.Text, "a pool of 200 slots, as configured: its cliff served at most 200") || !strings.Contains(c.Sweep, " req/s at ") {
		t.Errorf("pool: %+v", c)
	}
	for name, c := range read("../findings/testdata/engines-run") {
		switch c.Class {
		case findings.ClassLoop:
			if c.Stalled != "3, 6, 9, 12 of 12" {
				t.Errorf("%s: %+v", name, c)
			}
		case findings.ClassThreads:
			if !strings.HasPrefix(c.Stalled, "0 of 12") || !strings.HasPrefix(c.Text, "forgives: one OS thread per blocked request (") {
				t.Errorf("%s: %+v", name, c)
			}
		}
	}
	if c := read("../findings/testdata/node-run")["node"]; !strings.Contains(c.Text, "1 loop,") {
		t.Errorf("node: %+v", c)
	}
	if c := read("../findings/testdata/asis-netty-run"); len(c) != 1 || !strings.HasPrefix(c["shop"].Stalled, "3 of 12 at 1 caller") || c["shop"].CPU == "" {
		t.Errorf("netty's class: %+v", c)
	}
	// A pool of 200 whose cliff served 193 at once is never "a pool of
	// 193"; a stall not by whole loops, or not judged, is said so.
	for _, tc := range []struct {
		c    findings.Class
		want string
	}{
		{findings.Class{Case: findings.ClassedPoolSlots, ServedAtOnce: 193, Configured: 200, CliffCallers: []int{128, 200, 300}},
			"a pool of 200 slots, as configured: its cliff served at most 193 callers at once (its throughput x the measured block, over the cliff's 128, 200, 300 callers), then queued the rest"},
		{findings.Class{Case: findings.ClassedNotWhole, Kind: "loop"}, "not classified: its stalls are not whole loops ()"},
		{findings.Class{Case: findings.ClassedTooBusy, TooBusy: &findings.StallRow{Unjudged: []findings.StallUnjudged{{Why: "machine too busy to judge: test"}}}}, "not classified: machine too busy to judge: test"},
		{findings.Class{Case: findings.ClassedTooBusy, TooBusy: &findings.StallRow{Unjudged: []findings.StallUnjudged{{Repeat: 2, Why: "machine too busy to judge: test"}}}}, "not classified: repetition 2: machine too busy to judge: test"},
		{findings.Class{Case: findings.ClassedTooBusy, TooBusy: &findings.StallRow{Group: &findings.Group{Miss: &findings.Miss{M: results.Measurement{Status: "failed", Reason: "the server died"}}}}},
			"not classified: failed: the server died"},
		{findings.Class{Case: findings.ClassedTooBusy}, "not classified: no stall measurement could be judged"},
		{findings.Class{Case: findings.ClassedPoolDB, Kind: "pool", Workers: 200, DBConns: 10, Configured: 10, ServedAtOnce: 10, CliffCallers: []int{6, 10, 15}},
			"a pool of 10: its 10 database connections, as configured, behind 200 slots: its cliff served at most 10 callers"},
	} {
		if got := classWords(tc.c).Text; !strings.HasPrefix(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}
