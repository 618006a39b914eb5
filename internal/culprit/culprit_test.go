package culprit

import (
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
)

// TestWords: a record in one line, the culprit's function short and its
// file's last two elements; a starved hold blames no frame.
func TestWords(t *testing.T) {
	e := loopwatch.Episode{Loop: "2", Start: time.Unix(0, 1), Held: 100 * time.Millisecond, Ended: true, Cause: loopwatch.Blocked,
		State: "syscall", Frames: []loopwatch.Frame{{Function: "github.com/x/y/internal/block.nanosleep", File: "/src/y/internal/block/block.go", Line: 82}}}
	r := FromEpisode(2, "/slow", e)
	if got, want := r.Words(), "loop 2 held 100 ms in syscall at block.nanosleep (block/block.go:82)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	r.Cause, r.Ended, r.HeldNs = Starved, false, int64(2500*time.Microsecond)
	if got, want := r.Words(), "loop 2 held 2.5 ms so far: its thread did not get a CPU (not a blocking call)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	r = FromEpisode(2, "/offload", loopwatch.Episode{Loop: "2", Held: 3200 * time.Microsecond, Cause: loopwatch.WaitingForP, State: "runnable"})
	if got, want := r.Words(), "loop 2 held 3.2 ms so far: back from a system call, it waited for a Go P (not a blocking call)"; got != want || r.Cause != WaitingForP {
		t.Errorf("%q (cause %q), want %q", got, r.Cause, want)
	}
}

// TestThreadWords: a thread seen from outside, held across looks or found
// at one, with a stack or only the call it was in.
func TestThreadWords(t *testing.T) {
	r := Record{Loop: -1, Thread: "nioEventLoopGroup-3-2", HeldNs: int64(280 * time.Millisecond), Cause: Blocked, State: "Thread.sleep",
		Looks: 8, Found: 7, Frames: []Frame{{Function: "bystander.Protocol.block", File: "Protocol.java", Line: 36}}}
	if got, want := r.Words(), "thread nioEventLoopGroup-3-2 held at 7 of 8 looks over 280 ms in Thread.sleep at bystander.Protocol.block (Protocol.java:36)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	r.Looks, r.Found, r.HeldNs = 0, 0, 0
	if got, want := r.Words(), "thread nioEventLoopGroup-3-2 found in Thread.sleep at bystander.Protocol.block (Protocol.java:36)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	r.Frames, r.State, r.Looks, r.Found, r.HeldNs = nil, "futex", 8, 8, int64(280*time.Millisecond)
	if got, want := r.Words(), "thread nioEventLoopGroup-3-2 held at 8 of 8 looks over 280 ms in futex"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if p := Places([]Record{r}, []string{"x"}); len(p) != 1 || p[0].Where != "in futex" {
		t.Errorf("places %+v", p)
	}
	if c := (Record{Loop: -1, Looks: 2, Found: 9}).Clean(); c.Found != 2 {
		t.Errorf("found %d of %d", c.Found, c.Looks)
	}
}

// TestClean: a record from a stranger is capped: frames, string lengths,
// an unknown cause, a negative hold or line.
func TestClean(t *testing.T) {
	r := Record{Loop: 1, Cause: "<script>", HeldNs: -5, State: strings.Repeat("é", MaxText)}
	for range MaxFrames + 10 {
		r.Frames = append(r.Frames, Frame{Function: strings.Repeat("f", 10*MaxText), Line: -1})
	}
	c := r.Clean()
	if len(c.Frames) != MaxFrames || len(c.Frames[0].Function) != MaxText || c.Frames[0].Line != 0 {
		t.Errorf("frames %d, function %d bytes, line %d", len(c.Frames), len(c.Frames[0].Function), c.Frames[0].Line)
	}
	if c.Cause != Unknown || c.HeldNs != 0 || len(c.State) > MaxText || !strings.HasPrefix(r.State, c.State) {
		t.Errorf("cause %q held %d state %d bytes", c.Cause, c.HeldNs, len(c.State))
	}
}

// TestServiceWords: the one sentence a watched service's hold is said in:
// how many of the serving threads, the share of the window, what held
// them and to whom, the frame, how often; a file the source did not give
// is said to be inferred; a pool's hold is forgiven only when the
// experiment says so; nothing held is said too.
func TestServiceWords(t *testing.T) {
	s := Service{Source: SourceJFR, Role: "event-loop threads", Serving: 4, WindowNs: int64(5 * time.Second), ThresholdNs: int64(time.Millisecond),
		Holds: []Hold{{State: "in a socket read", Peer: "127.0.0.1:5432", Held: 4, HeldNs: int64(19200 * time.Millisecond), Calls: 3712,
			Frames: []Frame{{Function: "LedgerClient.balance", File: "LedgerClient.java", Line: 57}}}}}
	if got, want := s.Words(), "4 of 4 event-loop threads held 96 % of the window in a socket read to 127.0.0.1:5432 at LedgerClient.balance (LedgerClient.java:57): 3712 calls, 5.2 ms on average"; got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
	s.Holds[0].FileInferred = true
	if got := s.Words(); !strings.Contains(got, "at LedgerClient.balance (LedgerClient.java:57, file name inferred)") {
		t.Errorf("inferred: %q", got)
	}
	s.Pool, s.Role, s.Serving = true, "request threads", 10
	if got := s.Words(); strings.Contains(got, "forgiven") || !strings.HasPrefix(got, "4 of 10 request threads held 96 %") {
		t.Errorf("a pool not yet judged: %q", got)
	}
	s.Forgiven = "bystanders' median within 1.1x of unloaded, none stalled"
	if got := s.Words(); !strings.HasSuffix(got, "; held, and forgiven (bystanders' median within 1.1x of unloaded, none stalled)") {
		t.Errorf("forgiven: %q", got)
	}
	// Said once, with the first of the pool's holds: not on every line.
	s.Holds = append(s.Holds, Hold{State: "in a socket write", Held: 2, HeldNs: int64(time.Second), Calls: 10})
	if l := s.Lines(); len(l) != 2 || !strings.Contains(l[0], "held, and forgiven") || strings.Contains(l[1], "forgiven") {
		t.Errorf("lines: %q", l)
	}
	s.Holds = s.Holds[:1]
	cpu := Service{Source: SourceProc, Role: "event-loop threads", Serving: 1, WindowNs: int64(2 * time.Second),
		Holds: []Hold{{State: "on a CPU", Held: 1, HeldNs: int64(3 * time.Second), Threads: []string{"node (main thread)"}}}}
	if got, want := cpu.Words(), "1 of 1 event-loop threads held 100 % of the window on a CPU"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	cpu.Serving = 0
	if got, want := cpu.Words(), "1 event-loop thread held 100 % of the window on a CPU"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	none := Service{Source: SourceGoTrace, Role: "event-loop goroutines", Serving: 4, WindowNs: int64(2 * time.Second), ThresholdNs: int64(time.Millisecond)}
	if got, want := none.Words(), "none of the 4 event-loop goroutines held past 1.0 ms over 2.0 s (Go execution trace)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestServiceClean: a watched service read from a stranger is capped.
func TestServiceClean(t *testing.T) {
	s := Service{Role: strings.Repeat("r", 10*MaxText), Serving: -1, WindowNs: -1, CostNs: -5}
	for range MaxHolds + 3 {
		h := Hold{State: strings.Repeat("s", 2*MaxText), Held: -2, HeldNs: -1, Calls: -1, LongestNs: -1}
		for range MaxNames + 5 {
			h.Threads = append(h.Threads, strings.Repeat("n", 2*MaxText))
		}
		for range MaxFrames + 5 {
			h.Frames = append(h.Frames, Frame{Function: "f", Line: -3})
		}
		s.Holds = append(s.Holds, h)
	}
	for range MaxLimits + 4 {
		s.Limits = append(s.Limits, strings.Repeat("l", 2*MaxText))
	}
	c := s.Clean()
	h := c.Holds[0]
	if len(c.Holds) != MaxHolds || len(h.Threads) != MaxNames || len(h.Threads[0]) != MaxText || len(h.Frames) != MaxFrames || h.Frames[0].Line != 0 {
		t.Errorf("holds %d, names %d (%d bytes), frames %d", len(c.Holds), len(h.Threads), len(h.Threads[0]), len(h.Frames))
	}
	if len(c.Role) != MaxText || len(h.State) != MaxText || len(c.Limits) != MaxLimits || len(c.Limits[0]) != MaxText {
		t.Errorf("strings not cut: role %d, state %d, limits %d", len(c.Role), len(h.State), len(c.Limits))
	}
	if c.Serving != 0 || c.WindowNs != 0 || c.CostNs != 0 || h.HeldNs != 0 || h.Calls != 0 || h.LongestNs != 0 || h.Held != MaxNames {
		t.Errorf("figures: %+v", c)
	}
	if c.Share(h) != 0 {
		t.Errorf("share over no window: %v", c.Share(h))
	}
}

// TestLinesOverTooLittle: a watch that covered under half its measured
// window and found no hold says it watched too little to judge; over half,
// or with a hold, or with the window not known, it says what it saw.
func TestLinesOverTooLittle(t *testing.T) {
	s := Service{Source: SourceProc, Role: "threads", Serving: 8, WindowNs: int64(104 * time.Millisecond), ThresholdNs: int64(time.Millisecond)}
	if l := s.LinesOver(time.Second); len(l) != 1 || l[0] != "too little watched to judge: 104 ms of the 1.0 s window" {
		t.Errorf("104 ms of 1 s: %q", l)
	}
	if l := s.LinesOver(200 * time.Millisecond); len(l) != 1 || !strings.HasPrefix(l[0], "none of the 8 threads held past 1.0 ms over 104 ms") {
		t.Errorf("104 ms of 200 ms: %q", l)
	}
	if l := s.Lines(); len(l) != 1 || !strings.HasPrefix(l[0], "none of the 8 threads held") {
		t.Errorf("window not known: %q", l)
	}
	s.Holds = []Hold{{State: "in a sleep", Held: 1, HeldNs: int64(50 * time.Millisecond), Calls: 1}}
	if l := s.LinesOver(time.Second); len(l) != 1 || !strings.HasPrefix(l[0], "1 of 8 threads held ") {
		t.Errorf("a hold in 104 ms of 1 s: %q", l)
	}
}
