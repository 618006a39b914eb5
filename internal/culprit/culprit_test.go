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
