package loopwatch

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// dump takes every goroutine's stack, the world stopped meanwhile: one
// runtime.Stack, in a buffer sized from the last dump's bytes a goroutine
// and the goroutines now, so that it is rarely taken twice (an idle
// goroutine takes about 150 bytes, a deep stack a few kilobytes).
func (w *Watcher) dump() []byte {
	t0 := time.Now()
	g := runtime.NumGoroutine()
	per := max(w.dumpPer, 512)
	buf := make([]byte, max(g*per*5/4, 64<<10))
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 256<<20 {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	pause := time.Since(t0)
	w.dumpPer = len(buf)/max(g, 1) + 1
	w.mu.Lock()
	w.stats.Stacks++
	w.stats.StackPauseTotal += pause
	w.stats.StackPauseMax = max(w.stats.StackPauseMax, pause)
	w.mu.Unlock()
	return buf
}

// parse finds goroutine id in a runtime.Stack dump: its state and its
// frames, the culprit first; waitP says it is back from a system call and
// waits for a Go P (see backFromSyscall); inRuntime that it waits inside
// Go's runtime itself (see runtimeWait).
func parse(dump []byte, id uint64) (state string, frames []Frame, waitP, inRuntime bool) {
	head := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	i := 0
	for {
		j := bytes.Index(dump[i:], head)
		if j < 0 {
			return "", nil, false, false
		}
		i += j
		if i == 0 || dump[i-1] == '\n' {
			break
		}
		i += len(head)
	}
	g := dump[i:]
	if end := bytes.Index(g, []byte("\n\n")); end >= 0 {
		g = g[:end]
	}
	lines := strings.Split(string(g), "\n")
	state = strings.TrimSuffix(strings.TrimPrefix(lines[0], string(head)), "]:")
	if i := strings.Index(state, ","); i >= 0 { // "chan receive, 2 minutes"
		state = state[:i]
	}
	for i := 1; i+1 < len(lines); i += 2 {
		fn := lines[i]
		if strings.HasPrefix(fn, "created by ") {
			break
		}
		if j := strings.LastIndex(fn, "("); j > 0 {
			fn = fn[:j]
		}
		loc := strings.TrimSpace(lines[i+1])
		if j := strings.LastIndex(loc, " +0x"); j > 0 {
			loc = loc[:j]
		}
		f := Frame{Function: fn, File: loc}
		if j := strings.LastIndex(loc, ":"); j > 0 {
			f.File = loc[:j]
			f.Line, _ = strconv.Atoi(loc[j+1:])
		}
		frames = append(frames, f)
	}
	waitP = state == "runnable" && len(frames) > 0 && backFromSyscall(frames[0].Function)
	inRuntime = len(frames) > 0 && runtimeWait(state, frames[0].Function)
	return state, culpritFirst(frames), waitP, inRuntime
}

// runtimeWait says whether a goroutine in state, fn the innermost frame a
// dump shows of it, waits inside Go's runtime itself, not in a call of
// its own: the dump hides the runtime's own frames, so such a wait shows
// at the goroutine's own line (an allocation's). An allocation that
// starts a collection, or waits for one to start, waits on the runtime's
// semaphores ("semacquire" with no frame of the standard library's
// innermost: the standard library's own semaphores, a file's or a
// socket's lock, show its frames); one that must help the collector
// waits in an assist; one that stops the world waits for it to stop.
func runtimeWait(state, fn string) bool {
	switch state {
	case "GC assist wait", "GC assist marking", "stopping the world", "wait for GC cycle", "GC weak to strong wait":
		return true
	case "semacquire":
		return !standard(fn)
	}
	return false
}

// backFromSyscall says whether fn, the innermost frame a dump shows of a
// goroutine that is runnable, is where Go enters a system call (or a C
// call): the goroutine is back from it and waits for a P. A goroutine
// waits so in the runtime's exitsyscall, whose frames a dump hides; the
// runtime prints its stack from where the call was entered, as it does
// during the call ("syscall"). One preempted, or woken from a wait, shows
// where it stopped in its own code, or the call it waited in (a channel's,
// a lock's).
func backFromSyscall(fn string) bool {
	if strings.Contains(fn, "._Cfunc_") { // cgo's call of a C function
		return true
	}
	pkg, name := fn, ""
	if i := strings.LastIndex(fn, "."); i >= 0 {
		pkg, name = fn[:i], fn[i+1:]
	}
	return (pkg == "syscall" || pkg == "golang.org/x/sys/unix") &&
		(strings.HasPrefix(name, "Syscall") || strings.HasPrefix(name, "syscall"))
}

// culpritFirst reorders frames (innermost first) so that the innermost
// frame outside the standard library comes first, then its callers, then
// the standard library's frames it called.
func culpritFirst(frames []Frame) []Frame {
	for i, f := range frames {
		if !standard(f.Function) {
			return append(append([]Frame{}, frames[i:]...), frames[:i]...)
		}
	}
	return frames
}

// standard says whether fn is of Go's standard library or runtime (its
// package path has no dot in its first element, and is not main), or of
// its extensions under golang.org/x (x/sys's system calls, say): the
// caller of those is the culprit.
func standard(fn string) bool {
	first, _, _ := strings.Cut(fn, "/")
	if !strings.Contains(fn, "/") {
		first, _, _ = strings.Cut(fn, ".")
	}
	return first != "main" && (!strings.Contains(first, ".") || first == "golang.org" && strings.HasPrefix(fn, "golang.org/x/"))
}

// goid is the calling goroutine's id, from its stack's first line.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
