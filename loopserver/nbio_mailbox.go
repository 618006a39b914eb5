package main

import "sync"

// nbio offers no way to run a function on a given poller (Conn.Execute
// runs on a goroutine pool), so the jobs ride on each loop's heart
// (traits.jobsRideHearts): a job is queued in the loop's mailbox and a
// byte written to the heart's other end wakes the poller, which runs the
// queue in OnData. A close, which nbio reports from a timer goroutine, is
// handed to the loop the same way.

// mailbox is one loop's queue of jobs to run on it.
type mailbox struct {
	mu    sync.Mutex
	jobs  []func()
	woken bool // a wake is on its way: the loop will run the queue
}

// queue adds job to loop index's mailbox and wakes the loop, unless a wake
// is on its way already.
func (e *nbioEngine) queue(index int, job func()) {
	b := &e.boxes[index]
	b.mu.Lock()
	b.jobs = append(b.jobs, job)
	wake := !b.woken
	b.woken = true
	b.mu.Unlock()
	if wake && !e.s.wake(index) {
		// No heart yet (or the server stopped): the next job wakes it.
		b.mu.Lock()
		b.woken = false
		b.mu.Unlock()
	}
}

// runQueue runs what was queued for l, on l.
func (e *nbioEngine) runQueue(l *loop) {
	b := &e.boxes[l.index]
	b.mu.Lock()
	jobs := b.jobs
	b.jobs, b.woken = nil, false
	b.mu.Unlock()
	for _, j := range jobs {
		j()
	}
}
