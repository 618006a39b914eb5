package experiment

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/results"
)

// sample is one reading, at one instant, of what the server, the load
// generator, the prober and the whole machine had used; a process not
// known (pid 0) or gone reads as absent.
type sample struct {
	at                  time.Time
	server, gen, prober *reading
	conns               *reading // the 12-connection prober beside a load, when one ran
	db                  *reading // the private PostgreSQL, all its processes
	machine             proc.Machine
}

type reading struct {
	u       proc.Usage
	threads int
}

func readProc(pid int) *reading {
	if pid <= 0 {
		return nil
	}
	u, threads, err := proc.Of(pid)
	if err != nil {
		return nil
	}
	return &reading{u: u, threads: threads}
}

func takeSample(server, gen, prober, db int) sample {
	s := sample{at: time.Now(), server: readProc(server), gen: readProc(gen), prober: readProc(prober), db: readTree(db)}
	s.machine, _ = proc.ReadMachine()
	return s
}

// readTree reads a process and its children (a PostgreSQL server and its
// backends): their CPU time summed, and how many they are as threads.
func readTree(pid int) *reading {
	if pid <= 0 {
		return nil
	}
	cpu, n, err := proc.TreeCPU(pid)
	if err != nil {
		return nil
	}
	return &reading{u: proc.Usage{UserNs: cpu}, threads: n}
}

// useOf is what was used between two samples, raw: internal/findings
// derives the per-request and per-core figures from it.
func useOf(s0, s1 sample, cores int) *results.Use {
	// Context switches and run-queue waits are counted thread by thread
	// (proc.Usage.Since): a thread that ended in between takes its counts
	// with it, an undercount, never a negative figure. CPU time is the
	// process's own, dead threads included.
	delta := func(a, b *reading) *results.ProcUse {
		if a == nil || b == nil {
			return nil
		}
		vol, invol, runq := b.u.Since(a.u)
		p := &results.ProcUse{CPUNs: max(0, b.u.CPUNs()-a.u.CPUNs()), VolCtxSw: vol, InvolCtxSw: invol,
			RunqWaitNs: runq, Threads: b.threads, PeakRSSBytes: b.u.MaxRSSBytes}
		for _, th := range b.u.ThreadsSince(a.u) {
			// The busiest of the threads that run the server's own code.
			if want := th.CPUNs + th.RunqWaitNs; want > 0 && !proc.RuntimeThread(th.Name) && (p.Busiest == nil || want > p.Busiest.CPUNs+p.Busiest.RunqWaitNs) {
				p.Busiest = &results.ThreadCPU{Name: th.Name, CPUNs: th.CPUNs, RunqWaitNs: th.RunqWaitNs}
			}
			p.RunqWaits += th.RunqWaits
			if n, ok := loopThread(th.Name); ok {
				p.LoopThreads = append(p.LoopThreads, results.LoopThread{Loop: n, RunqWaitNs: th.RunqWaitNs, RunqWaits: th.RunqWaits})
			}
		}
		slices.SortFunc(p.LoopThreads, func(x, y results.LoopThread) int { return x.Loop - y.Loop })
		return p
	}
	var db *results.ProcUse
	if s0.db != nil && s1.db != nil {
		db = &results.ProcUse{CPUNs: max(0, s1.db.u.CPUNs()-s0.db.u.CPUNs()), Threads: s1.db.threads}
	}
	return &results.Use{WindowNs: int64(s1.at.Sub(s0.at)), Cores: cores, MachineBusy: s1.machine.BusySince(s0.machine),
		Server: delta(s0.server, s1.server), Generator: delta(s0.gen, s1.gen), Prober: delta(s0.prober, s1.prober), Conns: delta(s0.conns, s1.conns), DB: db}
}

// loopThread reads a thread named for its loop ("loop-2", as the kit's
// loop server names each loop's thread).
func loopThread(name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "loop-"))
	return n, err == nil && strings.HasPrefix(name, "loop-") && n >= 0
}
