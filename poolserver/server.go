package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/bystander-kit/bystander/internal/admin"
	"github.com/bystander-kit/bystander/internal/h1"
	"github.com/bystander-kit/bystander/internal/offload"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/internal/routes"
	"github.com/bystander-kit/bystander/internal/serverflags"
)

// slots is the worker pool: a FIFO semaphore of n slots (waiters are served
// strictly in arrival order, as Tomcat's executor queue serves its threads)
// with the counters /stats shows. n == 0 means no pool at all.
type slots struct {
	n        int
	sem      *semaphore.Weighted
	busy     atomic.Int64
	waiting  atomic.Int64
	maxWait  atomic.Int64 // most waiters at once
	longest  atomic.Int64 // longest wait, ns
	acquires atomic.Int64
	series   *series
}

func newSlots(n int) *slots {
	s := &slots{n: n, series: newSeries(time.Now())}
	if n > 0 {
		s.sem = semaphore.NewWeighted(int64(n))
	}
	return s
}

// acquire waits for a slot in arrival order and returns how long it waited;
// it fails only when ctx ends first (the client went away).
func (s *slots) acquire(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	// TryAcquire fails while anyone waits, so arrival order is kept.
	if s.sem != nil && !s.sem.TryAcquire(1) {
		w := s.waiting.Add(1)
		storeMax(&s.maxWait, w)
		err := s.sem.Acquire(ctx, 1)
		s.waiting.Add(-1)
		if err != nil {
			return 0, err
		}
	}
	now := time.Now()
	d := now.Sub(start)
	s.series.waited(d, now)
	storeMax(&s.longest, int64(d))
	s.busy.Add(1)
	s.acquires.Add(1)
	return d, nil
}

func (s *slots) release() {
	s.busy.Add(-1)
	if s.sem != nil {
		s.sem.Release(1)
	}
}

func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// server answers the protocol; every handler runs holding a slot.
type server struct {
	opts    options
	slots   *slots
	pool    *offload.Pool
	routes  *routes.Server
	started time.Time
	byRoute [protocol.Offload + 1]atomic.Int64 // indexed by protocol.Route
	refused atomic.Int64
}

func newServer(o options) *server {
	s := &server{
		opts:    o,
		slots:   newSlots(o.slots),
		pool:    offload.New(o.OffloadWorkers, o.OffloadQueue),
		started: time.Now(),
	}
	s.routes = &routes.Server{Block: o.Block, Delay: o.Delay, MaxBlock: o.MaxBlock, Call: o.Call(), Pool: s.pool}
	return s
}

// refusal is what net/http lets through but the protocol refuses, with the
// same status the loop servers' decoder gives (internal/h1).
func refusal(r *http.Request) *h1.Error {
	switch {
	case len(r.Method) > h1.MaxMethod:
		return h1.ErrMethod
	case !strings.HasPrefix(r.RequestURI, "/") && r.URL.Scheme == "":
		// "*" (OPTIONS, the HTTP/2 preface's PRI) or authority form: the
		// protocol's endpoints are paths, and the loop server refuses these.
		return h1.ErrTarget
	case len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked":
		return h1.ErrChunked
	case len(r.TransferEncoding) > 0:
		return h1.ErrTransferEncoding
	case r.ContentLength > h1.MaxBodyBytes:
		return h1.ErrBodyTooLarge
	}
	n := 0
	for _, v := range r.Header {
		n += len(v)
	}
	if n+1 > h1.MaxHeaders { // Host is not in r.Header
		return h1.ErrTooManyHeaders
	}
	return nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 && s.opts.BodyTimeout > 0 {
		// The body it promised, read (or discarded) after this, comes
		// within the body timeout of its headers.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	}
	if e := refusal(r); e != nil {
		s.refused.Add(1)
		refuse(w, e)
		return
	}
	ctx := r.Context()
	queued, err := s.slots.acquire(ctx)
	if err != nil {
		return // the client is gone
	}
	start := time.Now()
	s.byRoute[protocol.RouteOf([]byte(r.URL.Path))].Add(1)
	a := s.routes.Serve(ctx, []byte(r.Method), []byte(r.URL.Path), []byte(r.URL.RawQuery), start, slot{s.slots})
	if a.Gone {
		return // the slot was given back while it waited
	}
	defer s.slots.release()
	h := w.Header()
	h[protocol.HeaderQueuedNs] = []string{strconv.FormatInt(int64(queued), 10)}
	for _, x := range a.Headers {
		h[x.Name] = []string{strconv.FormatInt(x.Value, 10)}
	}
	writeText(w, a.Status, a.Body)
}

// slot is a worker slot as internal/routes gives it back and takes it again.
type slot struct{ s *slots }

func (x slot) Release() { x.s.release() }
func (x slot) Acquire(ctx context.Context) error {
	_, err := x.s.acquire(ctx)
	return err
}

// refuse answers as the loop server's decoder does (status, one-line reason,
// Connection: close) and closes at once. net/http would first wait to read a
// body it was told is coming, up to 256 KiB, from a client that may never
// send it.
func refuse(w http.ResponseWriter, e *h1.Error) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		w.Header().Set("Connection", "close")
		writeText(w, e.Status, e.Reason+"\n")
		return
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(h1.AppendError(nil, e))
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite() // FIN before close, so unread input does not reset the answer away
	}
}

// writeText answers with a plain-text body and its length.
func writeText(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h["Date"] = nil // as the loop servers: no Date, and no time formatting per answer
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// Stats is the admin /stats document of the pool server.
type Stats struct {
	Server           string       `json:"server"`
	Slots            int          `json:"slots"`
	SlotsBusy        int64        `json:"slots_busy"`
	QueueNow         int64        `json:"queue_now"`
	QueueMax         int64        `json:"queue_max"`
	LongestQueueNs   int64        `json:"longest_queue_wait_ns"`
	SlotAcquisitions int64        `json:"slot_acquisitions"`
	BlockNs          int64        `json:"block_ns"`
	BlockMode        string       `json:"block_mode"`
	DBConns          int          `json:"db_conns,omitempty"` // --block-mode postgres: the database pool's connections
	OffloadWorkers   int          `json:"offload_workers"`
	OffloadQueued    int          `json:"offload_queued"`
	Refused          int64        `json:"refused_requests"`
	Requests         []RouteCount `json:"requests_by_route"`
	// QueueWait is how long requests waited for a slot since the start;
	// Seconds the last whole seconds, with the slots' occupancy beside.
	QueueWait QueueWait  `json:"queue_wait"`
	Seconds   []Second   `json:"seconds"`
	UptimeNs  int64      `json:"uptime_ns"`
	Process   proc.Usage `json:"process"`
}

// RouteCount is one route's request count.
type RouteCount struct {
	Route    string `json:"route"`
	Requests int64  `json:"requests"`
}

func (s *server) stats() Stats {
	st := Stats{
		Server: "poolserver", Slots: s.opts.slots,
		SlotsBusy: s.slots.busy.Load(), QueueNow: s.slots.waiting.Load(), QueueMax: s.slots.maxWait.Load(),
		LongestQueueNs: s.slots.longest.Load(), SlotAcquisitions: s.slots.acquires.Load(),
		BlockNs: int64(s.opts.Block), BlockMode: s.opts.BlockMode.String(),
		DBConns: s.opts.DBConns(), OffloadWorkers: s.pool.Workers(), OffloadQueued: s.pool.Queued(),
		Refused: s.refused.Load(), UptimeNs: int64(time.Since(s.started)), Process: proc.Self(),
	}
	for _, r := range append([]protocol.Route{protocol.Unknown}, protocol.Routes...) {
		st.Requests = append(st.Requests, RouteCount{r.String(), s.byRoute[r].Load()})
	}
	st.Seconds, st.QueueWait = s.slots.series.snapshot(time.Now())
	return st
}

// run serves until ctx is done; ready gets the bound addresses.
func run(ctx context.Context, o options, ready func(addr, admin net.Addr)) error {
	if o.log == nil {
		o.log = io.Discard
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return serverflags.ListenError("poolserver", o.Addr, err)
	}
	if err := o.OpenDB(ctx, "poolserver"); err != nil {
		ln.Close()
		return err
	}
	defer o.CloseDB()
	s := newServer(o)
	defer s.pool.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.slots.watch(ctx.Done())

	var adminAddr net.Addr = &net.TCPAddr{}
	adminDone := make(chan error, 1)
	if o.Admin != "" {
		aln, err := admin.Listen(o.Admin)
		if err != nil {
			ln.Close()
			return fmt.Errorf("poolserver: admin listener %s: %w", o.Admin, err)
		}
		adminAddr = aln.Addr()
		go func() { adminDone <- admin.Serve(ctx, aln, func() any { return s.stats() }, admin.Metrics(metrics{s})) }()
	} else {
		adminDone <- nil
	}

	srv := &http.Server{
		Handler: s,
		// net/http reads up to MaxHeaderBytes + 4096 bytes of request line and
		// headers: this makes the limit 8 KiB, as on the loop server.
		MaxHeaderBytes:               h1.MaxHeaderBytes - 4096,
		DisableGeneralOptionsHandler: true, // OPTIONS * reaches refusal, as on the loop server
		// The line and headers within HeaderTimeout; a promised body within
		// BodyTimeout of the headers, set by ServeHTTP (one ReadTimeout for
		// both gave a body the header and body timeouts added up).
		ReadHeaderTimeout: s.opts.HeaderTimeout,
		IdleTimeout:       never(s.opts.IdleTimeout),
		ErrorLog:          nil,
	}
	srv.SetKeepAlivesEnabled(true)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr(), adminAddr)
	}
	select {
	case err = <-served:
	case <-ctx.Done():
		// Handlers may be inside a long block: close connections now rather
		// than wait, so a signal stops the server within a second.
		sctx, c := context.WithTimeout(context.Background(), 300*time.Millisecond)
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
		c()
		err = <-served
	}
	cancel()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("poolserver: %w", err)
	}
	return <-adminDone
}

// never turns the flags' 0 (never) into net/http's "no timeout", which for
// an idle timeout is a negative one (0 would mean the read timeout).
func never(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
