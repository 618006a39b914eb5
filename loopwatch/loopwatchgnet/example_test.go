package loopwatchgnet_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
	"github.com/bystander-kit/bystander/loopwatch/loopwatchgnet"
	"github.com/panjf2000/gnet/v2"
)

// queryDatabase stands for a blocking call left in a handler: it waits
// for a reply that, so that each run prints the same, comes once
// loopwatch has reported it.
func queryDatabase(reply <-chan struct{}) { <-reply }

// server is a gnet handler with no loopwatch in it.
type server struct {
	gnet.BuiltinEventEngine
	reply chan struct{}
	eng   chan gnet.Engine
}

func (s *server) OnBoot(e gnet.Engine) gnet.Action { s.eng <- e; return gnet.None }

func (s *server) OnTraffic(c gnet.Conn) gnet.Action {
	_, _ = c.Next(-1)
	queryDatabase(s.reply) // the blocking call, on the loop
	_, _ = c.Write([]byte("done\n"))
	return gnet.None
}

// A gnet server run by loopwatchgnet.Run: its blocking call is named, on
// its loop, with nothing marked in the handler.
func ExampleRun() {
	s := &server{reply: make(chan struct{}), eng: make(chan gnet.Engine, 1)}
	w := loopwatch.New(loopwatch.Options{
		Threshold: 5 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)), // or your logger: a Warn line an episode
		OnEpisode: func(e loopwatch.Episode) {
			if !e.Ended {
				fn := e.Culprit().Function
				fmt.Printf("%s held, in %s at %s\n", e.Loop, e.State, fn[strings.LastIndex(fn, "/")+1:])
				close(s.reply)
			}
		},
	})
	defer w.Stop()
	addr := loopback()
	go func() { _ = loopwatchgnet.Run(s, w, "tcp://"+addr, gnet.WithNumEventLoop(2), gnet.WithReuseAddr(true)) }()
	eng := <-s.eng
	defer func() { _ = eng.Stop(context.Background()) }()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	_, _ = c.Write([]byte("order\n"))
	b := make([]byte, 16)
	n, _ := c.Read(b)
	fmt.Print(string(b[:n]))
	// Output:
	// gnet-loop-0 held, in chan receive at loopwatchgnet_test.queryDatabase
	// done
}

// loopback is a free loopback address.
func loopback() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
