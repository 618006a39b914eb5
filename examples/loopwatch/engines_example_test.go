package main

// loopwatch with gnet v2 and with nbio, marked by hand: Enter and Exit
// around each callback, on its loop.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/lesismal/nbio"
	"github.com/panjf2000/gnet/v2"

	"github.com/bystander-kit/bystander/loopwatch"
)

// queryDatabase stands for a blocking call left in a callback: it waits for
// a reply that, so that each run prints the same, comes once loopwatch has
// reported it.
func queryDatabase(reply <-chan struct{}) { <-reply }

// short is a function's name without its package path.
func short(fn string) string { return fn[strings.LastIndex(fn, "/")+1:] }

// gnetServer marks every OnTraffic on the loop that runs it.
type gnetServer struct {
	gnet.BuiltinEventEngine
	w     *loopwatch.Watcher
	loops map[gnet.EventLoop]*loopwatch.Loop // touched on the loops only: each its own key
	eng   chan gnet.Engine
	reply chan struct{}
}

func (s *gnetServer) OnBoot(e gnet.Engine) gnet.Action { s.eng <- e; return gnet.None }

func (s *gnetServer) OnTraffic(c gnet.Conn) gnet.Action {
	l := s.loopOf(c)
	l.Enter()
	defer l.Exit()
	_, _ = c.Next(-1)
	queryDatabase(s.reply) // the blocking call, on the loop
	_, _ = c.Write([]byte("done\n"))
	return gnet.None
}

// loopOf is c's loop's Loop, made on first sight (one loop here; with
// several, guard the map or make them all in OnBoot's first callbacks).
func (s *gnetServer) loopOf(c gnet.Conn) *loopwatch.Loop {
	l, ok := s.loops[c.EventLoop()]
	if !ok {
		l = s.w.Loop(fmt.Sprintf("gnet-loop-%d", len(s.loops)))
		s.loops[c.EventLoop()] = l
	}
	return l
}

// With gnet v2: Enter and Exit around each callback, on its loop.
func Example_gnet() {
	s := &gnetServer{loops: map[gnet.EventLoop]*loopwatch.Loop{}, eng: make(chan gnet.Engine, 1), reply: make(chan struct{})}
	s.w = loopwatch.New(loopwatch.Options{
		Threshold: 5 * time.Millisecond,
		Logger:    slog.New(slog.DiscardHandler),
		OnEpisode: func(e loopwatch.Episode) {
			if !e.Ended {
				fmt.Printf("%s held, in %s at %s\n", e.Loop, e.State, short(e.Culprit().Function))
				close(s.reply)
			}
		},
	})
	defer s.w.Stop()
	addr := freeAddr()
	go func() { _ = gnet.Run(s, "tcp://"+addr, gnet.WithNumEventLoop(1), gnet.WithReuseAddr(true)) }()
	eng := <-s.eng
	defer func() { _ = eng.Stop(context.Background()) }()
	fmt.Print(ask(addr))
	// Output:
	// gnet-loop-0 held, in chan receive at loopwatch.queryDatabase
	// done
}

// With nbio: its pollers run OnData; each poller is one loop.
func Example_nbio() {
	reply := make(chan struct{})
	w := loopwatch.New(loopwatch.Options{
		Threshold: 5 * time.Millisecond,
		Logger:    slog.New(slog.DiscardHandler),
		OnEpisode: func(e loopwatch.Episode) {
			if !e.Ended {
				fmt.Printf("%s held, in %s at %s\n", e.Loop, e.State, short(e.Culprit().Function))
				close(reply)
			}
		},
	})
	defer w.Stop()
	addr := freeAddr()
	g := nbio.NewEngine(nbio.Config{Network: "tcp", Addrs: []string{addr}, NPoller: 1})
	loop := w.Loop("nbio-poller-0") // one poller: one loop
	g.OnData(func(c *nbio.Conn, data []byte) {
		loop.Enter()
		defer loop.Exit()
		queryDatabase(reply)
		_, _ = c.Write([]byte("done\n"))
	})
	if err := g.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer g.Stop()
	fmt.Print(ask(addr))
	// Output:
	// nbio-poller-0 held, in chan receive at loopwatch.queryDatabase
	// done
}

// freeAddr is a free loopback address.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// ask sends a line to addr, once it listens, and returns the answer.
func ask(addr string) string {
	var c net.Conn
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
	}
	if err != nil {
		return err.Error() + "\n"
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write([]byte("x\n"))
	b := make([]byte, 64)
	n, _ := c.Read(b)
	return string(b[:n])
}
