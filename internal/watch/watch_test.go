package watch

import (
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
)

// TestTallyPlaces: holds add up by place (what held, the culprit frame),
// the longest held first, with their threads in natural order; one peer
// is named, several are counted (the same frame writing to each of the
// service's clients is one place); a new place past MaxPlaces is refused.
func TestTallyPlaces(t *testing.T) {
	read := []culprit.Frame{{Function: "LedgerClient.balance", Line: 57}}
	write := []culprit.Frame{{Function: "ShopHandler.write", Line: 153}}
	tl := newTally()
	tl.add("loop-10", "in a socket read", "127.0.0.1:5432", read, false, 50, 10, 6)
	tl.add("loop-9", "in a socket read", "127.0.0.1:5432", read, false, 40, 8, 7)
	for i, peer := range []string{"127.0.0.1:40001", "127.0.0.1:40002", "127.0.0.1:40003"} {
		tl.add("loop-9", "in a socket write", peer, write, false, int64(i+1), 1, int64(i+1))
	}
	hs := tl.holds()
	if len(hs) != 2 {
		t.Fatalf("%+v", hs)
	}
	r, w := hs[0], hs[1]
	if r.Peer != "127.0.0.1:5432" || r.HeldNs != 90 || r.Calls != 18 || r.LongestNs != 7 || r.Held != 2 || r.Threads[0] != "loop-9" || r.Threads[1] != "loop-10" {
		t.Errorf("read %+v", r)
	}
	if w.Peer != "3 peers" || w.HeldNs != 6 || w.Calls != 3 || w.Held != 1 {
		t.Errorf("write %+v", w)
	}
	for i := len(tl.places); i < MaxPlaces; i++ {
		if !tl.add("x", "in a sleep", "", []culprit.Frame{{Function: "f", Line: i}}, false, 1, 1, 1) {
			t.Fatalf("place %d refused", i)
		}
	}
	if tl.add("x", "in a sleep", "", []culprit.Frame{{Function: "g"}}, false, 1, 1, 1) || !tl.add("loop-9", "in a socket read", "", read, false, 1, 1, 1) {
		t.Error("past MaxPlaces: a new place taken, or a known one refused")
	}
	if n := len(tl.holds()); n != culprit.MaxHolds {
		t.Errorf("%d holds, want %d", n, culprit.MaxHolds)
	}
}

// TestOptionsUntil: a window placed against the clock begins at From at
// the earliest and lasts until Until however late its source started, a
// little at least.
func TestOptionsUntil(t *testing.T) {
	now := time.Now()
	if d := (Options{Window: time.Second}).left(); d != time.Second {
		t.Errorf("no end: %v", d)
	}
	if d := (Options{Window: time.Minute, Until: now.Add(-time.Second)}).left(); d != minWindow {
		t.Errorf("an end passed: %v, want %v", d, minWindow)
	}
	if d := (Options{Window: time.Second, Until: now.Add(3 * time.Second)}).left(); d > 3*time.Second || d < 2*time.Second {
		t.Errorf("an end in 3 s: %v", d)
	}
	if b := (Options{From: now.Add(time.Second)}).begin(now); !b.Equal(now.Add(time.Second)) {
		t.Errorf("ready ahead of From: begins %v", b.Sub(now))
	}
	if b := (Options{From: now.Add(-time.Second)}).begin(now); !b.Equal(now) {
		t.Errorf("ready after From: begins %v", b.Sub(now))
	}
}
