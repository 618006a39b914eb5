package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/outside"
)

// Proc's looks: one every procEvery over the window, at most
// maxProcLooks; a place is named when a thread was there at procShare of
// the window or more.
const (
	procEvery    = 20 * time.Millisecond
	maxProcLooks = 1000
	procShare    = 0.1
)

// Proc watches any process through /proc for o.Window: each thread's CPU
// time (exact, from the kernel's schedstat) and, at a look every 20 ms, the
// system call it is in and the peer of its descriptor. It names no frame:
// its Hint says how the process's runtime gives one. A Node.js process's
// main thread is its event loop; for other runtimes every thread is
// looked at.
func Proc(ctx context.Context, pid int, o Options) culprit.Service {
	o = o.withDefaults()
	s := culprit.Service{Source: culprit.SourceProc, ThresholdNs: int64(o.Threshold), Role: roleOther}
	rt := runtimeOf(pid)
	s.Hint = hints[rt]
	only := 0 // a thread to look at alone: Node's main thread
	if rt == "node" {
		s.Role, s.Serving, only = roleLoop, 1, pid
	}
	// The looks start at once: at the window's beginning.
	sleepCtx(ctx, time.Until(o.begin(time.Now())))
	looks := procLooks(ctx, pid, o, &s)
	if len(looks) < 2 {
		return s
	}
	s.WindowNs = looks[len(looks)-1].TimeNs - looks[0].TimeNs
	if s.WindowNs <= 0 {
		return s
	}
	s.Holds = procHolds(looks, pid, only, s.WindowNs)
	if only == 0 && len(s.Holds) > 0 {
		s.Limits = append(s.Limits, "watch: which of its threads serve connections is not known from /proc: every thread busy a tenth of the window or more is named")
	}
	return s
}

// procLooks looks at pid every procEvery to the window's end (at most
// maxProcLooks), saying in s what /proc would not tell and what the looks
// cost (their thread's CPU).
func procLooks(ctx context.Context, pid int, o Options, s *culprit.Service) []outside.Look {
	runtime.LockOSThread() // the looks' cost is their thread's CPU
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	var looks []outside.Look
	next := time.Now()
	end := next.Add(o.left())
	for len(looks) < maxProcLooks {
		l, limit, err := outside.LookAt(pid)
		if err != nil {
			s.Limits = append(s.Limits, "watch: "+strings.TrimPrefix(err.Error(), "outside: "))
			break
		}
		if limit != "" && len(s.Limits) == 0 {
			s.Limits = append(s.Limits, "watch: "+limit)
		}
		looks = append(looks, l)
		next = next.Add(procEvery)
		if next.After(end) {
			break
		}
		sleepCtx(ctx, time.Until(next))
		if ctx.Err() != nil {
			break
		}
	}
	s.CostNs = threadCPU() - cpu0
	return looks
}

// procHolds are the places the threads (only, when not 0) were at over
// the looks (two or more, window ns apart): a thread's CPU time, and each
// system call or kernel wait it was found in, when procShare of the window
// or more.
func procHolds(looks []outside.Look, pid, only int, window int64) []culprit.Hold {
	t := newTally()
	names := threadNames(looks[len(looks)-1], pid)
	for tid, ns := range cpuOver(looks[0], looks[len(looks)-1]) {
		if only != 0 && tid != only {
			continue
		}
		if float64(ns) >= procShare*float64(window) {
			t.add(names[tid], "on a CPU", "", nil, false, ns, 0, 0)
		}
	}
	n := int64(len(looks) - 1)
	for tid, spots := range spotsIn(looks, only) {
		for sp, k := range spots {
			if float64(k) >= procShare*float64(n) {
				t.add(names[tid], sp.state, sp.peer, nil, false, window*int64(k)/n, 0, 0)
			}
		}
	}
	return t.holds()
}

// cpuOver is each thread's CPU time from the first look to the last, ns:
// of the threads there at both.
func cpuOver(first, last outside.Look) map[int]int64 {
	ran := map[int]int64{} // tid -> CPU ns over the window
	for _, th := range first.Threads {
		ran[th.TID] = -th.RunNs
	}
	for _, th := range last.Threads {
		if _, ok := ran[th.TID]; ok {
			ran[th.TID] += th.RunNs
		}
	}
	return ran
}

// threadNames names the threads of a look by name, and by id where the
// kernel's 15 bytes of it are shared ("nioEventLoopGro (tid 4242)"); the
// process's own thread (pid) is its main thread.
func threadNames(l outside.Look, pid int) map[int]string {
	shared := map[string]int{}
	for _, th := range l.Threads {
		shared[th.Comm]++
	}
	names := map[int]string{}
	for _, th := range l.Threads {
		switch {
		case th.TID == pid:
			names[th.TID] = th.Comm + " (main thread)"
		case shared[th.Comm] > 1:
			names[th.TID] = fmt.Sprintf("%s (tid %d)", th.Comm, th.TID)
		default:
			names[th.TID] = th.Comm
		}
	}
	return names
}

// spot is where a look found a thread: a system call or kernel wait, and
// the peer of its socket.
type spot struct{ state, peer string }

// spotsIn counts, by thread (only, when not 0), the looks that found it in
// each system call or kernel wait, each look but the last standing for
// the time to the next. A thread on a CPU is counted exactly elsewhere; one
// waiting for work, or in a futex (a lock or an idle pool's rest alike),
// is not counted.
func spotsIn(looks []outside.Look, only int) map[int]map[spot]int {
	found := map[int]map[spot]int{}
	for _, l := range looks[:len(looks)-1] {
		for _, th := range l.Threads {
			if only != 0 && th.TID != only {
				continue
			}
			kind, call, fd := outside.Where(th)
			if kind != "call" && kind != "wait" || strings.HasPrefix(call, "futex") {
				continue
			}
			sp := spot{state: "in a system call (" + call + ")"}
			if kind == "wait" {
				sp.state = "in a kernel wait (" + call + ")"
			}
			if peer, ok := strings.CutPrefix(fd, "socket to "); ok {
				sp.peer = peer
			} else if fd != "" {
				sp.state += " on " + fd
			}
			if found[th.TID] == nil {
				found[th.TID] = map[spot]int{}
			}
			found[th.TID][sp]++
		}
	}
	return found
}

// runtimeOf names the process's runtime by its program's name: "node",
// "python", "java", or "".
func runtimeOf(pid int) string {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		exe = strings.TrimSpace(string(b))
	}
	base := filepath.Base(exe)
	switch {
	case base == "node" || base == "nodejs":
		return "node"
	case strings.HasPrefix(base, "python"):
		return "python"
	case base == "java" || outside.IsJVM(pid):
		return "java"
	}
	return ""
}

// hints say how each runtime gives the frame /proc cannot.
var hints = map[string]string{
	"node":   "its frame: start node with --cpu-prof (a .cpuprofile at exit, opened in Chrome's DevTools) to see which function held the loop",
	"python": "its frame: run asyncio in debug mode (PYTHONASYNCIODEBUG=1, or -X dev): every callback slower than 100 ms is logged with its name",
	"java":   "its frame: Flight Recorder names it where the JVM lets jcmd attach (not -XX:+DisableAttachMechanism) as the JVM's own user",
	"":       "its frame: a profiler of its runtime names it (perf top -p PID for native code)",
}

// threadCPU is the calling thread's CPU time, ns.
func threadCPU() int64 {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0
	}
	var ns int64
	fmt.Sscan(string(b), &ns)
	return ns
}
