package stall

import (
	"strings"
	"testing"
	"time"
)

// client are 12 connections of a server measured as it is (no loop known:
// -1), their waits from the send, as measured, in ms.
func client(waits ...float64) []Conn {
	var out []Conn
	for i, w := range waits {
		out = append(out, Conn{ID: i, Loop: -1, Due: 150, Answered: 150, Wait: time.Duration(w * float64(ms))})
	}
	return out
}

// TestJudgeClient: the rule on client-side waits, on the waits the example
// services gave on this kind of machine (a Netty shop on 4 loops whose
// call asks a ledger over a blocking socket, 5 ms; the same shop on
// Tomcat's 200 threads), and the cases around them.
func TestJudgeClient(t *testing.T) {
	us := time.Microsecond
	for _, tc := range []struct {
		name            string
		conns           []Conn
		unloaded, call  time.Duration
		count           int
		judged          bool
		stalled, saying []string
	}{
		{"netty, 1 caller: the 3 connections on its loop", client(1.06, 9.05, 1.31, 1.84, 0.83, 9.29, 0.83, 1.63, 0.73, 8.69, 0.96, 1.4), 300 * us, 5500 * us,
			3, true, nil, []string{"connections 1, 5 and 9", "8.69ms or more"}},
		{"netty, 1 caller, cold: its unloaded wait above the loaded ones, left out", client(1.06, 9.05, 1.31, 1.84, 0.83, 9.29, 0.83, 1.63, 0.73, 8.69, 0.96, 1.4), 12695 * us, 10300 * us,
			3, true, nil, nil},
		{"netty, 4 callers: every loop held", client(7.36, 8.23, 7.68, 7.67, 6.86, 7.59, 8.38, 7.17, 7.66, 7.59, 7.74, 7.36), 324 * us, 5500 * us,
			12, true, nil, []string{"every connection", "320µs unloaded"}},
		{"tomcat, 16 callers: alike, and under a third of the call", client(1.31, 1.13, 1.26, 1.11, 1.18, 1.14, 0.88, 0.99, 1.0, 1.05, 1.08, 0.95), 778 * us, 7400 * us,
			0, true, nil, []string{"none stalled"}},
		{"tomcat on a busy machine: above the floor, alike with the unloaded", client(2.1, 2.4, 1.9, 2.2, 2.0, 2.3, 2.5, 2.0, 1.9, 2.2, 2.1, 2.0), 900 * us, 5500 * us,
			0, true, nil, []string{"within 3x of their 900µs unloaded"}},
		{"alike, apart from nothing: no reference", client(4, 4.2, 4.1, 3.9, 4, 4.3, 4, 4.1, 4, 4.2, 3.8, 4), 0, 5 * ms,
			0, false, nil, []string{"do not separate", "unloaded not measured"}},
		{"alike, the unloaded as long as a stall", client(4, 4.2, 4.1, 3.9, 4, 4.3, 4, 4.1, 4, 4.2, 3.8, 4), 3 * ms, 5 * ms,
			0, false, nil, []string{"as long as a stall"}},
		{"node: one loop hashing, every connection behind it", client(2.4, 2.6, 2.2, 2.5, 2.7, 2.3, 2.4, 2.6, 2.5, 2.4, 2.3, 2.5), 250 * us, 4 * ms,
			12, true, nil, []string{"every connection"}},
		{"a noisy machine beside a slow call: 3x apart but under a third of it", client(0.3, 1.2, 0.35, 0.3, 0.3, 1.1, 0.35, 0.3, 0.3, 1.3, 0.35, 0.3), 250 * us, 20 * ms,
			0, true, nil, []string{"none stalled", "under 6.67ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := JudgeClient(tc.conns, tc.unloaded, tc.call, Machine{})
			if v.Judged != tc.judged || v.Count != tc.count {
				t.Fatalf("judged %v count %d, want %v %d: %q %q", v.Judged, v.Count, tc.judged, tc.count, v.Said, v.Why)
			}
			if len(v.Stalled) != len(tc.conns) {
				t.Fatalf("%d verdicts for %d connections", len(v.Stalled), len(tc.conns))
			}
			n := 0
			for i, s := range v.Stalled {
				if s {
					n++
					if tc.conns[i].Wait < ClientFloor(tc.call) {
						t.Errorf("connection %d, which waited %s, called stalled", i, tc.conns[i].Wait)
					}
				}
			}
			if n != v.Count {
				t.Errorf("%d marked stalled, count %d", n, v.Count)
			}
			for _, w := range tc.saying {
				if !strings.Contains(v.Said+v.Why, w) {
					t.Errorf("%q lacks %q", v.Said+v.Why, w)
				}
			}
		})
	}
}

// TestJudgeClientStarved: a count a starved server could have made is
// not given, with why; the same waits on a server that got its CPU are.
func TestJudgeClientStarved(t *testing.T) {
	us := time.Microsecond
	c := client(1.06, 9.05, 1.31, 1.84, 0.83, 9.29, 0.83, 1.63, 0.73, 8.69, 0.96, 1.4)
	v := JudgeClient(c, 300*us, 5500*us, Machine{Known: true, Busy: 1, Others: 0.9, WakeWait: 500 * us})
	if v.Judged || v.Count != 0 || !strings.Contains(v.Why, TooBusy) || !strings.Contains(v.Why, "500µs") {
		t.Fatalf("a starved server: %+v", v)
	}
	if v := JudgeClient(c, 300*us, 5500*us, Machine{Known: true, WakeWait: 50 * us}); !v.Judged || v.Count != 3 {
		t.Fatalf("a server that got its CPU: %+v", v)
	}
	// Every connection held, starved: not told from a machine that
	// starved them all.
	all := client(7.36, 8.23, 7.68, 7.67, 6.86, 7.59, 8.38, 7.17, 7.66, 7.59, 7.74, 7.36)
	if v := JudgeClient(all, 324*us, 5500*us, Machine{Known: true, WakeWait: 400 * us}); v.Judged {
		t.Fatalf("every connection, starved: %+v", v)
	}
	// Waits that do not separate, as Tomcat's at 16 callers on a saturated
	// machine: starvation alone could have made them.
	alike := client(1.62, 2.05, 1.8, 1.7, 1.9, 1.75, 2.0, 1.66, 1.81, 1.93, 1.7, 1.85)
	if v := JudgeClient(alike, 550*us, 5960*us, Machine{Known: true, Busy: 0.97, WakeWait: 690 * us}); v.Judged || !strings.HasPrefix(v.Why, TooBusy) {
		t.Fatalf("alike waits on a starved server: %+v", v)
	}
	if v := JudgeClient(alike, 550*us, 5960*us, Machine{Known: true, WakeWait: 20 * us}); v.Judged || strings.HasPrefix(v.Why, TooBusy) {
		t.Fatalf("alike waits, the server got its CPU: %+v", v)
	}
	// Tomcat's 200 threads at 200 callers beside a load average of 19 on
	// 2 cores: every connection waited 4.5 to 9.6 ms, 8x its 590us
	// unloaded, while the ledger call held 3 threads of the 200 (Little's
	// law: 488 req/s x 6.4 ms); its tools started half a second late, so
	// the machine's use was not read: not "all held".
	tomcat := client(4.5, 9.6, 5.1, 6.0, 4.48, 7.2, 5.5, 8.1, 4.9, 6.6, 5.2, 7.7)
	if v := JudgeClient(tomcat, 590*us, 7560*us, Machine{Late: true}); v.Judged || !strings.HasPrefix(v.Why, TooBusy) || !strings.Contains(v.Why, "started late") {
		t.Fatalf("every connection alike, the machine's use not read as its tools started late: %+v", v)
	}
	if v := JudgeClient(tomcat, 590*us, 7560*us, Machine{Known: true, WakeWait: 20 * us}); !v.Judged || v.Count != 12 {
		t.Fatalf("every connection alike, the server got its CPU: %+v", v)
	}
}

// TestJudgeClientBehind: a connection sends its next probe only once the
// last is answered, so a wait from the send leaves out the queue behind
// each probe. Tomcat's 200 threads at 200 callers, the machine 99% busy
// and the server's threads waiting 1.1 ms for a CPU at each wake-up: its
// 12 connections waited 1.04 to 1.57 ms from the send at the median,
// under a third of the 6.35 ms call, and were judged "none stalled",
// while their probes left 250 to 410 ms after their due times at the
// median, a quarter of them never answered in the window (its interval
// bystander's median from due 24.3 ms, 152x the 160us unloaded): none
// can be said free; the same waits on schedule are.
func TestJudgeClientBehind(t *testing.T) {
	us := time.Microsecond
	late := []float64{390, 409, 276, 322, 252, 276, 314, 304, 349, 380, 251, 280}
	behind := client(1.57, 1.53, 1.05, 1.49, 1.47, 1.3, 1.23, 1.04, 1.23, 1.47, 1.09, 1.28)
	for i := range behind {
		behind[i].Due, behind[i].Answered, behind[i].SendLate = 500, 360, time.Duration(late[i]*float64(ms))
	}
	m := Machine{Known: true, Busy: 0.99, Others: 0.78, ServerRunq: 3, WakeWait: 1150 * us}
	v := JudgeClient(behind, 160*us, 6350*us, m)
	if v.Judged || v.Count != 0 || !strings.HasPrefix(v.Why, TooBusy) || !strings.Contains(v.Why, "251ms to 409ms") {
		t.Fatalf("connections 250 to 410 ms behind their schedule, on a starved machine: %+v", v)
	}
	if v := JudgeClient(behind, 160*us, 6350*us, Machine{}); v.Judged || strings.HasPrefix(v.Why, TooBusy) || !strings.Contains(v.Why, "behind") {
		t.Fatalf("connections behind their schedule, the machine not read: %+v", v)
	}
	if v := JudgeClient(behind, 160*us, 6350*us, Machine{Late: true}); v.Judged || !strings.HasPrefix(v.Why, TooBusy) || !strings.Contains(v.Why, "started late") {
		t.Fatalf("connections behind their schedule, the tools started late: %+v", v)
	}
	onTime := client(1.57, 1.53, 1.05, 1.49, 1.47, 1.3, 1.23, 1.04, 1.23, 1.47, 1.09, 1.28)
	for i := range onTime {
		onTime[i].SendLate = 300 * us
	}
	if v := JudgeClient(onTime, 160*us, 6350*us, m); !v.Judged || v.Count != 0 {
		t.Fatalf("the same waits, sent on time: %+v", v)
	}
	// Stalled connections fall behind too (Node's loop at 4 callers): a
	// stall is said from the send whatever the queue behind it.
	held := client(12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13)
	for i := range held {
		held[i].SendLate = 40 * ms
	}
	if v := JudgeClient(held, 250*us, 4*ms, Machine{}); !v.Judged || v.Count != 12 {
		t.Fatalf("every connection held, behind its schedule: %+v", v)
	}
}
