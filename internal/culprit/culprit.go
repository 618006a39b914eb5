// Package culprit is the one form the kit carries for what held a loop or
// a thread: which, for how long, why (its callback blocked, or its thread
// did not get a CPU), what it was doing and where, the culprit frame
// first. loopwatch's episodes fill it inside the kit's Go servers; the
// outside view fills it for servers that are not Go.
//
// A Record may come from a stranger's run directory or server: Clean caps
// it before anything reads it, and a page escapes what it shows.
package culprit

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
)

// The causes, as loopwatch names them.
const (
	Blocked = "blocked" // the callback held its loop
	Starved = "starved" // its thread waited for a CPU: not a blocking call
	// WaitingForP: its goroutine, back from a system call, waited for a
	// Go P: not a blocking call.
	WaitingForP = "waiting_for_p"
	Unknown     = "unknown" // cannot tell (no locked thread)
)

// Record is one loop (or thread) held past a threshold.
type Record struct {
	Loop   int    `json:"loop"`             // -1: a thread that is not a known loop
	Thread string `json:"thread,omitempty"` // the thread's name, where known
	// StartNs is when the hold began (unix ns), HeldNs how long it lasted
	// (so far, unless Ended).
	StartNs int64  `json:"start_unix_ns"`
	HeldNs  int64  `json:"held_ns"`
	Ended   bool   `json:"ended"`
	Cause   string `json:"cause"`
	// Route is the request the loop was serving, where known.
	Route string `json:"route,omitempty"`
	// State is what the holding goroutine or thread was doing: "syscall",
	// "sleep", "chan receive", "running", ...
	State string `json:"state,omitempty"`
	// Frames are its stack, the culprit first.
	Frames []Frame `json:"frames,omitempty"`
	// Looks and Found, for a thread seen from outside: at how many looks
	// it was found held, of how many (HeldNs is then the time between the
	// first and the last of them).
	Looks int `json:"looks,omitempty"`
	Found int `json:"found,omitempty"`
}

// Frame is one call.
type Frame struct {
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
}

// FromEpisode is loopwatch's episode of loop index, serving route.
func FromEpisode(index int, route string, e loopwatch.Episode) Record {
	r := Record{Loop: index, StartNs: e.Start.UnixNano(), HeldNs: int64(e.Held), Ended: e.Ended,
		Cause: e.Cause.String(), Route: route, State: e.State}
	for _, f := range e.Frames {
		r.Frames = append(r.Frames, Frame{Function: f.Function, File: f.File, Line: f.Line})
	}
	return r.Clean()
}

// Limits on what a Record keeps: a stack of MaxFrames calls, strings of
// MaxText bytes.
const (
	MaxFrames = 32
	MaxText   = 512
)

// Clean caps r: at most MaxFrames frames, strings cut at MaxText bytes, a
// cause the kit knows; for a record read from a file or a server.
func (r Record) Clean() Record {
	cut := func(s string) string {
		if len(s) > MaxText {
			s = strings.ToValidUTF8(s[:MaxText], "")
		}
		return s
	}
	if len(r.Frames) > MaxFrames {
		r.Frames = r.Frames[:MaxFrames]
	}
	frames := make([]Frame, 0, len(r.Frames))
	for _, f := range r.Frames {
		frames = append(frames, Frame{Function: cut(f.Function), File: cut(f.File), Line: max(f.Line, 0)})
	}
	if len(frames) == 0 {
		frames = nil
	}
	r.Frames = frames
	r.Thread, r.Route, r.State = cut(r.Thread), cut(r.Route), cut(r.State)
	switch r.Cause {
	case Blocked, Starved, WaitingForP:
	default:
		r.Cause = Unknown
	}
	r.HeldNs = max(r.HeldNs, 0)
	r.Looks, r.Found = max(r.Looks, 0), min(max(r.Found, 0), max(r.Looks, 0))
	return r
}

// Culprit is the first frame (the zero Frame without a stack).
func (r Record) Culprit() Frame {
	if len(r.Frames) == 0 {
		return Frame{}
	}
	return r.Frames[0]
}

// Short is the frame as a reader wants it: the function without its
// package path, and the file's last two elements with the line:
// "block.nanosleep (block/block.go:80)".
func (f Frame) Short() string {
	if f.Function == "" {
		return ""
	}
	fn := f.Function[strings.LastIndex(f.Function, "/")+1:]
	file := path.Base(f.File)
	if dir := path.Base(path.Dir(f.File)); dir != "." && dir != "/" {
		file = dir + "/" + file
	}
	return fmt.Sprintf("%s (%s:%d)", fn, file, f.Line)
}

// Words say r in one line: "loop 2 held 100 ms in syscall at
// block.nanosleep (block/block.go:80)", or why no frame is blamed.
func (r Record) Words() string {
	who := fmt.Sprintf("loop %d", r.Loop)
	if r.Loop < 0 {
		who = "thread " + r.Thread
	}
	held := "held " + FormatHeld(time.Duration(r.HeldNs))
	switch {
	case r.Looks > 0:
		held = fmt.Sprintf("held at %d of %d looks over %s", r.Found, r.Looks, FormatHeld(time.Duration(r.HeldNs)))
	case r.Loop < 0 && r.HeldNs == 0:
		held = "found" // at one look
	case !r.Ended:
		held += " so far"
	}
	switch {
	case r.Cause == Starved:
		return who + " " + held + ": its thread did not get a CPU (not a blocking call)"
	case r.Cause == WaitingForP:
		return who + " " + held + ": back from a system call, it waited for a Go P (not a blocking call)"
	case len(r.Frames) == 0 && r.State != "" && r.Loop < 0:
		return who + " " + held + " " + r.Where()
	case len(r.Frames) == 0:
		return who + " " + held + " (no stack taken)"
	}
	return who + " " + held + " " + r.Where()
}

// Where is what the holder was doing and where: "in syscall at
// block.nanosleep (block/block.go:82)"; for a thread seen from outside
// without a stack, the call it was in ("in futex"); otherwise empty
// without a stack.
func (r Record) Where() string {
	if len(r.Frames) == 0 {
		if r.Loop < 0 && r.State != "" { // a thread seen from outside, in a call
			return "in " + r.State
		}
		return ""
	}
	at := "at " + r.Culprit().Short()
	switch r.State {
	case "":
		return at
	case "runnable": // the runtime's word for a goroutine ready to run, not on a CPU yet
		return "just woken, waiting to run, " + at
	}
	return "in " + r.State + " " + at
}

// FormatHeld is a hold's length as the kit shows it: "100 ms", "2.4 ms",
// "1.2 s".
func FormatHeld(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f ms", float64(d)/1e6)
}

// Place is where records held, and who was held there.
type Place struct {
	Where string // Record.Where
	Who   []string
}

// Places groups records by where they held, in order of first sight, each
// named by who (who[i] names rs[i]); a starved record, one waiting for a
// P, or one that says
// nowhere (Where), is left out. A record of unknown cause (no
// locked thread to tell) still says where.
func Places(rs []Record, who []string) []Place {
	var out []Place
	at := map[string]int{}
	for i, r := range rs {
		if r.Cause == Starved || r.Cause == WaitingForP || r.Where() == "" {
			continue
		}
		w := r.Where()
		j, ok := at[w]
		if !ok {
			j, at[w] = len(out), len(out)
			out = append(out, Place{Where: w})
		}
		out[j].Who = append(out[j].Who, who[i])
	}
	return out
}
