package stall

import (
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/results"
)

const ms = time.Millisecond

// conns are 12 connections, 3 per loop, dealt round-robin (connection i
// on loop i%4), with the given wait by loop.
func conns(waits ...time.Duration) []Conn {
	var out []Conn
	for i := range 12 {
		out = append(out, Conn{ID: i, Loop: i % 4, Due: 100, Answered: 100, Wait: waits[i%4], FromServer: true})
	}
	return out
}

func TestJudge(t *testing.T) {
	busy := Machine{Known: true, Busy: 1, Others: 0.9, ServerRunq: 2}
	for _, tc := range []struct {
		name   string
		conns  []Conn
		block  time.Duration
		count  int
		judged bool
		why    []string
	}{
		{"quiet, one loop held", conns(75*ms, 200*time.Microsecond, 200*time.Microsecond, 300*time.Microsecond), 40 * ms, 3, true, nil},
		{"24 neighbours, as measured: free loops up to 6.1 ms, held from 35.2", conns(35200*time.Microsecond, 6100*time.Microsecond, 36*ms, ms), 40 * ms, 6, true, nil},
		{"every loop held", conns(95*ms, 96*ms, 200*ms, 95*ms), 100 * ms, 12, true, nil},
		{"a free loop's connections waited between a quarter and half the block", conns(ms, 14*ms, ms, ms), 40 * ms, 0, false,
			[]string{TooBusy, "connection 1 (loop 1) waited 14ms", "the 10ms under which", "the 20ms from which", "40ms block", "100% busy", "2.0 of the server's threads"}},
		{"a block too short for the machine: every wait unclear", conns(2*ms, 2*ms, 2*ms, 2*ms), 5 * ms, 0, false, []string{TooBusy, "a quarter and half of the 5ms block"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.conns, tc.block, busy)
			if v.Judged != tc.judged || (tc.judged && v.Count != tc.count) {
				t.Fatalf("judged %v count %d, want %v %d: %s", v.Judged, v.Count, tc.judged, tc.count, v.Why)
			}
			for _, w := range tc.why {
				if !strings.Contains(v.Why, w) {
					t.Errorf("why %q lacks %q", v.Why, w)
				}
			}
			if tc.judged && v.Why != "" {
				t.Errorf("a judged verdict says %q", v.Why)
			}
		})
	}
}

// Stalls come in whole loops: one connection of a loop far above half the
// block and its neighbours far below cannot both be right.
func TestJudgeSplitLoop(t *testing.T) {
	c := conns(75*ms, ms, ms, ms)
	c[4].Wait = 2 * ms // loop 0's second connection
	v := Judge(c, 40*ms, Machine{})
	if v.Judged || !strings.Contains(v.Why, "loop 0 (waits 75ms, 2ms, 75ms)") || !strings.Contains(v.Why, "disagree") {
		t.Fatalf("%+v", v)
	}
	// Without loops (a pool), connections are independent.
	for i := range c {
		c[i].Loop = -1
	}
	if v := Judge(c, 40*ms, Machine{}); !v.Judged || v.Count != 2 {
		t.Fatalf("pool: %+v", v)
	}
}

// A connection that got no answer at all stalled, whatever its wait.
func TestJudgeNoAnswer(t *testing.T) {
	c := conns(ms, ms, ms, ms)
	for i := 0; i < 12; i += 4 {
		c[i].Answered, c[i].Wait = 0, 0
	}
	if v := Judge(c, 4*time.Second, Machine{}); !v.Judged || v.Count != 3 || !v.Stalled[0] || v.Stalled[1] {
		t.Fatalf("%+v", v)
	}
}

// From reads the server's waits; a v2 result (no server wait) falls back
// to the wait from the send, less the delay.
func TestFrom(t *testing.T) {
	h := func(d time.Duration) hist.Percentiles {
		x := hist.New()
		x.Record(d)
		return x.Summary()
	}
	pc := &results.PerConn{DelayNs: int64(5 * ms), Conns: []results.ConnStat{
		{Conn: 0, Loop: 1, Due: 10, Samples: 10, ServerWait: h(40 * ms), FromSend: h(90 * ms), SendLate: h(2 * ms)},
		{Conn: 1, Loop: 2, Due: 10, Samples: 10, FromSend: h(90 * ms)},
	}}
	c := From(pc)
	near := func(d, want time.Duration) bool { return d >= want && d < want+want/500 } // HdrHistogram: 3 digits
	if !near(c[0].Wait, 40*ms) || !c[0].FromServer || !near(c[0].SendLate, 2*ms) || !near(c[1].Wait, 85*ms) || c[1].FromServer {
		t.Fatalf("%+v", c)
	}
}

func TestBaselineText(t *testing.T) {
	if s := BaselineText(300*time.Microsecond, 200*time.Microsecond); strings.Contains(s, "under load") {
		t.Errorf("%q", s)
	}
	if s := BaselineText(203*ms, 250*time.Microsecond); !strings.Contains(s, "measured under load: the quickest placing request took 250µs") {
		t.Errorf("%q", s)
	}
}

// Without the block (a user probing a server whose call is unknown), the
// verdict comes from the data: connections whose waits separate clearly
// from the others' stalled; waits that do not separate get no count.
func TestJudgeFromData(t *testing.T) {
	us := time.Microsecond
	for _, tc := range []struct {
		name   string
		conns  []Conn
		count  int
		judged bool
		said   []string
	}{
		{"quiet, one loop held 100 ms, as measured", conns(97*ms, 450*us, 500*us, 400*us), 3, true,
			[]string{"connections of loop 0", "97ms", "that long at a time"}},
		{"two loops held", conns(97*ms, 98*ms, 500*us, 600*us), 6, true, []string{"connections of loops 0 and 1"}},
		{"beside 8 neighbours, as measured: a 5 ms call", conns(790*us, 3410*us, 870*us, 860*us), 3, true, []string{"connections of loop 1", "3.41ms"}},
		{"24 neighbours, free loops 1 and 6.1 ms apart: not told", conns(35200*us, 6100*us, 36*ms, ms), 0, false, []string{"more than two groups"}},
		{"nobody blocked, quiet: every wait under a millisecond", conns(400*us, 500*us, 450*us, 600*us), 0, true,
			[]string{"none", "under 1ms"}},
		{"nobody blocked, a busy machine: waits close together", conns(2*ms, 3500*us, 2500*us, 4*ms), 0, false,
			[]string{"do not separate", "2ms", "4ms", "--block"}},
		{"every loop held", conns(95*ms, 96*ms, 97*ms, 95*ms), 0, false, []string{"do not separate", "95ms"}},
		{"three levels: no one split", conns(100*ms, 5*ms, 400*us, 400*us), 0, false, []string{"more than two groups"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.conns, 0, Machine{})
			if v.Judged != tc.judged || v.Count != tc.count {
				t.Fatalf("judged %v count %d, want %v %d: %q %q", v.Judged, v.Count, tc.judged, tc.count, v.Said, v.Why)
			}
			text := v.Said + v.Why
			for _, w := range tc.said {
				if !strings.Contains(text, w) {
					t.Errorf("%q lacks %q", text, w)
				}
			}
			if !v.FromData {
				t.Error("a verdict without a block does not say it came from the data")
			}
			for i, c := range tc.conns {
				if v.Stalled[i] && c.Wait < ms {
					t.Errorf("connection %d, which waited %s, called stalled", c.ID, c.Wait)
				}
			}
		})
	}
	// A loop whose connections straddle the split cannot be judged; a
	// pool's connections are independent.
	c := conns(97*ms, 500*us, 500*us, 500*us)
	c[4].Wait = 500 * us
	if v := Judge(c, 0, Machine{}); v.Judged || !strings.Contains(v.Why, "disagree") {
		t.Fatalf("a split loop: %+v", v)
	}
	for i := range c {
		c[i].Loop = -1
	}
	if v := Judge(c, 0, Machine{}); !v.Judged || v.Count != 2 || !strings.Contains(v.Said, "connections 0 and 8") {
		t.Fatalf("pool: %+v", v)
	}
}

// A starved server: its waits say nothing of a call when starvation alone
// could make them as long as the stall threshold. Figures as measured: the
// server at nice 19 beside 8 noisy neighbours (6.8 ms a wake-up, free
// connections 55-135 ms), and at nice 0 beside 12 (0.27 ms, 1.5-1.8 ms).
func TestJudgeStarved(t *testing.T) {
	us := time.Microsecond
	starved := Machine{Known: true, Busy: 1, Others: 0.99, WakeWait: 6800 * us}
	v := Judge(conns(60*ms, 130*ms, 55*ms, 90*ms), 40*ms, starved)
	if v.Judged || !strings.Contains(v.Why, TooBusy) || !strings.Contains(v.Why, "did not get a CPU") || !strings.Contains(v.Why, "6.8ms") {
		t.Fatalf("a starved server at k = 0 judged: %+v", v)
	}
	// By loop where its threads are known: one starved loop thread is enough.
	byLoop := Machine{Known: true, WakeWait: 300 * us, LoopWakeWait: map[int]time.Duration{0: 250 * us, 1: 5 * ms, 2: 200 * us, 3: 250 * us}}
	if v := Judge(conns(400*us, 60*ms, 400*us, 400*us), 40*ms, byLoop); v.Judged || !strings.Contains(v.Why, "loop 1's thread waited 5ms") {
		t.Fatalf("a starved loop thread: %+v", v)
	}
	// Beside 12 neighbours, not starved: judged, and exactly.
	busy := Machine{Known: true, Busy: 1, Others: 0.9, WakeWait: 270 * us}
	if v := Judge(conns(39*ms, 1800*us, 1500*us, 1600*us), 40*ms, busy); !v.Judged || v.Count != 3 {
		t.Fatalf("a busy, not starved, machine: %+v", v)
	}
}

// A connection that answered few of its due probes: the waits of those it
// answered are no sample of its window. As measured beside 24 noisy
// neighbours: the connections on held loops answered 14-16 of 100 due,
// each of those having waited about 2 ms, while the others waited on.
func TestJudgeFewAnswered(t *testing.T) {
	c := conns(2010*time.Microsecond, 700*time.Microsecond, 2450*time.Microsecond, 2110*time.Microsecond)
	for i := range c {
		if c[i].Loop != 1 {
			c[i].Answered = 15
		}
	}
	v := Judge(c, 100*ms, Machine{})
	if v.Judged || !strings.Contains(v.Why, "15 of its 100 due probes answered") {
		t.Fatalf("%+v", v)
	}
	// A held loop's few answers that did wait say stalled, as on a quiet
	// machine with every loop held.
	c = conns(196*ms, 197*ms, 196*ms, 196*ms)
	for i := range c {
		c[i].Answered = 8
	}
	if v := Judge(c, 100*ms, Machine{}); !v.Judged || v.Count != 12 {
		t.Fatalf("every loop held: %+v", v)
	}
	// Without a block, a connection of the lower group with few answers
	// gets no count.
	c = conns(97*ms, 500*time.Microsecond, 500*time.Microsecond, 500*time.Microsecond)
	c[1].Answered = 10
	if v := Judge(c, 0, Machine{}); v.Judged || !strings.Contains(v.Why, "10 of its 100 due probes") {
		t.Fatalf("from the data: %+v", v)
	}
}
