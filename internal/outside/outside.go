// Package outside names what held a server's threads, seen from outside the
// server and without instrumenting it: from Linux's /proc (each thread's
// name, state, the system call it is in and the descriptor behind it, its
// CPU time) and, for a JVM, from one `jcmd PID Thread.print` (every Java
// thread's stack). The kit looks while its own blockers hold the server,
// since it knows when they do: a few looks before they come, a few while
// they hold, after the measured window so that nothing measured is touched.
//
// What it saw is kept raw (a Trace, in the run directory) and judged by
// Decide, which fills the culprit record loopwatch's episodes fill inside
// the kit's Go servers. A Trace may come from a stranger: ReadIn caps it.
package outside

import (
	"fmt"
	"strings"

	"github.com/bystander-kit/bystander/internal/results"
)

// Schema names the format of a Trace file.
const Schema = "bystander.threads/v1"

// Trace is what the outside view saw of one server in one measurement.
type Trace struct {
	Schema string `json:"schema"`
	Server string `json:"server"`
	PID    int    `json:"pid"`
	// Before are looks taken before the blockers came, During while they
	// held (after the measured window, before they stopped).
	Before []Look `json:"before"`
	During []Look `json:"during"`
	// JVM are the Java threads' stacks, taken after the During looks: once,
	// and again (MaxDumps in all) while a thread the looks found held had
	// not yet been caught in its call.
	JVM []JVM `json:"jvm,omitempty"`
	// BeforeJVM is one dump taken before the blockers came: a thread that
	// was in the same call then (a main thread's periodic sleep) is not
	// theirs.
	BeforeJVM *JVM `json:"jvm_before,omitempty"`
	// BlockersEndNs is when the blockers were due to stop (unix ns): a
	// stack taken after it says nothing of them.
	BlockersEndNs int64 `json:"blockers_end_unix_ns"`
	// Limits say, a line each, what could not be read and why.
	Limits []string `json:"limits,omitempty"`
	// LookCPUNs is the CPU the looks cost the kit (its own process).
	LookCPUNs int64 `json:"look_cpu_ns"`
}

// Look is every thread of the process at one moment.
type Look struct {
	TimeNs  int64    `json:"time_unix_ns"`
	Threads []Thread `json:"threads"`
}

// Thread is one thread at one look, as /proc/PID/task/TID tells it.
type Thread struct {
	TID  int    `json:"tid"`
	Comm string `json:"comm"` // its name, cut at 15 bytes by the kernel
	// State is /proc's letter: R (on a CPU or ready for one), S
	// (sleeping), D (in an uninterruptible wait), ...
	State string `json:"state"`
	// Syscall is the system call it is in, by number; "running" when it
	// is on a CPU or ready for one, "none" when it waits outside a call,
	// "" when it could not be read (see Trace.Limits).
	Syscall string `json:"syscall"`
	Wchan   string `json:"wchan,omitempty"` // the kernel function it waits in
	// FD is what the call's descriptor names, for a call that takes one:
	// "socket to 127.0.0.1:5432", a file's path, "a pipe".
	FD    string `json:"fd,omitempty"`
	RunNs int64  `json:"run_ns"` // its CPU time so far (schedstat)
}

// JVM is one `jcmd PID Thread.print`.
type JVM struct {
	StartNs int64  `json:"start_unix_ns"`
	EndNs   int64  `json:"end_unix_ns"`
	Dump    string `json:"thread_print,omitempty"`
	Err     string `json:"error,omitempty"`
	// PauseNs is how long the JVM stood at safepoints while jcmd ran, over
	// Safepoints safepoints, from its own counters (hsperfdata); PauseKnown
	// is false where they could not be read.
	PauseNs    int64 `json:"pause_ns"`
	Safepoints int64 `json:"safepoints"`
	PauseKnown bool  `json:"pause_known"`
	CPUNs      int64 `json:"jcmd_cpu_ns"` // jcmd's own CPU
	// refused: jcmd answered, and not with stacks (Trace.Refused); known
	// to the run that took the dump only, not kept in the file.
	refused bool
}

// Refused says whether jcmd refused a dump of this trace's (it answered,
// and not with stacks: a JVM that refuses attach, or not a JVM), rather
// than ran out of time: asking again in the same run will not help.
func (t *Trace) Refused() bool {
	if t.BeforeJVM != nil && t.BeforeJVM.refused {
		return true
	}
	for _, j := range t.JVM {
		if j.refused {
			return true
		}
	}
	return false
}

// Caps on what a Trace keeps, for one read from a stranger's directory.
const (
	MaxLooks    = 16
	MaxThreads  = 4096
	MaxDump     = 4 << 20
	MaxDumps    = 3
	MaxLimits   = 16
	maxText     = 512
	maxTextComm = 64
)

func cut(s string, n int) string {
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// Clean caps t: at most MaxLooks looks of MaxThreads threads, a dump of
// MaxDump bytes, MaxLimits lines, strings cut.
func (t *Trace) Clean() {
	t.Server = cut(t.Server, maxText)
	clean := func(ls []Look) []Look {
		if len(ls) > MaxLooks {
			ls = ls[:MaxLooks]
		}
		for i := range ls {
			if len(ls[i].Threads) > MaxThreads {
				ls[i].Threads = ls[i].Threads[:MaxThreads]
			}
			for j := range ls[i].Threads {
				th := &ls[i].Threads[j]
				th.Comm, th.State, th.Syscall = cut(th.Comm, maxTextComm), cut(th.State, 8), cut(th.Syscall, 16)
				th.Wchan, th.FD = cut(th.Wchan, maxTextComm), cut(th.FD, maxText)
			}
		}
		return ls
	}
	t.Before, t.During = clean(t.Before), clean(t.During)
	if len(t.Limits) > MaxLimits {
		t.Limits = t.Limits[:MaxLimits]
	}
	for i := range t.Limits {
		t.Limits[i] = cut(t.Limits[i], maxText)
	}
	if len(t.JVM) > MaxDumps {
		t.JVM = t.JVM[:MaxDumps]
	}
	for i := range t.JVM {
		t.JVM[i].Dump, t.JVM[i].Err = cut(t.JVM[i].Dump, MaxDump), cut(t.JVM[i].Err, maxText)
	}
	if b := t.BeforeJVM; b != nil {
		b.Dump, b.Err = cut(b.Dump, MaxDump), cut(b.Err, maxText)
	}
}

// ReadIn reads the trace file rel names in run directory dir, confined
// and capped, strictly, and refuses other schema versions.
func ReadIn(dir, rel string) (*Trace, error) {
	var t Trace
	if err := results.ReadIn(dir, rel, results.MaxFileBytes, &t); err != nil {
		return nil, err
	}
	if t.Schema != Schema {
		return nil, fmt.Errorf("outside: %s: schema %q, this program reads %q", rel, t.Schema, Schema)
	}
	t.Clean()
	return &t, nil
}
