package loopwatch

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// holdOn holds its caller's loop until release closes: a blocking call.
func holdOn(release chan struct{}) { <-release }

// next is the next episode reported, or fails after 10 s.
func next(t *testing.T, got chan Episode) Episode {
	t.Helper()
	select {
	case e := <-got:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no episode reported within 10 s")
		return Episode{}
	}
}

// TestHeldLoopNamed: a callback held past the threshold is reported while
// it holds its loop, with the holding goroutine's state and the blocking
// call first; and again when it ends, with how long it held in all.
func TestHeldLoopNamed(t *testing.T) {
	got := make(chan Episode, 8)
	w := New(Options{Threshold: 20 * time.Millisecond, OnEpisode: func(e Episode) { got <- e }, Logger: quiet})
	defer w.Stop()
	l := w.Loop("loop-0")
	release := make(chan struct{})
	go func() {
		l.Enter()
		holdOn(release)
		l.Exit()
	}()
	e := next(t, got)
	if e.Loop != "loop-0" || e.Ended || e.Held < 20*time.Millisecond {
		t.Fatalf("first report %+v: want loop-0, still held, for 20ms or more", e)
	}
	c := e.Culprit()
	if e.State != "chan receive" || !strings.HasSuffix(c.Function, ".holdOn") || !strings.HasSuffix(c.File, "loopwatch_test.go") || c.Line == 0 {
		t.Fatalf("held in %q at %s; want chan receive at holdOn in loopwatch_test.go", e.State, c)
	}
	if len(e.Frames) < 2 || !strings.Contains(e.Frames[1].Function, "TestHeldLoopNamed") {
		t.Errorf("the culprit's caller comes next: %v", e.Frames)
	}
	close(release)
	end := next(t, got)
	if !end.Ended || end.Held < e.Held || !end.Start.Equal(e.Start) {
		t.Fatalf("end report %+v after %+v", end, e)
	}
	if s := w.Stats(); s.Episodes != 1 || s.Stacks != 1 || s.StackPauseMax <= 0 || s.StackPauseTotal < s.StackPauseMax {
		t.Fatalf("stats %+v: want 1 episode, 1 stack and its pause", s)
	}
}

// TestStackEvery: a loop held again within StackEvery is reported and
// counted, without a second stack.
func TestStackEvery(t *testing.T) {
	got := make(chan Episode, 8)
	w := New(Options{Threshold: 10 * time.Millisecond, StackEvery: time.Hour, OnEpisode: func(e Episode) { got <- e }, Logger: quiet})
	defer w.Stop()
	l := w.Loop("loop-1")
	for i := 0; i < 2; i++ {
		release := make(chan struct{})
		go func() {
			l.Enter()
			holdOn(release)
			l.Exit()
		}()
		e := next(t, got)
		if (i == 0) != (e.Frames != nil) {
			t.Fatalf("episode %d: %d frames; want a stack for the first only", i+1, len(e.Frames))
		}
		close(release)
		if end := next(t, got); !end.Ended {
			t.Fatalf("episode %d did not end: %+v", i+1, end)
		}
	}
	if s := w.Stats(); s.Episodes != 2 || s.Stacks != 1 {
		t.Fatalf("stats %+v: want 2 episodes, 1 stack", s)
	}
}

// TestShortCallbacks: callbacks far under the threshold make no episode.
func TestShortCallbacks(t *testing.T) {
	w := New(Options{Threshold: 2 * time.Second, OnEpisode: func(e Episode) { t.Errorf("episode %+v", e) }, Logger: quiet})
	l := w.Loop("loop-2")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 100000; i++ {
			l.Enter()
			l.Exit()
		}
	}()
	<-done
	w.Stop()
	if s := w.Stats(); s.Episodes != 0 || s.Stacks != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestParse reads a real dump's shape: the state (without how long), the
// frames with file and line, the culprit first and the standard library
// last; a goroutine not in the dump is not found.
func TestParse(t *testing.T) {
	dump := `goroutine 1 [running]:
main.main()
	/tmp/x.go:24 +0x70

goroutine 22 [syscall, 2 minutes]:
syscall.Syscall(0x23, 0x71f0c2da7c0, 0x0, 0x0)
	/usr/local/go/src/syscall/syscall_linux.go:74 +0x25
syscall.Nanosleep(0x0?, 0x0?)
	/usr/local/go/src/syscall/zsyscall_linux_amd64.go:690 +0x33
example.com/app/db.(*Pool).Query(...)
	/src/app/db/pool.go:88
example.com/app.handle(0xc000010000)
	/src/app/handle.go:12 +0x2c
github.com/panjf2000/gnet/v2.(*eventloop).read(0xc0000a2000)
	/go/pkg/mod/github.com/panjf2000/gnet/v2@v2.9.7/eventloop_unix.go:128 +0x1e
created by github.com/panjf2000/gnet/v2.(*engine).start in goroutine 1
	/go/pkg/mod/github.com/panjf2000/gnet/v2@v2.9.7/engine_unix.go:60 +0x1e
`
	state, frames, _, _ := parse([]byte(dump), 22)
	if state != "syscall" || len(frames) != 5 {
		t.Fatalf("state %q, %d frames: %+v", state, len(frames), frames)
	}
	want := []string{"example.com/app/db.(*Pool).Query", "example.com/app.handle", "github.com/panjf2000/gnet/v2.(*eventloop).read", "syscall.Syscall", "syscall.Nanosleep"}
	for i, f := range frames {
		if f.Function != want[i] {
			t.Errorf("frame %d: %s, want %s", i, f.Function, want[i])
		}
	}
	if c := frames[0]; c.File != "/src/app/db/pool.go" || c.Line != 88 {
		t.Errorf("culprit %s", c)
	}
	xsys := "goroutine 9 [syscall]:\ngolang.org/x/sys/unix.Nanosleep(0x1, 0x0)\n\t/m/golang.org/x/sys/unix/z.go:1 +0x1\nexample.com/app.wait()\n\t/src/app/wait.go:7 +0x2\n"
	if _, f, _, _ := parse([]byte(xsys), 9); len(f) != 2 || f[0].Function != "example.com/app.wait" {
		t.Errorf("golang.org/x is not the culprit, its caller is: %v", f)
	}
	if s, f, _, _ := parse([]byte(dump), 7); s != "" || f != nil {
		t.Errorf("goroutine 7 found: %q %v", s, f)
	}
	if s, f, _, _ := parse([]byte(dump), 1); s != "running" || len(f) != 1 || f[0].Function != "main.main" {
		t.Errorf("goroutine 1: %q %v", s, f)
	}
}

// TestDriven: a watcher made Driven starts no goroutine; Look finds the
// held loop, times it from EnterAt and ends it at ExitAt.
func TestDriven(t *testing.T) {
	var got []Episode
	w := NewDriven(Options{Threshold: 10 * time.Millisecond, StackEvery: -1, Logger: quiet,
		OnEpisode: func(e Episode) { got = append(got, e) }})
	defer w.Stop()
	l := w.Loop("loop-0")
	t0 := time.Now()
	l.EnterAt(t0.UnixNano())
	w.Look(t0.Add(5 * time.Millisecond))
	if len(got) != 0 {
		t.Fatalf("reported under the threshold: %+v", got)
	}
	w.Look(t0.Add(12 * time.Millisecond))
	if len(got) != 1 || got[0].Held != 12*time.Millisecond || got[0].Ended || got[0].Cause != Unknown {
		t.Fatalf("%+v: want one episode held 12ms so far, cause unknown (no locked thread)", got)
	}
	l.ExitAt(t0.Add(15 * time.Millisecond).UnixNano())
	w.Look(t0.Add(20 * time.Millisecond))
	if len(got) != 2 || !got[1].Ended || got[1].Held != 15*time.Millisecond {
		t.Fatalf("%+v: want it ended, held 15ms (ExitAt's time, not the look's)", got)
	}
	if c := l.Counts(); c.Unknown != 1 || c.Held != 15*time.Millisecond {
		t.Fatalf("counts %+v", c)
	}
	w.Stop()
	l.EnterAt(t0.UnixNano())
	w.Look(t0.Add(time.Second))
	if len(got) != 2 {
		t.Fatalf("a stopped watcher reported %+v", got[2:])
	}
}

// TestLogLines: one line an episode, at most one episode's lines a loop
// per StackEvery; the next line says how many were left out.
func TestLogLines(t *testing.T) {
	var buf strings.Builder
	w := NewDriven(Options{Threshold: time.Millisecond, StackEvery: time.Second,
		Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	defer w.Stop()
	l := w.Loop("loop-0")
	t0 := time.Now()
	for i := 0; i < 5; i++ { // five 2 ms holds, 100 ms apart, then one a second later
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		if i == 4 {
			at = t0.Add(2 * time.Second)
		}
		l.EnterAt(at.UnixNano())
		w.Look(at.Add(2 * time.Millisecond))
		l.ExitAt(at.Add(3 * time.Millisecond).UnixNano())
		w.Look(at.Add(4 * time.Millisecond))
	}
	out := buf.String()
	if n := strings.Count(out, "loopwatch: loop held"); n != 2 {
		t.Fatalf("%d held lines, want 2 (the first and the one a second on):\n%s", n, out)
	}
	if n := strings.Count(out, "loopwatch: loop released"); n != 2 || !strings.Contains(out, "unlogged_before=3") {
		t.Fatalf("want 2 released lines and the 3 left out counted:\n%s", out)
	}
	if s := w.Stats(); s.Episodes != 5 {
		t.Fatalf("stats %+v: every episode counted", s)
	}
}

// TestParseWaitingForP reads real dumps (Go 1.26, linux/amd64): a
// goroutine back from a system call (or a C call) without a P is printed
// runnable, from where it entered the call, as during the call; it waits
// for a P. One preempted in its own code, one woken from a channel and
// not yet run, and one still in its call are not.
func TestParseWaitingForP(t *testing.T) {
	for _, c := range []struct {
		name, dump string
		state      string
		waitP      bool
	}{
		{"back from a system call", `goroutine 7 [runnable, locked to thread]:
syscall.Syscall(0x23, 0x102709a2cf80, 0x0, 0x0)
	/usr/local/go/src/syscall/syscall_linux.go:74 +0x25
main.sleepSyscall(0x0?)
	/tmp/exitsys/main.go:24 +0x75
main.main.func1()
	/tmp/exitsys/main.go:34 +0x48
created by main.main in goroutine 1
	/tmp/exitsys/main.go:30 +0x85
`, "runnable", true},
		{"in the system call", `goroutine 7 [syscall, locked to thread]:
syscall.Syscall(0x23, 0x102709a2cf80, 0x0, 0x0)
	/usr/local/go/src/syscall/syscall_linux.go:74 +0x25
main.sleepSyscall(0x0?)
	/tmp/exitsys/main.go:24 +0x75
created by main.main in goroutine 1
	/tmp/exitsys/main.go:30 +0x85
`, "syscall", false},
		{"back from x/sys/unix's own entry", `goroutine 5 [runnable, locked to thread]:
golang.org/x/sys/unix.SyscallNoError(0x23, 0x962d349f80, 0x0, 0x0)
	/root/go/pkg/mod/golang.org/x/sys@v0.50.0/unix/asm_linux_amd64.s:23 +0x9
main.sleepSyscall(0x0?)
	/tmp/exitsys/main.go:26 +0x85
main.main.func1()
	/tmp/exitsys/main.go:36 +0x48
created by main.main in goroutine 1
	/tmp/exitsys/main.go:32 +0x85
`, "runnable", true},
		{"back from a C call", `goroutine 3 [runnable, locked to thread]:
main._Cfunc_nap()
	_cgo_gotypes.go:46 +0x3a
main.napC(...)
	/tmp/exitcgo/main.go:23
main.main.func1()
	/tmp/exitcgo/main.go:32 +0x45
created by main.main in goroutine 1
	/tmp/exitcgo/main.go:28 +0x85
`, "runnable", true},
		{"preempted in its own code", `goroutine 5 [runnable]:
main.spin(0x0?)
	/tmp/preempt/main.go:13 +0xa
created by main.main in goroutine 1
	/tmp/preempt/main.go:24 +0x7d
`, "runnable", false},
		{"woken from a channel, not yet run", `goroutine 6 [runnable]:
main.waiter(...)
	/tmp/preempt/main.go:19
main.main.func1()
	/tmp/preempt/main.go:28 +0x2a
created by main.main in goroutine 1
	/tmp/preempt/main.go:26 +0xd9
`, "runnable", false},
	} {
		id := uint64(0)
		fmt.Sscanf(c.dump, "goroutine %d", &id)
		state, frames, waitP, _ := parse([]byte(c.dump), id)
		if state != c.state || waitP != c.waitP || len(frames) == 0 {
			t.Errorf("%s: state %q, waiting for a P %v, %d frames; want %q, %v", c.name, state, waitP, len(frames), c.state, c.waitP)
		}
	}
}

// TestParseInRuntime: a goroutine waiting inside Go's runtime itself
// shows that wait at its own line, the runtime's frames hidden: an
// allocation waiting for a collection to start (semacquire at
// protocol.parseDuration held three of the kit's loops 11-80 ms in
// /offload beside noisy neighbours, blamed on that line), an assist, the
// world being stopped. A semaphore of the standard library's (a file's
// or a socket's lock) is a wait of the callback's, and so are a channel
// and a sleep.
func TestParseInRuntime(t *testing.T) {
	for _, c := range []struct {
		name, dump string
		inRuntime  bool
	}{
		{"an allocation waiting for a collection", `goroutine 40 [semacquire, locked to thread]:
github.com/bystander-kit/bystander/internal/protocol.parseDuration({0xc000a0e1a6, 0x3, 0x3a})
	/src/internal/protocol/protocol.go:157 +0x45
main.(*server).handle(0xc0001c8000)
	/src/loopserver/routes.go:51 +0x1f
created by golang.org/x/sync/errgroup.(*Group).Go in goroutine 1
	/m/golang.org/x/sync@v0.24.0/errgroup/errgroup.go:78 +0x93
`, true},
		{"an assist", "goroutine 8 [GC assist wait]:\nexample.com/app.build(0x1)\n\t/src/app/build.go:9 +0x2\n", true},
		{"stopping the world", "goroutine 8 [stopping the world]:\nexample.com/app.build(0x1)\n\t/src/app/build.go:9 +0x2\n", true},
		{"a socket's lock", `goroutine 9 [semacquire]:
internal/poll.runtime_Semacquire(0xc0000a4018?)
	/usr/local/go/src/runtime/sema.go:76 +0x25
internal/poll.(*fdMutex).rwlock(0xc0000a4000, 0x0?)
	/usr/local/go/src/internal/poll/fd_mutex.go:154 +0xc5
example.com/app.send(0x1)
	/src/app/send.go:9 +0x2
`, false},
		{"a channel", "goroutine 8 [chan receive]:\nexample.com/app.wait(0x1)\n\t/src/app/wait.go:9 +0x2\n", false},
		{"a sleep", "goroutine 8 [sleep]:\ntime.Sleep(0x4c4b40)\n\t/usr/local/go/src/runtime/time.go:363 +0x165\nexample.com/app.nap()\n\t/src/app/nap.go:9 +0x2\n", false},
	} {
		id := uint64(0)
		fmt.Sscanf(c.dump, "goroutine %d", &id)
		state, frames, waitP, inRuntime := parse([]byte(c.dump), id)
		if state == "" || len(frames) == 0 || waitP || inRuntime != c.inRuntime {
			t.Errorf("%s: state %q, %d frames, waiting for a P %v, in the runtime %v; want in the runtime %v", c.name, state, len(frames), waitP, inRuntime, c.inRuntime)
		}
	}
}
