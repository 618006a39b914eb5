// Package loopwatchgnet runs a gnet v2 server with every connection
// callback watched by loopwatch: a blocking call in your handler is named,
// with its file and line, on the loop it held, and you mark nothing.
//
//	go get github.com/bystander-kit/bystander/loopwatch/loopwatchgnet
//
//	w := loopwatch.New(loopwatch.Options{Threshold: 5 * time.Millisecond})
//	defer w.Stop()
//	err := loopwatchgnet.Run(handler, w, "tcp://127.0.0.1:9000", gnet.WithMulticore(true))
//
// What is watched, and on which Loop:
//   - OnOpen, OnTraffic and OnClose: on the Loop of the event loop that
//     runs them (c.EventLoop()), one Loop an event loop, named
//     "gnet-loop-0", "gnet-loop-1", ... in the order they first run one.
//   - OnTick: on a Loop of its own, "gnet-tick": gnet runs it on a ticker
//     goroutine, not on an event loop.
//   - OnBoot and OnShutdown: not watched (they run once, on the goroutine
//     that starts or stops the engine, before or after the loops serve).
//   - Not watched either: what gnet runs for you later, on a loop, outside
//     those callbacks (EventLoop.Execute's runnables, the callbacks of
//     AsyncWrite, AsyncWritev, Wake and Close: a Wake's OnTraffic is
//     watched, its callback not), and what runs on goroutines of your own.
//
// With gnet.WithLockOSThread(true), each event loop's Loop is told its
// thread is locked (loopwatch.Loop.LockThread) when it first runs a
// callback: loopwatch then tells a blocking call from a loop thread that
// did not get a CPU.
package loopwatchgnet

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
	"github.com/panjf2000/gnet/v2"
)

// Run is gnet.Run with h's callbacks watched by w.
func Run(h gnet.EventHandler, w *loopwatch.Watcher, addr string, opts ...gnet.Option) error {
	return gnet.Run(Wrap(h, w, opts...), addr, opts...)
}

// Wrap is h with its callbacks watched by w, for gnet.Run or gnet.Rotate
// with the same opts (their WithLockOSThread is read).
func Wrap(h gnet.EventHandler, w *loopwatch.Watcher, opts ...gnet.Option) gnet.EventHandler {
	var o gnet.Options
	for _, opt := range opts {
		opt(&o)
	}
	return &handler{h: h, w: w, locked: o.LockOSThread}
}

type handler struct {
	h      gnet.EventHandler
	w      *loopwatch.Watcher
	locked bool

	loops sync.Map // gnet.EventLoop -> *loopwatch.Loop: read by every callback without a lock
	mu    sync.Mutex
	n     int // loops made (under mu)
	tick  atomic.Pointer[loopwatch.Loop]
}

// loopOf is the Loop of the event loop running the callback, made (and
// told of a locked thread) on its first callback, on that loop.
func (x *handler) loopOf(el gnet.EventLoop) *loopwatch.Loop {
	if l, ok := x.loops.Load(el); ok {
		return l.(*loopwatch.Loop)
	}
	x.mu.Lock()
	l := x.w.Loop("gnet-loop-" + strconv.Itoa(x.n))
	x.n++
	x.loops.Store(el, l)
	x.mu.Unlock()
	if x.locked {
		l.LockThread() // gnet locked this goroutine already: it stays as it was
	}
	return l
}

func (x *handler) OnBoot(eng gnet.Engine) gnet.Action { return x.h.OnBoot(eng) }

func (x *handler) OnShutdown(eng gnet.Engine) { x.h.OnShutdown(eng) }

func (x *handler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	l := x.loopOf(c.EventLoop())
	l.Enter()
	defer l.Exit()
	return x.h.OnOpen(c)
}

func (x *handler) OnClose(c gnet.Conn, err error) gnet.Action {
	l := x.loopOf(c.EventLoop())
	l.Enter()
	defer l.Exit()
	return x.h.OnClose(c, err)
}

func (x *handler) OnTraffic(c gnet.Conn) gnet.Action {
	l := x.loopOf(c.EventLoop())
	l.Enter()
	defer l.Exit()
	return x.h.OnTraffic(c)
}

func (x *handler) OnTick() (time.Duration, gnet.Action) {
	l := x.tick.Load()
	if l == nil { // the ticker's one goroutine: made once
		l = x.w.Loop("gnet-tick")
		x.tick.Store(l)
	}
	l.Enter()
	defer l.Exit()
	return x.h.OnTick()
}
