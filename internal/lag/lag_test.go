package lag

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/loopwatch"
	"golang.org/x/sys/unix"
)

const ms = int64(time.Millisecond)

// rig is a monitor over n loops whose beats run only when the test says.
type rig struct {
	m     *Monitor
	loops []*Loop
	poked []int
	log   bytes.Buffer
}

func newRig(n int, interval, warn time.Duration) *rig {
	r := &rig{}
	r.m = New(Options{Interval: interval, Warn: warn, Log: &r.log, Name: "test"},
		func() []*Loop { return r.loops }, func(l *Loop, again bool) bool { r.poked = append(r.poked, l.Index); return true })
	for i := range n {
		r.loops = append(r.loops, r.m.NewLoop(i))
	}
	return r
}

// A 5 ms request on loop 1 is one block in /slow on loop 1, seen at the
// first tick at least Warn into it, 5 ms long, logged once (held, and
// released), with where it held; loop 0 has none.
func TestBlockInRequest(t *testing.T) {
	r := newRig(2, 0, time.Millisecond)
	t0 := int64(1_000_000_000)
	l := r.loops[1]
	l.Enter(protocol.Slow, t0)
	r.m.Step(t0 + ms/2)
	if l.blocks.Load() != 0 {
		t.Fatal("a block before Warn had passed")
	}
	r.m.Step(t0 + 3*ms/2)
	if l.blocks.Load() != 1 || !l.Stats(t0+3*ms/2).BlockedNow {
		t.Fatalf("not detected: %+v", l.Stats(t0+3*ms/2))
	}
	if d := r.m.Detection(); d.Count != 1 || d.MaxNs < 3*ms/2-ms/100 || d.MaxNs > 3*ms/2+ms/100 {
		t.Errorf("detection %+v, want one at 1.5 ms", d)
	}
	l.Leave(t0 + 5*ms)
	r.m.Step(t0 + 11*ms/2)
	st := l.Stats(t0 + 6*ms)
	if st.Blocks != 1 || st.BlockedNs != 5*ms || st.BlockedNow || st.BlocksByRoute["/slow"] != 1 {
		t.Errorf("after the block: %+v, want 1 block of 5 ms in /slow", st)
	}
	if r.loops[0].blocks.Load() != 0 {
		t.Error("loop 0 was never held but has a block")
	}
	if got := r.log.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, `level=WARN msg="loopwatch: loop held" server=test loop=1 held=1.5ms cause=unknown state=running at=`) {
		t.Errorf("log %q, want one line: loop 1 held, where", got)
	}
	// The loop here is the test's goroutine, looking when it was held:
	// its stack is the detector's own.
	if c := st.Culprit; c == nil || c.Loop != 1 || c.Route != "/slow" || c.HeldNs != 5*ms || !c.Ended || c.State != "running" || len(c.Frames) == 0 {
		t.Errorf("culprit %+v: want loop 1 in /slow, 5 ms, with a stack", c)
	}
}

// Back-to-back requests held past Warn are one block each, and the log
// says one line a second at most, counting the ones it skipped.
func TestBackToBack(t *testing.T) {
	r := newRig(1, 0, time.Millisecond)
	l := r.loops[0]
	at := int64(1_000_000_000)
	for range 10 {
		l.Enter(protocol.Slow, at)
		r.m.Step(at + 2*ms)
		r.m.Step(at + 4*ms)
		l.Leave(at + 5*ms)
		at += 5 * ms // the next begins as this one ends, before any tick
	}
	r.m.Step(at + ms/2)
	st := l.Stats(at + ms)
	if st.Blocks != 10 || st.BlockedNs != 50*ms || st.BlocksByRoute["/slow"] != 10 {
		t.Errorf("%+v, want 10 blocks, 50 ms", st)
	}
	if n := strings.Count(r.log.String(), "loop held"); n != 1 {
		t.Errorf("%d held lines in 50 ms, want 1:\n%s", n, r.log.String())
	}
}

// A beat that waits past Warn while the loop is in no request is lag, not
// a block (no request held the loop: the engine, the runtime or the
// machine did); the beat's lag, with the beats it hid, is recorded.
func TestLateBeat(t *testing.T) {
	r := newRig(1, time.Millisecond, time.Millisecond)
	l := r.loops[0]
	t0 := int64(1_000_000_000)
	l.Enter(protocol.Fast, t0-ms) // a request just before: the loop is not idle
	l.Leave(t0 - ms)
	r.m.Step(t0)
	if len(r.poked) != 1 || l.due.Load() != t0 {
		t.Fatalf("poked %v due %d", r.poked, l.due.Load())
	}
	r.m.Step(t0 + ms)
	r.m.Step(t0 + 2*ms)
	if len(r.poked) != 1 {
		t.Errorf("a second beat handed out while the first waits: %v", r.poked)
	}
	if st := l.Stats(t0 + 2*ms); st.Blocks != 0 {
		t.Errorf("%+v, want no block: no request held the loop", st)
	}
	l.Beat(t0+4*ms, time.Millisecond)
	r.m.Step(t0 + 5*ms)
	st := l.Stats(t0 + 5*ms)
	if st.LagBeats != 4 || st.LagMaxNs < 4*ms-ms/100 || st.LagMaxNs > 4*ms+ms/100 {
		t.Errorf("%+v, want 4 beats (4 ms late, and the 3 it hid) max 4 ms", st)
	}
	if st.BlockedNow || st.BlockedNs != 0 {
		t.Errorf("%+v, want no time blocked", st)
	}
	if len(r.poked) != 2 {
		t.Errorf("no new beat after the late one ran: %v", r.poked)
	}
}

// The stream's window shares add up: a loop held for 60 of a 100 ms
// window says 0.6, an idle one 0; a held beat shows its lag so far.
func TestStreamWindow(t *testing.T) {
	r := newRig(2, time.Millisecond, time.Millisecond)
	t0 := int64(1_000_000_000)
	for _, l := range r.loops { // both served a request just now: not idle
		l.Enter(protocol.Fast, t0-ms)
		l.Leave(t0 - ms)
	}
	c := r.m.NewCursor(t0)
	// Two loops at a 1 ms interval: a tick every 0.5 ms, each loop's beat
	// on every other one.
	if tick := r.m.Tick(); tick != time.Millisecond/2 {
		t.Fatalf("tick %s, want 500us (two loops share the interval)", tick)
	}
	for i := int64(0); i < 200; i++ {
		now := t0 + i*ms/2
		if i == 40 {
			r.loops[1].Enter(protocol.Slow, now)
		}
		if i == 160 {
			r.loops[1].Leave(now)
		}
		r.m.Step(now)
		for _, l := range r.loops {
			if l.entered.Load() == 0 && l.due.Load() != 0 {
				l.Beat(now+ms/10, time.Millisecond)
			}
		}
	}
	ev := r.m.Next(c, t0+100*ms)
	if len(ev.Loops) != 2 || ev.WindowNs != 100*ms {
		t.Fatalf("%+v", ev)
	}
	idle, held := ev.Loops[0], ev.Loops[1]
	if idle.BlockedNs != 0 || idle.Blocks != 0 || idle.Beats < 99 || idle.Beats > 100 || idle.LagMaxNs != ms/10 {
		t.Errorf("idle loop %+v", idle)
	}
	if held.BlockedNs != 60*ms || held.BlockedShare != 0.6 || held.BlocksByRoute["/slow"] != 1 {
		t.Errorf("held loop %+v, want 60 ms blocked in /slow", held)
	}
	if held.LagMaxNs < 60*ms-ms || held.LagMaxNs > 60*ms+ms {
		t.Errorf("held loop's lag max %d, want about 60 ms", held.LagMaxNs)
	}
	// The next window starts where this one ended.
	if ev2 := r.m.Next(c, t0+200*ms); ev2.Loops[1].BlockedNs != 0 || ev2.Loops[1].Beats != 0 {
		t.Errorf("the next window repeats the last: %+v", ev2.Loops[1])
	}
}

// TestIdleLoopRests: a loop that served no request for IdleAfter gets a
// beat every IdleEvery, not every interval, and the first request puts it
// back on the interval.
func TestIdleLoopRests(t *testing.T) {
	r := newRig(1, time.Millisecond, time.Millisecond)
	l := r.loops[0]
	t0 := int64(5_000_000_000)
	for i := int64(0); i < 1000; i++ { // one second, a tick a millisecond
		r.m.Step(t0 + i*ms)
		if l.due.Load() != 0 {
			l.Beat(t0+i*ms+ms/10, time.Millisecond)
		}
	}
	if n := len(r.poked); n < 9 || n > 11 {
		t.Errorf("an idle loop got %d beats in a second, want 10 (one per %s)", n, IdleEvery)
	}
	at := t0 + 1000*ms
	l.Enter(protocol.Fast, at)
	l.Leave(at)
	before := len(r.poked)
	for i := int64(1); i <= 10; i++ {
		r.m.Step(at + i*ms)
		if l.due.Load() != 0 {
			l.Beat(at+i*ms+ms/10, time.Millisecond)
		}
	}
	if n := len(r.poked) - before; n != 10 {
		t.Errorf("after a request, %d beats in 10 ms, want 10", n)
	}
}

// TestRepeat: with Repeat, only a beat still waiting is handed over again;
// a loop resting between its beats is not poked.
func TestRepeat(t *testing.T) {
	r := newRig(1, time.Millisecond, time.Millisecond)
	r.m.opts.Repeat = true
	l := r.loops[0]
	t0 := int64(5_000_000_000)
	r.m.Step(t0)                       // idle loop: its one beat for the next IdleEvery
	l.Beat(t0+ms/10, time.Millisecond) // ran
	for i := int64(1); i < 50; i++ {
		r.m.Step(t0 + i*ms)
	}
	if len(r.poked) != 1 || r.m.Repeated() != 0 {
		t.Errorf("poked %d times, %d repeated, for one beat that ran", len(r.poked), r.m.Repeated())
	}
	r.m.Step(t0 + 200*ms) // the next beat, which does not run
	r.m.Step(t0 + 201*ms)
	r.m.Step(t0 + 202*ms)
	if r.m.Repeated() != 2 {
		t.Errorf("%d repeats of a beat waiting 2 ms, want 2", r.m.Repeated())
	}
}

// TestDozeAndNudge: with every loop resting, Run sleeps past its tick
// (dozing, here for an hour); a loop entering a request wakes it at once,
// so the detector is not a resting beat's interval late for the first
// request after a lull.
func TestDozeAndNudge(t *testing.T) {
	var l *Loop
	var poked atomic.Int64
	m := New(Options{Interval: time.Millisecond, Warn: time.Millisecond, IdleEvery: time.Hour}, func() []*Loop { return []*Loop{l} },
		func(l *Loop, _ bool) bool {
			poked.Add(1)
			go l.Beat(time.Now().UnixNano(), time.Millisecond)
			return true
		})
	l = m.NewLoop(0)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { m.Run(stop); close(done) }()
	defer func() { close(stop); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for !m.dozing.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the monitor never dozed with its one loop resting")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // well into its hour
	l.Enter(protocol.Slow, time.Now().UnixNano())
	for l.Stats(time.Now().UnixNano()).BlocksByRoute["/slow"] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the held loop was not seen in 10 s: the monitor slept on through the request")
		}
		time.Sleep(time.Millisecond)
	}
	if poked.Load() == 0 {
		t.Error("no beat was ever handed over")
	}
}

// TestStreamsThatDoNotRead: clients that open /lag and never read hold no
// slot for long: a stream whose client has not taken what it was sent
// for StallLimit (its receive window has not reopened, or a write waited
// that long) is closed and its slot freed, so a 17th client is served; a
// client that reads is not closed.
func TestStreamsThatDoNotRead(t *testing.T) {
	// 64 loops: each event is some 8 KB, so what a client can buffer fills
	// in a few seconds (with 4 loops, the time is measured in
	// docs/measurements.md).
	r := newRig(64, time.Millisecond, time.Millisecond)
	srv := httptest.NewServer(Handler(r.m))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	open := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// A client that will never read, with the buffers the system gives.
		if _, err := io.WriteString(c, "GET /lag?every=100ms HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	var stuck []net.Conn
	for range MaxStreams - 1 { // and one that reads: every slot taken
		stuck = append(stuck, open())
	}
	defer func() {
		for _, c := range stuck {
			c.Close()
		}
	}()
	// A client that reads, beside them, for longer than they are given.
	readDone := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get(srv.URL + "/lag?every=100ms&for=" + (StallLimit + 3*time.Second).String())
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		readDone <- err
	}()
	time.Sleep(400 * time.Millisecond) // every slot is taken
	resp, err := http.Get(srv.URL + "/lag?for=200ms")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a stream beside %d: %d, want 503", MaxStreams, resp.StatusCode)
	}
	start := time.Now()
	for {
		resp, err := http.Get(srv.URL + "/lag?for=300ms")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			if !bytes.Contains(b, []byte(`"loops"`)) {
				t.Fatalf("the stream served holds no event: %q", b)
			}
			t.Logf("a slot was free %s after %d streams stopped reading", time.Since(start).Round(100*time.Millisecond), MaxStreams-1)
			break
		}
		if time.Since(start) > 3*StallLimit {
			t.Fatalf("no slot was freed within %s of %d streams that do not read", time.Since(start), MaxStreams-1)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := <-readDone; err != nil {
		t.Fatalf("the client that reads: %v", err)
	}
}

// TestStreamCulprit: a block's record is in the first event after it was
// found and in the first after it ended, not in the ones between.
func TestStreamCulprit(t *testing.T) {
	r := newRig(1, 0, time.Millisecond)
	l := r.loops[0]
	t0 := int64(1_000_000_000)
	c := r.m.NewCursor(t0)
	l.Enter(protocol.Slow, t0)
	r.m.Step(t0 + ms/2)
	r.m.Step(t0 + 3*ms/2) // found, with a stack (the test's goroutine)
	if ev := r.m.Next(c, t0+2*ms); ev.Loops[0].Culprit == nil || ev.Loops[0].Culprit.Ended {
		t.Fatalf("first event after it was found: %+v", ev.Loops[0].Culprit)
	}
	if ev := r.m.Next(c, t0+3*ms); ev.Loops[0].Culprit != nil {
		t.Fatalf("sent again unchanged: %+v", ev.Loops[0].Culprit)
	}
	l.Leave(t0 + 5*ms)
	r.m.Step(t0 + 11*ms/2)
	if ev := r.m.Next(c, t0+6*ms); ev.Loops[0].Culprit == nil || !ev.Loops[0].Culprit.Ended || ev.Loops[0].Culprit.HeldNs != 5*ms {
		t.Fatalf("first event after it ended: %+v", ev.Loops[0].Culprit)
	}
}

// onThread runs a loop's thread: locked, Locked said, then wait (in the
// thread) until stop closes; it returns once Locked has run.
func onThread(t *testing.T, l *Loop, wait func(stop chan struct{})) (stop chan struct{}) {
	stop, ready := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread() // left locked: the thread ends with the goroutine
		l.Locked()
		close(ready)
		wait(stop)
	}()
	<-ready
	t.Cleanup(func() { close(stop) })
	return stop
}

// parkedIn waits in epoll_pwait (the engines' wait), with no timeout,
// until stop closes (which an eventfd in the set then says).
func parkedIn(stop chan struct{}) {
	ep, err1 := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	efd, err2 := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err1 != nil || err2 != nil {
		panic(fmt.Sprint(err1, err2))
	}
	defer unix.Close(ep)
	defer unix.Close(efd)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}); err != nil {
		panic(err)
	}
	go func() { <-stop; _, _ = unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0}) }()
	ev := make([]unix.EpollEvent, 1)
	for {
		if n, _ := unix.EpollWait(ep, ev, -1); n > 0 {
			return
		}
	}
}

// sleeping waits until l's thread sleeps in a system call (its /proc
// syscall file names one; "running" while it runs).
func sleeping(t *testing.T, l *Loop) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var b [8]byte
		n, _ := l.sys.Load().ReadAt(b[:], 0)
		if n > 0 && b[0] >= '0' && b[0] <= '9' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("loop %d's thread never slept in a system call: %q", l.Index, b[:n])
		}
		time.Sleep(time.Millisecond)
	}
}

// TestParkedNotWoken: a beat due while a locked loop's thread sleeps in its
// epoll wait, between requests, is recorded as run at once (lag 0) and the
// loop is not woken for it; a loop inside a request, or whose thread is in
// any other wait (a sleep), or running, is handed its beat as before.
func TestParkedNotWoken(t *testing.T) {
	r := newRig(4, time.Millisecond, 0)
	onThread(t, r.loops[0], parkedIn)
	onThread(t, r.loops[1], parkedIn)
	onThread(t, r.loops[2], func(stop chan struct{}) { <-stop }) // a Go wait: a futex, not the loop's epoll wait
	spin := func(stop chan struct{}) {
		for !isClosed(stop) {
		}
	}
	onThread(t, r.loops[3], spin) // running (or waiting for a CPU: "running" too)
	now := time.Now().UnixNano()
	r.loops[1].Enter(protocol.Slow, now) // parked, but inside a request: a beat waits for it
	for _, l := range r.loops {
		l.left.Store(now) // not resting
	}
	for _, l := range r.loops[:3] {
		sleeping(t, l)
	}
	for tick := range 40 {
		r.m.Step(now + int64(tick)*ms/4) // 4 phases: each loop's turn every 4th tick
		for _, l := range r.loops {
			if d := l.due.Load(); d != 0 && l != r.loops[1] {
				l.Beat(d+ms/10, time.Millisecond) // a woken loop runs its beat 100 us late
			}
		}
	}
	poked := map[int]int{}
	for _, i := range r.poked {
		poked[i]++
	}
	if poked[0] != 0 {
		t.Errorf("the parked loop was woken %d times for its beats", poked[0])
	}
	if st := r.loops[0].Stats(now); st.LagBeats != 10 || st.LagMaxNs > 1000 { // 1 us: the histogram's least
		t.Errorf("parked loop: %+v, want 10 beats, none late", st)
	}
	if poked[1] != 1 || r.loops[1].due.Load() == 0 {
		t.Errorf("the loop inside a request was handed %d beats (want its one, still waiting)", poked[1])
	}
	for _, i := range []int{2, 3} {
		if poked[i] != 10 {
			t.Errorf("loop %d (not in its epoll wait) was handed %d beats, want 10", i, poked[i])
		}
		if st := r.loops[i].Stats(now); st.LagBeats != 10 || st.LagMaxNs < ms/20 {
			t.Errorf("loop %d: %+v, want 10 beats 100 us late", i, st)
		}
	}
	r.m.Stop()
	if r.loops[0].sys.Load() != nil {
		t.Error("the monitor's Stop left a loop's /proc file open")
	}
}

// isClosed says whether ch is closed, without waiting.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A hold loopwatch finds its goroutine's, waiting for a Go P after a
// system call, is not a block: counted apart, like a starved thread's
// (issue 49: the offload measurement counted one as a block at the lag
// monitor's eventfd write); found the callback's after all, it becomes
// one; a starved hold found waiting for a P moves to that count.
func TestWaitingForPNotABlock(t *testing.T) {
	r := newRig(2, 0, time.Millisecond)
	l := r.loops[1]
	t0 := time.Unix(1, 0)
	r.m.episode(loopwatch.Episode{Loop: "1", Start: t0, Held: 3 * time.Millisecond, Cause: loopwatch.WaitingForP, State: "runnable"})
	if st := l.Stats(t0.UnixNano()); st.Blocks != 0 || st.WaitingForP != 1 || st.BlockedNow || st.Culprit != nil {
		t.Fatalf("%+v: want no block, one hold waiting for a P", st)
	}
	r.m.episode(loopwatch.Episode{Loop: "1", Start: t0, Held: 3 * time.Millisecond, Ended: true, Cause: loopwatch.WaitingForP})
	t1 := t0.Add(time.Second)
	r.m.episode(loopwatch.Episode{Loop: "1", Start: t1, Held: 2 * time.Millisecond, Cause: loopwatch.WaitingForP, State: "runnable"})
	r.m.episode(loopwatch.Episode{Loop: "1", Start: t1, Held: 4 * time.Millisecond, Cause: loopwatch.Blocked, State: "chan receive",
		Frames: []loopwatch.Frame{{Function: "main.wait", File: "/src/main.go", Line: 3}}})
	if st := l.Stats(t1.UnixNano()); st.Blocks != 1 || st.WaitingForP != 1 || st.Culprit == nil {
		t.Fatalf("%+v: want the second held by its callback after all: one block, one hold waiting for a P", st)
	}
	t2 := t1.Add(time.Second)
	r.m.episode(loopwatch.Episode{Loop: "1", Start: t2, Held: 2 * time.Millisecond, Cause: loopwatch.Starved})
	r.m.episode(loopwatch.Episode{Loop: "1", Start: t2, Held: 3 * time.Millisecond, Cause: loopwatch.WaitingForP, State: "runnable"})
	if st := l.Stats(t2.UnixNano()); st.Blocks != 1 || st.WaitingForP != 2 || st.Starved != 0 {
		t.Fatalf("%+v: want the starved hold moved to waiting for a P", st)
	}
}

// TestUnknownNotABlock: a hold loopwatch could not judge (its loop's
// thread parked by Go, and no stack that found its goroutine in a wait of
// its own) is counted apart as unknown, not a block: the offload
// measurement counted such holds, where nothing blocks, as blocks in
// /offload. One judged its callback's after all is a block.
func TestUnknownNotABlock(t *testing.T) {
	r := newRig(2, 0, time.Millisecond)
	l := r.loops[1]
	l.locked.Store(true) // as Locked says it: loopwatch reads its thread
	l.route.Store(int32(slices.Index(routeKeys[:], "/slow")))
	t0 := time.Unix(1, 0)
	r.m.episode(loopwatch.Episode{Loop: "1", Start: t0, Held: 3 * time.Millisecond, Cause: loopwatch.Unknown})
	if st := l.Stats(t0.UnixNano()); st.Blocks != 0 || st.Unknown != 1 || st.UnknownByRoute["/slow"] != 1 || st.BlockedNow || st.Culprit != nil {
		t.Fatalf("%+v: want no block, one hold not judged", st)
	}
	r.m.episode(loopwatch.Episode{Loop: "1", Start: t0, Held: 4 * time.Millisecond, Ended: true, Cause: loopwatch.Unknown})
	if st := l.Stats(t0.UnixNano()); st.Blocks != 0 || st.BlockedNs != 0 || st.Unknown != 1 || st.UnknownNs != int64(4*time.Millisecond) {
		t.Fatalf("%+v: want its end no block either, its 4 ms held counted as not judged", st)
	}
	t1 := t0.Add(time.Second)
	r.m.episode(loopwatch.Episode{Loop: "1", Start: t1, Held: 2 * time.Millisecond, Cause: loopwatch.Unknown, State: "runnable"})
	r.m.episode(loopwatch.Episode{Loop: "1", Start: t1, Held: 3 * time.Millisecond, Cause: loopwatch.Blocked, State: "chan receive",
		Frames: []loopwatch.Frame{{Function: "main.wait", File: "/src/main.go", Line: 3}}})
	if st := l.Stats(t1.UnixNano()); st.Blocks != 1 || st.Unknown != 1 || st.UnknownByRoute["/slow"] != 1 || st.BlocksByRoute["/slow"] != 1 || st.Culprit == nil {
		t.Fatalf("%+v: want the second judged its callback's after all: one block, one hold not judged", st)
	}
	// Not on a locked thread, every hold is unknown, and a block.
	other := r.loops[0]
	r.m.episode(loopwatch.Episode{Loop: "0", Start: t1, Held: 3 * time.Millisecond, Cause: loopwatch.Unknown})
	if st := other.Stats(t1.UnixNano()); st.Blocks != 1 || st.Unknown != 0 {
		t.Fatalf("%+v: want a block on a loop not on a locked thread", st)
	}
}
