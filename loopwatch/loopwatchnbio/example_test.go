package loopwatchnbio_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/loopwatch"
	"github.com/bystander-kit/bystander/loopwatch/loopwatchnbio"
	"github.com/lesismal/nbio"
)

// queryDatabase stands for a blocking call left in a handler: it waits
// for a reply that, so that each run prints the same, comes once
// loopwatch has reported it.
func queryDatabase(reply <-chan struct{}) { <-reply }

// An nbio server on loopwatchnbio's engine: its blocking call is named, on
// the poller of the connection that made it, with nothing marked in the
// handler.
func ExampleNewEngine() {
	reply := make(chan struct{})
	w := loopwatch.New(loopwatch.Options{
		Threshold: 5 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)), // or your logger: a Warn line an episode
		OnEpisode: func(e loopwatch.Episode) {
			if !e.Ended {
				fn := e.Culprit().Function
				fmt.Printf("%s held, in %s at %s\n", e.Loop, e.State, fn[strings.LastIndex(fn, "/")+1:])
				close(reply)
			}
		},
	})
	defer w.Stop()
	g := loopwatchnbio.NewEngine(nbio.Config{Network: "tcp", Addrs: []string{"127.0.0.1:0"}, NPoller: 1}, w)
	g.OnData(func(c *nbio.Conn, data []byte) {
		queryDatabase(reply) // the blocking call, on the poller
		_, _ = c.Write([]byte("done\n"))
	})
	if err := g.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer g.Stop()
	c, err := net.Dial("tcp", g.Addrs[0])
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
	// nbio-poller-0 held, in chan receive at loopwatchnbio_test.queryDatabase
	// done
}
