// Package offload is the bounded pool a server hands blocking calls to, so
// that the thread serving connections never waits: a fixed number of worker
// goroutines take jobs from a bounded queue in arrival order, and a full queue
// is refused at once rather than blocking the caller.
package offload

import (
	"errors"
	"sync"
)

// ErrFull means the queue is full: the caller must answer without waiting.
var ErrFull = errors.New("offload: queue full")

// ErrClosed means the pool was closed.
var ErrClosed = errors.New("offload: pool closed")

// Pool runs jobs on a fixed number of workers.
type Pool struct {
	jobs    chan func()
	wg      sync.WaitGroup
	mu      sync.RWMutex
	closed  bool
	workers int
}

// New starts workers goroutines behind a queue of queue jobs.
func New(workers, queue int) *Pool {
	if workers < 1 {
		workers = 1
	}
	if queue < 0 {
		queue = 0
	}
	p := &Pool{jobs: make(chan func(), queue), workers: workers}
	p.wg.Add(workers)
	for range workers {
		go func() {
			defer p.wg.Done()
			for job := range p.jobs {
				job()
			}
		}()
	}
	return p
}

// Workers is the number of workers.
func (p *Pool) Workers() int { return p.workers }

// Queued is the number of jobs waiting for a worker.
func (p *Pool) Queued() int { return len(p.jobs) }

// Submit queues job without blocking; it returns ErrFull when the queue is full.
func (p *Pool) Submit(job func()) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	select {
	case p.jobs <- job:
		return nil
	default:
		return ErrFull
	}
}

// Close stops taking jobs; queued jobs still run. It does not wait for them.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
}

// Wait waits for the workers to finish after Close.
func (p *Pool) Wait() { p.wg.Wait() }
