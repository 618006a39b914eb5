package loopwatch

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// stackOf takes every goroutine's stack (the world stops meanwhile) and
// returns goroutine id's state and frames.
func (w *Watcher) stackOf(id uint64) (string, []Frame) {
	// Every goroutine's stack is printed while the world is stopped: one
	// dump, in a buffer sized from the last one and the goroutines now, so
	// that it is rarely taken twice.
	t0 := time.Now()
	buf := make([]byte, max(w.dumpSize*5/4, runtime.NumGoroutine()*2048, 64<<10))
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 256<<20 {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	pause := time.Since(t0)
	w.dumpSize = len(buf)
	w.mu.Lock()
	w.stats.Stacks++
	w.stats.StackPauseTotal += pause
	w.stats.StackPauseMax = max(w.stats.StackPauseMax, pause)
	w.mu.Unlock()
	return parse(buf, id)
}

// parse finds goroutine id in a runtime.Stack dump: its state and its
// frames, the culprit first.
func parse(dump []byte, id uint64) (string, []Frame) {
	head := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	for _, g := range bytes.Split(dump, []byte("\n\n")) {
		if !bytes.HasPrefix(g, head) {
			continue
		}
		lines := strings.Split(string(g), "\n")
		state := strings.TrimSuffix(strings.TrimPrefix(lines[0], string(head)), "]:")
		if i := strings.Index(state, ","); i >= 0 { // "chan receive, 2 minutes"
			state = state[:i]
		}
		var frames []Frame
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
		return state, culpritFirst(frames)
	}
	return "", nil
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
