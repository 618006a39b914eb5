package lag

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// The monitor's own thread: it ticks from the kernel, and dozes while
// every loop rests until a loop's request nudges it.

// Run hands out heartbeats and detects blocks every Tick until stop closes.
//
// The ticks come from a thread of its own sleeping in the kernel (ppoll to
// a deadline), not from a Go timer: a Go timer lives on a P, and a loop
// held in a blocking syscall (a JDBC read; the kit's syscall block mode)
// can keep that P until the runtime takes it back, milliseconds later, so
// the ticks, and with them the beats and the detection of that very block,
// came late (a 5 ms block showed as a lag of 1 to 5 ms). While every loop
// rests (no request for IdleAfter) and none is held, the thread sleeps
// until the next resting beat is due; a loop entering a request wakes it.
func (m *Monitor) Run(stop <-chan struct{}) {
	if m.Tick() == 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		m.runTicker(stop)
		return
	}
	m.nudgeFD.Store(int64(efd) + 1)
	defer func() {
		m.nudgeMu.Lock() // no nudge is writing to efd now
		m.nudgeFD.Store(0)
		unix.Close(efd)
		m.nudgeMu.Unlock()
	}()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() { // a stop wakes it from however long a sleep
		select {
		case <-stop:
			m.poke8()
		case <-stopped:
		}
	}()
	// The schedule runs on the monotonic clock: a step of the wall clock
	// must not make it sleep an hour or spin.
	base := time.Now()
	mono := func() int64 { return int64(time.Since(base)) }
	next := mono()
	var buf [8]byte
	for {
		select {
		case <-stop:
			return
		default:
		}
		tick := int64(m.Tick())
		next += tick
		now := mono()
		if now-next > tick {
			next = now // fell behind: no burst of catch-up ticks
		}
		wait := next - now
		// dozing is set before the loops are looked at, and Enter sets
		// entered before it looks at dozing: either this sees the request
		// or the request's Enter sees the doze and nudges.
		m.dozing.Store(true)
		if m.allResting(time.Now().UnixNano()) {
			wait = max(wait, int64(m.opts.IdleEvery)/int64(max(m.phases(), 1)))
		} else {
			m.dozing.Store(false)
		}
		if wait > 0 {
			ts := unix.NsecToTimespec(wait)
			fds := []unix.PollFd{{Fd: int32(efd), Events: unix.POLLIN}}
			if n, _ := unix.Ppoll(fds, &ts, nil); n > 0 {
				_, _ = unix.Read(efd, buf[:])
				next = mono() // nudged: tick now, and on from here
			}
		}
		m.dozing.Store(false)
		m.Step(time.Now().UnixNano())
	}
}

// runTicker is Run on a Go ticker, where no eventfd can be had.
func (m *Monitor) runTicker(stop <-chan struct{}) {
	tick := m.Tick()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			m.Step(time.Now().UnixNano())
			if d := m.Tick(); d != tick {
				tick = d
				t.Reset(tick)
			}
		}
	}
}

// allResting says whether no loop served a request for IdleAfter and none
// is held: then nothing is due before the next resting beat.
func (m *Monitor) allResting(now int64) bool {
	if m.opts.Interval <= 0 {
		return false
	}
	for _, l := range m.loops() {
		m.adopt(l)
		if l.entered.Load() != 0 || now-l.left.Load() < int64(IdleAfter) || l.blockAt.Load() != 0 || l.due.Load() != 0 {
			return false
		}
	}
	return true
}

// adopt makes l nudge m when it enters a request.
func (m *Monitor) adopt(l *Loop) {
	if l.mon.Load() == nil {
		l.mon.Store(m)
	}
}

// nudge wakes a dozing monitor: a loop entered a request.
func (m *Monitor) nudge() {
	if m.dozing.CompareAndSwap(true, false) {
		m.poke8()
	}
}

// poke8 wakes Run's sleep through its eventfd, if it still has one.
func (m *Monitor) poke8() {
	m.nudgeMu.Lock()
	defer m.nudgeMu.Unlock()
	if fd := m.nudgeFD.Load(); fd > 0 {
		one := [8]byte{1}
		_, _ = unix.Write(int(fd-1), one[:])
	}
}
