package outside

import (
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
)

const ms = int64(time.Millisecond)

// trace builds a trace of looks 40 ms apart: before[i] and during[i] are
// each look's threads.
func trace(before, during [][]Thread) *Trace {
	t := &Trace{Schema: Schema, PID: 100, BlockersEndNs: 10_000 * ms}
	for i, ths := range before {
		t.Before = append(t.Before, Look{TimeNs: int64(i) * 40 * ms, Threads: ths})
	}
	for i, ths := range during {
		t.During = append(t.During, Look{TimeNs: 5000*ms + int64(i)*40*ms, Threads: ths})
	}
	return t
}

// same is n looks of the same threads.
func same(n int, ths ...Thread) [][]Thread {
	out := make([][]Thread, n)
	for i := range out {
		out[i] = ths
	}
	return out
}

func heldNames(v Verdict) string {
	var out []string
	for _, r := range v.Held {
		out = append(out, r.Thread+": "+r.Words())
	}
	return strings.Join(out, "\n")
}

var (
	epoll = Thread{State: "S", Syscall: "232"} // epoll_wait on amd64
	futex = Thread{State: "S", Syscall: "202"}
	sleep = Thread{State: "S", Syscall: "35"}
)

func with(th Thread, tid int, comm string) Thread {
	th.TID, th.Comm = tid, comm
	return th
}

// TestDecide: what is held and what is not, from /proc's looks alone.
func TestDecide(t *testing.T) {
	if callName(232) != "epoll_wait" {
		t.Skip("the synthetic looks use amd64's system call numbers")
	}
	loop := func(th Thread) Thread { return with(th, 101, "loop-1") }
	gc := with(futex, 102, "GC Thread#0")
	t.Run("a loop from its event wait to a futex", func(t *testing.T) {
		during := same(8, loop(futex), gc)
		during[3] = []Thread{loop(Thread{State: "R", Syscall: "running"}), gc} // between two calls
		during[5] = []Thread{loop(epoll), gc}                                  // and waiting for the next
		v := Decide(trace(same(3, loop(epoll), gc), during))
		if len(v.Held) != 1 || v.Held[0].Thread != "loop-1" || v.Held[0].State != "futex" || v.Held[0].Found != 7 || v.Held[0].Looks != 8 ||
			v.Held[0].HeldNs != 280*ms || v.Held[0].Cause != culprit.Blocked {
			t.Fatalf("held:\n%s", heldNames(v))
		}
		if w := v.Held[0].Words(); w != "thread loop-1 held at 7 of 8 looks over 280 ms in futex" {
			t.Errorf("words %q", w)
		}
		if !strings.Contains(strings.Join(v.Notes, "\n"), "look the same from outside") {
			t.Errorf("a futex without a stack, unexplained: %q", v.Notes)
		}
	})
	t.Run("busy at fewer than 2 in 3 looks", func(t *testing.T) {
		during := same(6, loop(epoll))
		during[0], during[1], during[2] = []Thread{loop(futex)}, []Thread{loop(futex)}, []Thread{loop(futex)}
		if v := Decide(trace(same(3, loop(epoll)), during)); len(v.Held) != 0 {
			t.Errorf("held:\n%s", heldNames(v))
		}
	})
	t.Run("busy before the blockers came", func(t *testing.T) {
		if v := Decide(trace(same(3, loop(sleep)), same(8, loop(sleep)))); len(v.Held) != 0 {
			t.Errorf("held:\n%s", heldNames(v))
		}
	})
	t.Run("a futex after work, not after an event wait", func(t *testing.T) {
		working := loop(Thread{State: "R", Syscall: "running"}) // a JIT compiler, compiling
		if v := Decide(trace(same(3, working), same(8, loop(futex)))); len(v.Held) != 0 {
			t.Errorf("held:\n%s", heldNames(v))
		}
	})
	t.Run("a futex of a thread not seen before", func(t *testing.T) {
		if v := Decide(trace(nil, same(8, loop(futex)))); len(v.Held) != 0 {
			t.Errorf("held:\n%s", heldNames(v))
		}
		if v := Decide(trace(nil, same(8, loop(sleep)))); len(v.Held) != 1 || v.Held[0].State != "nanosleep" {
			t.Errorf("a nanosleep not held:\n%s", heldNames(v))
		}
	})
	t.Run("a read on a socket", func(t *testing.T) {
		rd := Thread{State: "S", Syscall: "0", FD: "socket to 127.0.0.1:5432"}
		v := Decide(trace(same(3, loop(epoll)), same(8, loop(rd))))
		if len(v.Held) != 1 || !strings.HasSuffix(v.Held[0].Words(), "in read on socket to 127.0.0.1:5432") {
			t.Errorf("held:\n%s", heldNames(v))
		}
	})
	cpu := func(share float64) [][]Thread {
		out := make([][]Thread, 8)
		for i := range out {
			out[i] = []Thread{loop(Thread{State: "R", Syscall: "running", RunNs: int64(float64(i*40*int(ms)) * share)})}
		}
		return out
	}
	t.Run("on a CPU", func(t *testing.T) {
		v := Decide(trace(same(3, loop(epoll)), cpu(0.95)))
		if len(v.Held) != 1 || v.Held[0].Cause != culprit.Blocked || v.Held[0].State != "on a CPU" {
			t.Errorf("held:\n%s", heldNames(v))
		}
	})
	t.Run("ready for a CPU, not on one", func(t *testing.T) {
		v := Decide(trace(same(3, loop(epoll)), cpu(0.1)))
		if len(v.Held) != 1 || v.Held[0].Cause != culprit.Starved || !strings.Contains(v.Held[0].Words(), "did not get a CPU") {
			t.Errorf("held:\n%s", heldNames(v))
		}
	})
	t.Run("one look", func(t *testing.T) {
		v := Decide(trace(same(3, loop(epoll)), same(1, loop(sleep))))
		if len(v.Held) != 0 || !strings.Contains(strings.Join(v.Notes, "\n"), "cannot judge") {
			t.Errorf("held:\n%s\nnotes %q", heldNames(v), v.Notes)
		}
	})
	t.Run("the main thread is named so", func(t *testing.T) {
		v := Decide(trace(same(3, with(epoll, 100, "node")), same(8, with(sleep, 100, "node"))))
		if len(v.Held) != 1 || v.Held[0].Thread != "node (main thread)" {
			t.Errorf("held:\n%s", heldNames(v))
		}
	})
}

// threadsOf are a dump's threads as /proc would list them, all in th's
// place but those in moved, in theirs.
func threadsOf(t *testing.T, dump string, th Thread, moved map[string]Thread) []Thread {
	t.Helper()
	var out []Thread
	for _, jt := range Parse(dump) {
		if jt.TID == 0 {
			continue
		}
		x := th
		if m, ok := moved[jt.Name]; ok {
			x = m
		}
		out = append(out, with(x, jt.TID, cut(jt.Name, 15)))
	}
	return out
}

// TestDecideNetty: Netty's two blocked loops, found in a futex by /proc,
// named whole with the application's frame by the JVM's stacks; the other
// two loops free.
func TestDecideNetty(t *testing.T) {
	if callName(232) != "epoll_wait" {
		t.Skip("the synthetic looks use amd64's system call numbers")
	}
	dump := readDump(t, "netty-2-held.txt")
	idle := threadsOf(t, dump, futex, map[string]Thread{"nioEventLoopGroup-3-1": epoll, "nioEventLoopGroup-3-2": epoll,
		"nioEventLoopGroup-3-3": epoll, "nioEventLoopGroup-3-4": epoll, "nioEventLoopGroup-2-1": epoll})
	held := threadsOf(t, dump, futex, map[string]Thread{"nioEventLoopGroup-3-1": epoll, "nioEventLoopGroup-3-2": epoll, "nioEventLoopGroup-2-1": epoll})
	tr := trace(same(3, idle...), same(8, held...))
	tr.JVM = []JVM{{StartNs: 6000 * ms, EndNs: 6300 * ms, Dump: dump, PauseKnown: true, PauseNs: 800_000, Safepoints: 3}}
	v := Decide(tr)
	if len(v.Held) != 2 {
		t.Fatalf("held:\n%s", heldNames(v))
	}
	// A JVM thread without Java frames is the VM's own: not held even
	// where the looks would say so.
	c2 := threadsOf(t, dump, futex, map[string]Thread{"nioEventLoopGroup-3-1": epoll, "nioEventLoopGroup-3-2": epoll,
		"nioEventLoopGroup-3-3": epoll, "nioEventLoopGroup-3-4": epoll, "nioEventLoopGroup-2-1": epoll, "C2 CompilerThread0": sleep})
	trC2 := trace(same(3, idle...), same(8, c2...))
	trC2.JVM = tr.JVM
	if v := Decide(trC2); len(v.Held) != 0 {
		t.Errorf("a VM thread held:\n%s", heldNames(v))
	}
	trC2.JVM = nil // without the stacks, the looks alone would say so
	if v := Decide(trC2); len(v.Held) != 1 || v.Held[0].State != "nanosleep" {
		t.Errorf("without stacks:\n%s", heldNames(v))
	}
	for i, r := range v.Held {
		want := []string{"nioEventLoopGroup-3-3", "nioEventLoopGroup-3-4"}[i]
		if r.Thread != want || r.State != "Thread.sleep" || r.Culprit().Short() != "bystander.Protocol.block (Protocol.java:36)" {
			t.Errorf("%d: %s", i, r.Words())
		}
	}
	if len(v.Groups) != 1 || v.Groups[0] != "2 of 4 nioEventLoopGroup-3-* threads held; the other 2 free (waiting for work)" {
		t.Errorf("groups %q", v.Groups)
	}
	if c := v.Cost(); c != "11 looks at /proc cost the kit 0.0 ms of CPU; 1 Java stack dump(s) (jcmd Thread.print) took 300 ms at most and stopped the JVM 0.8 ms at most (its safepoint counters); all after the measured window" {
		t.Errorf("cost %q", c)
	}
	// Stacks printed after the blockers stopped say nothing of them.
	tr.BlockersEndNs = 6100 * ms
	v = Decide(tr)
	if len(v.Held) != 2 || v.Held[0].Frames != nil || !strings.Contains(strings.Join(v.Notes, "\n"), "after the blockers had stopped") {
		t.Errorf("late stacks used:\n%s\n%q", heldNames(v), v.Notes)
	}
}

// TestDecideTomcat: Tomcat's 4 workers in Thread.sleep at one dump, named
// beside the others waiting for work; its main thread, asleep in the same
// place before the blockers came, is not theirs.
func TestDecideTomcat(t *testing.T) {
	if callName(232) != "epoll_wait" {
		t.Skip("the synthetic looks use amd64's system call numbers")
	}
	dump, before := readDump(t, "tomcat-4-held.txt"), readDump(t, "tomcat-before.txt")
	ths := threadsOf(t, dump, futex, nil)
	tr := trace(same(3, ths...), same(8, ths...))
	tr.JVM = []JVM{{StartNs: 6000 * ms, EndNs: 6300 * ms, Dump: dump}}
	tr.BeforeJVM = &JVM{Dump: before}
	v := Decide(tr)
	var names []string
	for _, r := range v.Held {
		names = append(names, r.Thread)
		if r.Culprit().Short() != "bystander.Protocol.block (Protocol.java:36)" || !strings.HasPrefix(r.Words(), "thread "+r.Thread+" found in Thread.sleep at") {
			t.Errorf("%s", r.Words())
		}
	}
	if got := strings.Join(names, ","); got != "http-nio-127.0.0.1-18092-exec-181,http-nio-127.0.0.1-18092-exec-193,http-nio-127.0.0.1-18092-exec-195,http-nio-127.0.0.1-18092-exec-198" {
		t.Errorf("held %s", got)
	}
	if len(v.Groups) != 1 || v.Groups[0] != "4 of 16 http-nio-127.0.0.1-18092-exec-* threads held; the other 12 free (waiting for work)" {
		t.Errorf("groups %q", v.Groups)
	}
	// Without the stacks from before, only the looks name threads.
	tr.BeforeJVM = nil
	if v := Decide(tr); len(v.Held) != 0 || !strings.Contains(strings.Join(v.Notes, "\n"), "no Java stacks from before") {
		t.Errorf("held without a baseline:\n%s", heldNames(v))
	}
}
