// Package proc reads what the operating system counts for this process: CPU
// time and context switches, so that every program can report its own cost.
package proc

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Usage is the process's resource use since it started.
type Usage struct {
	UserNs      int64 `json:"user_ns"`
	SystemNs    int64 `json:"system_ns"`
	VolCtxSw    int64 `json:"voluntary_ctx_switches"`
	InvolCtxSw  int64 `json:"involuntary_ctx_switches"`
	MaxRSSBytes int64 `json:"max_rss_bytes"`
	// RunqWaitNs is how long the process's threads waited, runnable, for a
	// CPU (the second field of /proc/PID/task/*/schedstat, summed): what a
	// busy machine costs a process that wants to run. Read by Of only.
	RunqWaitNs int64 `json:"runq_wait_ns,omitempty"`
	// threads holds the per-thread counts behind the three sums above, by
	// thread id, so that Since can take a delta thread by thread. Read by
	// Of only; never written out.
	threads map[string]threadCounts
}

type threadCounts struct {
	vol, invol, runq int64
	// cpu is how long the thread ran on a CPU (schedstat's first field,
	// ns).
	cpu int64
	// waits is how many times the thread was put on a CPU (schedstat's
	// third field, its timeslices): each began a wait, short or long.
	waits int64
	name  string // its comm, at most 15 characters
}

// ThreadUse is what one thread did between two readings: how long it
// waited, runnable, for a CPU, over how many waits, and how long it ran on
// one.
type ThreadUse struct {
	ID         string
	Name       string
	RunqWaitNs int64
	RunqWaits  int64
	CPUNs      int64
}

// ThreadsSince is each thread's run-queue waits between an earlier reading
// and this one (by Of), as Since takes them; nil for readings not made by
// Of.
func (u Usage) ThreadsSince(before Usage) []ThreadUse {
	if u.threads == nil || before.threads == nil {
		return nil
	}
	var out []ThreadUse
	for id, now := range u.threads {
		then := before.threads[id]
		if now.runq < then.runq || now.waits < then.waits || now.cpu < then.cpu || now.name != then.name && then.name != "" {
			then = threadCounts{}
		}
		out = append(out, ThreadUse{ID: id, Name: now.name, RunqWaitNs: now.runq - then.runq, RunqWaits: now.waits - then.waits, CPUNs: now.cpu - then.cpu})
	}
	slices.SortFunc(out, func(a, b ThreadUse) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// RuntimeThread says whether a thread's name (its comm, at most 15
// characters) is one of a JVM's own threads, which run none of the
// application's code: HotSpot's compilers, collectors and housekeepers.
// A service's call runs on its own threads; on a JVM that has just
// started, its compiler threads can be the busiest (C2 wanted a CPU 87%
// of a window in which a Netty shop's loops only waited on a socket).
func RuntimeThread(name string) bool {
	for _, p := range []string{"C1 CompilerThre", "C2 CompilerThre", "GC Thread#", "G1 ", "VM Thread", "VM Periodic Tas", "Sweeper thread",
		"Common-Cleaner", "Signal Dispatch", "Reference Handl", "Finalizer", "Service Thread", "Monitor Deflati", "Notification Th", "Attach Listener"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Since is what the process's threads did between an earlier reading and
// this one (context switches and run-queue wait), taken thread by thread:
// a thread alive at both readings counts its difference, one that began
// in between counts all it has. One that ended in between counts nothing,
// since the kernel keeps no counts for it: an undercount, never a fall (a
// difference of the sums falls, or says nothing, when the threads that end
// had waited as long as the ones that begin). Readings not made by Of
// fall back to the difference of the sums, floored at 0.
func (u Usage) Since(before Usage) (vol, invol, runqNs int64) {
	if u.threads == nil || before.threads == nil {
		return max(0, u.VolCtxSw-before.VolCtxSw), max(0, u.InvolCtxSw-before.InvolCtxSw), max(0, u.RunqWaitNs-before.RunqWaitNs)
	}
	for id, now := range u.threads {
		then := before.threads[id] // zero for a thread that began in between
		// A thread id reused by a new thread can read lower than its
		// predecessor: count it from 0 then.
		if now.vol < then.vol || now.invol < then.invol || now.runq < then.runq {
			then = threadCounts{}
		}
		vol += now.vol - then.vol
		invol += now.invol - then.invol
		runqNs += now.runq - then.runq
	}
	return vol, invol, runqNs
}

// CPUNs is user plus system CPU time in nanoseconds.
func (u Usage) CPUNs() int64 { return u.UserNs + u.SystemNs }

// Self reads the calling process's usage (all its threads).
func Self() Usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Usage{}
	}
	return Usage{
		UserNs:      time.Duration(ru.Utime.Nano()).Nanoseconds(),
		SystemNs:    time.Duration(ru.Stime.Nano()).Nanoseconds(),
		VolCtxSw:    int64(ru.Nvcsw),
		InvolCtxSw:  int64(ru.Nivcsw),
		MaxRSSBytes: int64(ru.Maxrss) * 1024,
	}
}

// statFields are the fields of /proc/PID/stat after the command name,
// which is in parentheses and may hold spaces: f[0] is field 3 (state),
// f[1] the parent's PID, utime f[11], stime f[12], num_threads f[17]. Nil
// when malformed.
func statFields(stat []byte) []string {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

// cpuOf is the user and system CPU time of statFields f, in ns (f has 13
// fields at least).
func cpuOf(f []string) (userNs, systemNs int64) {
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut * int64(time.Second) / clockTicks, st * int64(time.Second) / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc CPU times; 100 on Linux.
const clockTicks = 100

// Of reads another process's usage from /proc: CPU time of all its threads
// (utime+stime of /proc/PID/stat), context switches and run-queue waits
// summed over its threads (/proc/PID/task/*/status and schedstat; kept per
// thread too, for Since), and its peak RSS (VmHWM). Threads is how many it
// has now.
func Of(pid int) (Usage, int, error) {
	var u Usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, 0, fmt.Errorf("proc: %w", err)
	}
	f := statFields(stat)
	if len(f) < 18 {
		return u, 0, fmt.Errorf("proc: malformed /proc/%d/stat", pid)
	}
	threads, _ := strconv.Atoi(f[17])
	u.UserNs, u.SystemNs = cpuOf(f)
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	u.threads = make(map[string]threadCounts, len(tasks))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // the thread ended meanwhile
		}
		c := threadCounts{vol: statusField(b, "voluntary_ctxt_switches:"), invol: statusField(b, "nonvoluntary_ctxt_switches:")}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name())); err == nil {
			if f := strings.Fields(string(b)); len(f) >= 3 {
				c.cpu, _ = strconv.ParseInt(f[0], 10, 64)
				c.runq, _ = strconv.ParseInt(f[1], 10, 64)
				c.waits, _ = strconv.ParseInt(f[2], 10, 64)
			}
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/comm", pid, t.Name())); err == nil {
			c.name = strings.TrimSpace(string(b))
		}
		u.threads[t.Name()] = c
		u.VolCtxSw += c.vol
		u.InvolCtxSw += c.invol
		u.RunqWaitNs += c.runq
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		u.MaxRSSBytes = statusField(b, "VmHWM:") * 1024
	}
	return u, threads, nil
}

func statusField(b []byte, name string) int64 {
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			v, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return v
		}
	}
	return 0
}

// Machine is a snapshot of the whole machine's CPU time, from /proc/stat.
type Machine struct {
	TotalTicks int64
	IdleTicks  int64 // idle + iowait
}

// ReadMachine reads the aggregate "cpu" line of /proc/stat.
func ReadMachine() (Machine, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Machine{}, fmt.Errorf("proc: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return Machine{}, fmt.Errorf("proc: malformed /proc/stat")
	}
	var m Machine
	for i, s := range f[1:] {
		v, _ := strconv.ParseInt(s, 10, 64)
		m.TotalTicks += v
		if i == 3 || i == 4 { // idle, iowait
			m.IdleTicks += v
		}
	}
	return m, nil
}

// BusySince is the share of all CPUs that was busy between then and m.
func (m Machine) BusySince(then Machine) float64 {
	total := m.TotalTicks - then.TotalTicks
	if total <= 0 {
		return 0
	}
	return 1 - float64(m.IdleTicks-then.IdleTicks)/float64(total)
}

// TreeCPU is the CPU time (user and system, ns) of pid and its children
// (a PostgreSQL server and the backends it forked), and how many processes
// that is. A child that ended between two readings takes its time with it.
func TreeCPU(pid int) (cpuNs int64, procs int, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, fmt.Errorf("proc: %w", err)
	}
	found := false
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := statFields(stat)
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if n != pid && ppid != pid {
			continue
		}
		found = found || n == pid
		user, system := cpuOf(f)
		cpuNs += user + system
		procs++
	}
	if !found {
		return 0, 0, fmt.Errorf("proc: no process %d", pid)
	}
	return cpuNs, procs, nil
}
