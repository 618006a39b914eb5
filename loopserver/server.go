package main

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bystander-kit/bystander/internal/block"
	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/offload"
)

// maxPendingInput bounds what a client may pipeline behind a request whose
// answer is still outstanding, or while it is not reading its answers;
// past it the connection is closed.
const maxPendingInput = 1 << 20

// maxPendingOutput bounds the answers a connection may have waiting to be
// sent: past it the server answers nothing more on that connection until
// the client has read some (gnet would otherwise buffer every answer to a
// client that pipelines and never reads).
const maxPendingOutput = 256 << 10

// server is what every engine shares: the connection core, the routes,
// the loops and their counters.
type server struct {
	opts    options
	loops   *loopSet
	pool    *offload.Pool
	traits  traits // the engine's
	hooks   hooks
	mon     *lag.Monitor
	started time.Time
	log     io.Writer

	// The connection cap: below the descriptor limit, so that an accept
	// never fails for want of one (gnet stops its whole engine when it
	// does, evio its loop).
	maxConns, nofile int64
	open, refused    atomic.Int64
	lastRefusalLog   atomic.Int64 // unix ns

	hearts   hearts
	stopping atomic.Bool
	wakeMu   sync.RWMutex // wakes hold it shared; stop holds it to set stopping

	conns                    sync.Map     // *conn -> struct{}: every open connection, for the sweeper
	idleTO, headerTO, bodyTO atomic.Int64 // connections closed by each timeout
}

// hooks are the tests' ways into a server; a served one has none.
type hooks struct {
	// blockFor is the blocking call instead of block.For (a channel wait,
	// a mutex: blocks that are not block modes).
	blockFor func(block.Mode, time.Duration) time.Duration
	// dropWake loses the evio wakes it says yes to (again: a repeated
	// one), as evio's poll loses some.
	dropWake func(again bool) bool
	// started is given the server once it is made.
	started func(*server)
}

func newServer(o options, tr traits, h hooks) *server {
	s := &server{
		opts:    o,
		traits:  tr,
		hooks:   h,
		loops:   newLoopSet(o.lockThreads),
		pool:    offload.New(o.OffloadWorkers, o.OffloadQueue),
		started: time.Now(),
		log:     o.log,
	}
	s.nofile, s.maxConns = connCap()
	s.maxConns = max(s.maxConns-int64(2*o.loops), 1) // the hearts' two ends
	s.hearts.ports, s.hearts.byLoop = map[int]chan *conn{}, map[int]int{}
	s.mon = lag.New(lag.Options{Interval: o.lagInterval, Warn: o.blockWarn, StackEvery: o.stackEvery, Log: o.log, Name: "loopserver", Repeat: tr.losesWakes},
		s.loops.lagLoops, s.poke)
	s.loops.newLag = s.mon.NewLoop
	return s
}

// awake runs wake, a wake of an engine's loop, unless the server is
// stopping: a stopped engine has closed its pollers' descriptors, and a
// wake (evio's writes 8 bytes to its eventfd) would write into whatever
// opened next under the same number, another connection's socket say.
func (s *server) awake(wake func()) {
	s.wakeMu.RLock()
	defer s.wakeMu.RUnlock()
	if !s.stopping.Load() {
		wake()
	}
}

// stop marks the server stopping; once it returns no wake is under way
// and none will start. It comes before the engine is told to stop.
func (s *server) stop() {
	s.wakeMu.Lock()
	s.stopping.Store(true)
	s.wakeMu.Unlock()
}
