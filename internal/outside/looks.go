package outside

import (
	"context"
	"runtime"
	"syscall"
	"time"
)

// New starts a trace of server's process pid, due to be left by the
// blockers at blockersEnd.
func New(server string, pid int, blockersEnd time.Time) *Trace {
	return &Trace{Schema: Schema, Server: server, PID: pid, BlockersEndNs: blockersEnd.UnixNano()}
}

// LookBefore takes n looks, every apart, before the blockers come.
func (t *Trace) LookBefore(ctx context.Context, n int, every time.Duration) {
	t.Before = append(t.Before, t.looks(ctx, n, every, time.Time{})...)
}

// LookDuring takes n looks, every apart, while the blockers hold: none
// that would end after by (a process of thousands of threads takes long
// to look at), when by is not zero.
func (t *Trace) LookDuring(ctx context.Context, n int, every time.Duration, by time.Time) {
	t.During = append(t.During, t.looks(ctx, n, every, by)...)
}

// DumpJVMBefore takes the Java threads' stacks once before the blockers
// come, when the process is a JVM, for at most limit.
func (t *Trace) DumpJVMBefore(ctx context.Context, limit time.Duration) {
	if IsJVM(t.PID) {
		t.BeforeJVM = DumpJVM(ctx, t.PID, limit)
	}
}

// DumpJVM takes the Java threads' stacks when the process is a JVM, each
// dump for at most limit, and again while a thread the looks found held
// was not caught in its call (MaxDumps in all), until by.
func (t *Trace) DumpJVM(ctx context.Context, limit time.Duration, by time.Time) {
	if !IsJVM(t.PID) {
		return
	}
	for len(t.JVM) < MaxDumps && time.Now().Add(limit).Before(by) {
		j := DumpJVM(ctx, t.PID, limit)
		t.JVM = append(t.JVM, *j)
		if j.Err != "" || !t.uncaught() {
			return
		}
	}
}

// uncaught says a thread the looks found held has no stack in its call yet.
func (t *Trace) uncaught() bool {
	for _, r := range Decide(t).Held {
		if len(r.Frames) == 0 {
			return true
		}
	}
	return false
}

func (t *Trace) looks(ctx context.Context, n int, every time.Duration, by time.Time) []Look {
	// The looks' cost is their own thread's CPU time.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	defer func() { t.LookCPUNs += max(0, threadCPU()-cpu0) }()
	var out []Look
	next := time.Now()
	var took time.Duration // the longest look so far
	for i := 0; i < n && len(t.Before)+len(t.During)+len(out) < 2*MaxLooks; i++ {
		if i > 0 {
			next = next.Add(every)
			select {
			case <-ctx.Done():
				return out
			case <-time.After(time.Until(next)):
			}
		}
		if !by.IsZero() && time.Now().Add(took).After(by) {
			t.limit("the blockers stopped before every look was taken: fewer looks")
			return out
		}
		began := time.Now()
		l, limit, err := LookAt(t.PID)
		took = max(took, time.Since(began))
		if err != nil {
			t.limit(err.Error())
			return out
		}
		if limit != "" {
			t.limit(limit)
		}
		out = append(out, l)
	}
	return out
}

// limit records a line once.
func (t *Trace) limit(s string) {
	for _, l := range t.Limits {
		if l == s {
			return
		}
	}
	if len(t.Limits) < MaxLimits {
		t.Limits = append(t.Limits, s)
	}
}

// threadCPU is the calling thread's CPU time, ns.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
