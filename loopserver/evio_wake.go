package main

// evio v1.0.8's poll (internal/internal_linux.go, Wait) handles the queued
// wakes, then reads the eventfd that signalled them, so a wake queued in
// between keeps its place in the queue but loses its signal, and the loop
// sleeps until other traffic, loop 0's tick or its 100 ms poll timeout. A
// beat is handed over the moment the last one ran, inside that very
// window, so the engine declares it loses wakes (traits.losesWakes) and
// the monitor repeats the wake of a beat still waiting at its loop's next
// turn (rewake). And evio's wake replaces the output still unsent with
// what the callback returns (v1.0.8, loopWake, where a read appends): what
// a job answers is put behind it (runJobs).

// wake wakes the connection's loop for the jobs queued (again: a repeated
// wake), unless a test loses it (hooks.dropWake). It runs on any
// goroutine: it reads nothing the loop writes after the connection opened.
func (l *evioLink) wake(again bool) {
	if drop := l.e.s.hooks.dropWake; drop != nil && drop(again) {
		return
	}
	l.ec.Wake()
}

// rewake wakes the loop again for a beat still waiting.
func (l *evioLink) rewake() { l.wake(true) }

// runJobs runs the jobs queued, on the connection's loop, and puts what
// they answer behind the output still unsent.
func (l *evioLink) runJobs() (closeNow bool) {
	l.mu.Lock()
	jobs := l.jobs
	l.jobs = nil
	l.mu.Unlock()
	for _, f := range jobs {
		if f() {
			closeNow = true
		}
	}
	if len(l.out) > 0 {
		if f, ok := evioField(l.ec, evioOut); ok && f.Len() > 0 {
			l.out = append(append(make([]byte, 0, f.Len()+len(l.out)), f.Bytes()...), l.out...)
		}
	}
	return closeNow
}
