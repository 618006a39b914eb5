package culprit

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// Service is what held a service's serving threads (or goroutines) over a
// window, from one source watching the service as it runs: Flight Recorder
// for a JVM, the execution trace of a Go service's net/http/pprof, /proc
// for any other process. The kit's own blockers play no part: the holds
// are the service's own calls, in its own traffic.
//
// A Service may come from a stranger's run directory: Clean caps it before
// anything reads it, and a page escapes what it shows.
type Service struct {
	// Source is what watched: SourceJFR, SourceGoTrace or SourceProc.
	Source string `json:"source"`
	// Role names the threads that serve connections, plural, as the
	// sentence says them: "event-loop threads", "request threads",
	// "event-loop goroutines", "request goroutines", "threads".
	Role string `json:"role"`
	// Pool: the role is a pool's, one thread (or goroutine) a request at a
	// time: its holds may be forgiven (Forgiven says whether they were).
	Pool bool `json:"pool,omitempty"`
	// Serving is how many threads of the role the source saw in the held
	// threads' families (0: not known).
	Serving     int   `json:"serving,omitempty"`
	WindowNs    int64 `json:"window_ns"`
	ThresholdNs int64 `json:"threshold_ns"`
	// Holds are where the serving threads were held past the threshold,
	// one place (what, the peer, the frame) each, the longest held first.
	Holds []Hold `json:"holds,omitempty"`
	// Limits say, a line each, what could not be watched or read and why.
	Limits []string `json:"limits,omitempty"`
	// Hint says in one line how to get the frame where the source names
	// none (Node.js: --cpu-prof).
	Hint string `json:"hint,omitempty"`
	// Forgiven, said by the experiment for a pool, is how the bystanders
	// fared meanwhile: "bystanders' median within 1.2x of unloaded, none
	// stalled".
	Forgiven string `json:"forgiven,omitempty"`
	// CostNs is the CPU watching cost outside the service (jcmd, jfr, the
	// trace's reading, the looks); what it cost the service itself is
	// measured by the experiment, watched against unwatched.
	CostNs int64 `json:"cost_ns,omitempty"`
}

// The sources.
const (
	SourceJFR     = "Flight Recorder"
	SourceGoTrace = "Go execution trace"
	SourceProc    = "/proc"
)

// Hold is one place the serving threads were held.
type Hold struct {
	// State is what held them, worded to follow "held ...": "in a socket
	// read", "in a sleep", "blocked on a monitor of Ledger", "parked",
	// "in a system call (read)", "on a CPU".
	State string `json:"state"`
	// Peer is the other end of a socket call: "127.0.0.1:5432".
	Peer string `json:"peer,omitempty"`
	// Frames are the stack from the culprit frame (the first outside the
	// runtime's standard library and the server's library) outward.
	Frames []Frame `json:"frames,omitempty"`
	// FileInferred: the culprit frame's file was not given by the source
	// (Flight Recorder names none) and not found in a stack dump: it is
	// inferred from the class (Class.java).
	FileInferred bool `json:"file_inferred,omitempty"`
	// Threads name those held there (at most MaxNames); Held counts them.
	Threads []string `json:"threads,omitempty"`
	Held    int      `json:"held"`
	// HeldNs is how long they were held there in all, within the window
	// (summed over the threads); Calls how many holds past the threshold;
	// LongestNs the longest.
	HeldNs    int64 `json:"held_ns"`
	Calls     int   `json:"calls"`
	LongestNs int64 `json:"longest_ns"`
}

// Caps on what a Service keeps.
const (
	MaxHolds  = 8
	MaxNames  = 64
	MaxLimits = 16
)

// Clean caps s: at most MaxHolds holds of MaxFrames frames and MaxNames
// names, MaxLimits limits, strings cut at MaxText bytes, no negative
// figure.
func (s Service) Clean() Service {
	cut := func(t string) string {
		if len(t) > MaxText {
			t = strings.ToValidUTF8(t[:MaxText], "")
		}
		return t
	}
	s.Source, s.Role, s.Hint, s.Forgiven = cut(s.Source), cut(s.Role), cut(s.Hint), cut(s.Forgiven)
	s.Serving, s.WindowNs, s.ThresholdNs, s.CostNs = max(s.Serving, 0), max(s.WindowNs, 0), max(s.ThresholdNs, 0), max(s.CostNs, 0)
	if len(s.Holds) > MaxHolds {
		s.Holds = s.Holds[:MaxHolds]
	}
	holds := make([]Hold, 0, len(s.Holds))
	for _, h := range s.Holds {
		h.State, h.Peer = cut(h.State), cut(h.Peer)
		h.Frames = Record{Frames: h.Frames}.Clean().Frames
		if len(h.Threads) > MaxNames {
			h.Threads = h.Threads[:MaxNames]
		}
		names := make([]string, 0, len(h.Threads))
		for _, n := range h.Threads {
			names = append(names, cut(n))
		}
		h.Threads = names
		h.Held, h.HeldNs, h.Calls, h.LongestNs = max(h.Held, len(h.Threads), 0), max(h.HeldNs, 0), max(h.Calls, 0), max(h.LongestNs, 0)
		holds = append(holds, h)
	}
	if len(holds) == 0 {
		holds = nil
	}
	s.Holds = holds
	if len(s.Limits) > MaxLimits {
		s.Limits = s.Limits[:MaxLimits]
	}
	for i := range s.Limits {
		s.Limits[i] = cut(s.Limits[i])
	}
	return s
}

// Share is the part of the window the hold's threads were held there, on
// average over them, at most 1.
func (s Service) Share(h Hold) float64 {
	if s.WindowNs <= 0 || h.Held <= 0 {
		return 0
	}
	return min(1, float64(h.HeldNs)/float64(h.Held)/float64(s.WindowNs))
}

// Words say the service's first hold in one sentence, the one place the
// kit forms it: "4 of 4 event-loop threads held 96 % of the window in a
// socket read to 127.0.0.1:5432 at LedgerClient.balance
// (LedgerClient.java:57): 3712 calls, 5.1 ms on average"; for a pool
// whose bystanders were unharmed, "...: held, and forgiven (...)"; and
// when nothing was held, that none was.
func (s Service) Words() string {
	if len(s.Holds) == 0 {
		return s.none()
	}
	return s.HoldWords(s.Holds[0])
}

// HoldWords say one of the service's holds in a sentence.
func (s Service) HoldWords(h Hold) string { return s.holdWords(h, true) }

// holdWords say a hold, and for a pool whether it was forgiven.
func (s Service) holdWords(h Hold, forgiven bool) string {
	who := fmt.Sprintf("%d %s", h.Held, s.role())
	if h.Held == 1 {
		who = "1 " + strings.TrimSuffix(s.role(), "s")
	}
	if s.Serving >= h.Held && s.Serving > 0 {
		who = fmt.Sprintf("%d of %d %s", h.Held, s.Serving, s.role())
	}
	line := fmt.Sprintf("%s held %s of the window %s", who, percent(s.Share(h)), h.Where())
	switch {
	case h.Calls == 1:
		line += ": 1 call"
	case h.Calls > 1:
		line += fmt.Sprintf(": %d calls, %s on average", h.Calls, FormatHeld(time.Duration(h.HeldNs/int64(h.Calls))))
	}
	if forgiven && s.Pool && s.Forgiven != "" {
		line += "; held, and forgiven (" + s.Forgiven + ")"
	}
	return line
}

// Lines are every hold's sentence (a pool's forgiveness said once, with
// the first), then the limits and the hint.
func (s Service) Lines() []string { return s.LinesOver(0) }

// LinesOver are Lines of a watch of a window measured long (0: not
// known): a watch that covered under half of it (its source's start took
// the rest) and found no hold says it watched too little to judge, not
// that none held, which a reader takes for "nothing held".
func (s Service) LinesOver(measured time.Duration) []string {
	var out []string
	for i, h := range s.Holds {
		out = append(out, s.holdWords(h, i == 0))
	}
	switch {
	case len(s.Holds) == 0 && s.WindowNs > 0 && 2*time.Duration(s.WindowNs) < measured:
		out = append(out, fmt.Sprintf("too little watched to judge: %s of the %s window", FormatHeld(time.Duration(s.WindowNs)), FormatHeld(measured)))
	case len(s.Holds) == 0:
		out = append(out, s.none())
	}
	out = append(out, s.Limits...)
	if s.Hint != "" {
		out = append(out, s.Hint)
	}
	return out
}

func (s Service) role() string {
	if s.Role == "" {
		return "threads"
	}
	return s.Role
}

func (s Service) none() string {
	who := "no " + strings.TrimSuffix(s.role(), "s")
	if s.Serving > 0 {
		who = fmt.Sprintf("none of the %d %s", s.Serving, s.role())
	}
	return fmt.Sprintf("%s held past %s over %s (%s)", who, FormatHeld(time.Duration(s.ThresholdNs)), FormatHeld(time.Duration(s.WindowNs)), s.Source)
}

// Where is the hold's place: "in a socket read to 127.0.0.1:5432 at
// LedgerClient.balance (LedgerClient.java:57)".
func (h Hold) Where() string {
	w := h.State
	if h.Peer != "" {
		w += " to " + h.Peer
	}
	if len(h.Frames) == 0 {
		return w
	}
	f := h.Frames[0]
	at := f.Short()
	if h.FileInferred {
		at = fmt.Sprintf("%s (%s:%d, file name inferred)", shortFunction(f.Function), path.Base(f.File), f.Line)
	}
	return w + " at " + at
}

func shortFunction(fn string) string { return fn[strings.LastIndex(fn, "/")+1:] }

// percent is a share as the kit shows it: "96 %", "0.4 %".
func percent(f float64) string {
	if f < 0.01 && f > 0 {
		return fmt.Sprintf("%.1f %%", 100*f)
	}
	return fmt.Sprintf("%.0f %%", 100*f)
}
