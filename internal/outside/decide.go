package outside

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// Verdict is what the outside view makes of a Trace.
type Verdict struct {
	// Held are the threads the blockers' calls held, by name.
	Held []culprit.Record
	// Groups say, for each family of held threads (names that differ in
	// their last number), how many were held and what the others did:
	// "2 of 4 nioEventLoopGroup-3-* threads held; the other 2 free (in
	// epoll_wait)".
	Groups []string
	// Notes say what could not be read or judged, and how to read a call.
	Notes []string
	// What looking cost: the looks' CPU (the kit's), how many stack dumps
	// were used, the longest one, and the longest pause of the JVM it
	// caused (PauseKnown: the JVM's counters were read for every dump).
	Looks      int
	LookCPU    time.Duration
	Dumps      int
	DumpMax    time.Duration
	PauseMax   time.Duration
	PauseKnown bool
}

// Cost says what looking cost in one line, or "".
func (v Verdict) Cost() string {
	if v.Looks == 0 {
		return ""
	}
	s := fmt.Sprintf("%d looks at /proc cost the kit %s of CPU", v.Looks, culprit.FormatHeld(v.LookCPU))
	if v.Dumps > 0 {
		s += fmt.Sprintf("; %d Java stack dump(s) (jcmd Thread.print) took %s at most", v.Dumps, culprit.FormatHeld(v.DumpMax))
		if v.PauseKnown {
			s += fmt.Sprintf(" and stopped the JVM %s at most (its safepoint counters)", culprit.FormatHeld(v.PauseMax))
		}
	}
	return s + "; all after the measured window"
}

// Lines are the verdict in words, but for the held threads themselves:
// the groups, the notes, the cost.
func (v Verdict) Lines() []string {
	out := append(append([]string{}, v.Groups...), v.Notes...)
	if c := v.Cost(); c != "" {
		out = append(out, c)
	}
	return out
}

// place is where a thread was at one look.
type place struct {
	kind string // "cpu", "idle", "call", "wait", "other"
	call string // the system call, or the kernel wait where the call is unreadable
	fd   string
}

func placeOf(th Thread) place {
	switch th.Syscall {
	case "running":
		return place{kind: "cpu"}
	case "none", "":
		if th.State == "R" {
			return place{kind: "cpu"}
		}
		if idleWaits[th.Wchan] {
			return place{kind: "idle", call: th.Wchan}
		}
		if th.Wchan == "" {
			return place{kind: "other"}
		}
		return place{kind: "wait", call: th.Wchan}
	}
	nr, err := strconv.Atoi(th.Syscall)
	if err != nil {
		return place{kind: "other"}
	}
	name := callName(nr)
	if idleCalls[name] {
		return place{kind: "idle", call: name}
	}
	return place{kind: "call", call: name, fd: th.FD}
}

// Where says where a thread was at one look, as the outside view judges
// it: kind "cpu" (on a CPU, or ready for one), "call" (in a system call
// that is not a wait for work: call "read", fd "socket to
// 127.0.0.1:5432"), "wait" (a kernel wait, call naming it), "idle" (a
// wait for work: an event loop's epoll_wait, an acceptor's accept), or
// "other" (unreadable). A futex call is where an idle pool thread rests as
// much as a thread blocked on a lock.
func Where(th Thread) (kind, call, fd string) {
	p := placeOf(th)
	return p.kind, p.call, p.fd
}

// busy says the place is a call, a wait or a CPU: not a wait for work.
func (p place) busy() bool { return p.kind == "cpu" || p.kind == "call" || p.kind == "wait" }

// ambiguous: a futex wait is every idle pool thread's too; only a thread
// seen elsewhere before the blockers came is judged by it.
func (p place) ambiguous() bool { return strings.HasPrefix(p.call, "futex") }

func (p place) words() string {
	switch {
	case p.kind == "cpu":
		return "on a CPU"
	case p.fd != "":
		return p.call + " on " + p.fd
	case p.kind == "wait":
		return "kernel wait " + p.call
	}
	return p.call
}

// heldShare is how much of the looks a thread must be found in one place
// (2 in 3: a loop blocked by back-to-back calls is found between two of
// them now and then), and at most how much of the looks before the
// blockers came it may have been there already.
const heldShare = 2.0 / 3

// Decide judges a trace: a thread is held when, while the blockers held,
// it was found busy (in a system call that is not a wait for work, or on
// a CPU) at 2 in 3 looks or more, named by the call it was found in most,
// where it was not before they came (for a futex, which is also where an
// idle thread rests: only a thread that had been waiting for work in an
// event wait), and is not one of a JVM's own threads; and, in the first of
// a JVM's stacks taken while they held, a thread with the application's
// frames in Thread.sleep, blocked on a monitor or reading a socket, that
// was not in that call before they came. A thread on a CPU that ran less than half the time it was
// looked at waited for one: starved, not held by a call.
func Decide(t *Trace) Verdict {
	var v Verdict
	v.Notes = append(v.Notes, t.Limits...)
	if b := t.BeforeJVM; b != nil && b.Err != "" && len(t.JVM) == 0 {
		v.Notes = append(v.Notes, b.Err) // none taken since: this says why
	}
	if len(t.During) < 2 {
		v.Notes = append(v.Notes, "the outside view took fewer than 2 looks while the blockers held: cannot judge its threads")
		return v
	}
	d := readDumps(t, &v)
	held := map[int]culprit.Record{}
	futexOnly := false
	for _, c := range candidates(t, d) {
		if clearedBy(c) != "" {
			continue
		}
		r := c.record(d.name(t, c.th), d)
		if r.Frames == nil && c.at.ambiguous() {
			futexOnly = true
		}
		held[c.tid] = r.Clean()
	}
	was := d.before(t, &v)
	for tid, r := range d.heldInFirst(was, held) {
		held[tid] = r
	}
	if futexOnly {
		v.Notes = append(v.Notes, "futex is a wait on a lock or a condition: a sleep, a lock and Atomics.wait look the same from outside (a JVM's stacks tell them apart)")
	}
	for _, r := range held {
		v.Held = append(v.Held, r)
	}
	slices.SortFunc(v.Held, func(a, b culprit.Record) int { return Natural(a.Thread, b.Thread) })
	var first map[int]JThread
	if len(d.dumps) > 0 {
		first = d.dumps[0]
	}
	v.Groups = groups(t, v.Held, d.names, first)
	v.Looks, v.LookCPU = len(t.Before)+len(t.During), time.Duration(t.LookCPUNs)
	return v
}

// vmThread says a dump lists the thread without a Java frame: one of the
// JVM's own threads (a compiler, a collector), which the application's
// calls never run on.
func vmThread(dumps []map[int]JThread, tid int) bool {
	for _, jts := range dumps {
		if jt, ok := jts[tid]; ok && len(jt.Frames) == 0 {
			return true
		}
	}
	return false
}

// inCall says the Java thread is in a call that holds it: Thread.sleep,
// blocked on a monitor, or reading from a socket or a file.
func inCall(jt JThread) bool {
	switch {
	case strings.Contains(jt.State, "(sleeping)"), strings.HasPrefix(jt.State, "BLOCKED"):
		return true
	case jt.State == "RUNNABLE" && len(jt.Frames) > 0:
		fn := jt.Frames[0].Function
		for _, io := range []string{".read0", ".readv0", ".socketRead0", ".Net.poll", ".Net.connect0", ".pread0"} {
			if strings.HasSuffix(fn, io) {
				return true
			}
		}
	}
	return false
}

// Family is a name without its last number: "nioEventLoopGroup-3-", or
// "" for a name that does not end in one.
func Family(name string) string {
	f := strings.TrimRight(name, "0123456789")
	if f == name || f == "" {
		return ""
	}
	return f
}

// Natural orders names with their last numbers as numbers: exec-9 before
// exec-10.
func Natural(a, b string) int {
	fa, fb := Family(a), Family(b)
	if fa != "" && fa == fb {
		na, _ := strconv.Atoi(a[len(fa):])
		nb, _ := strconv.Atoi(b[len(fb):])
		return cmp.Compare(na, nb)
	}
	return strings.Compare(a, b)
}

// groups says, for each family of held threads, how many of its threads
// were held and where the others were at the last look.
func groups(t *Trace, held []culprit.Record, names map[int]string, jts map[int]JThread) []string {
	last := t.During[len(t.During)-1]
	isHeld := map[string]bool{}
	var fams []string
	for _, r := range held {
		isHeld[r.Thread] = true
		if f := Family(r.Thread); f != "" && !slices.Contains(fams, f) {
			fams = append(fams, f)
		}
	}
	var out []string
	for _, f := range fams {
		nHeld, of := 0, 0
		where := map[string]int{}
		for _, th := range last.Threads {
			n := th.Comm
			if whole, ok := names[th.TID]; ok {
				n = whole
			}
			if Family(n) != f {
				continue
			}
			of++
			if isHeld[n] {
				nHeld++
				continue
			}
			w := placeOf(th).words()
			if jt, ok := jts[th.TID]; ok && waitsForWork(jt) {
				w = "waiting for work"
			}
			where[w]++
		}
		if of == 0 {
			continue
		}
		line := fmt.Sprintf("%d of %d %s* threads held", nHeld, of, f)
		if others := of - nHeld; others > 0 {
			var ws []string
			for w := range where {
				ws = append(ws, w)
			}
			slices.SortFunc(ws, func(a, b string) int { return cmp.Or(cmp.Compare(where[b], where[a]), strings.Compare(a, b)) })
			if len(ws) > 2 {
				ws = ws[:2]
			}
			line += fmt.Sprintf("; the other %d free (%s)", others, strings.Join(ws, ", "))
		}
		out = append(out, line)
	}
	return out
}

// waitsForWork says the Java thread is a pool's or a loop's idle wait.
func waitsForWork(jt JThread) bool {
	for _, f := range jt.Frames {
		for _, w := range []string{".getTask", ".takeTask", "EPoll.wait", "EPollSelectorImpl.doSelect", "ForkJoinPool.awaitWork"} {
			if strings.HasSuffix(f.Function, w) {
				return true
			}
		}
	}
	return false
}
