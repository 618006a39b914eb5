package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// gnet's own acceptor stops the whole engine on any accept error but a few
// (v2.9.7 acceptor_unix.go accept0: "too many open files" included), and
// accepts a burst whole before its loops can close the connections past
// the cap, so a burst could run the process out of descriptors and stop
// the engine. The kit accepts the connections itself, backs off on "too
// many open files" (as net/http does), closes a connection past the cap
// before gnet sees it, and hands the others to gnet (Engine.Register).

// OnBoot: gnet has bound its unix socket, which nothing dials (the kit
// accepts the connections itself), so its directory goes now: a server
// killed rather than stopped leaves nothing in the temporary directory.
func (e *gnetEngine) OnBoot(eng gnet.Engine) gnet.Action {
	_ = os.RemoveAll(e.sockDir)
	e.eng = eng
	close(e.booted)
	return gnet.None
}

// OnTick is called first once every loop is registered with the balancer
// (gnet calls OnBoot before): only then may connections be handed over.
func (e *gnetEngine) OnTick() (time.Duration, gnet.Action) {
	e.started.Do(func() {
		go e.accept()
		e.ready(e.ln.Addr())
	})
	return time.Hour, gnet.None
}

// handoverSlots is how many connections may be under way to gnet at once:
// an eighth of the descriptors the connection cap leaves spare, 4 to 1024.
func handoverSlots(s *server) int {
	return int(min(max((s.nofile-s.maxConns)/8, 4), 1024))
}

// accept takes the connections and hands them to gnet until the listener
// closes (acceptLoop); a connection under way holds a slot until gnet has
// opened it.
func (e *gnetEngine) accept() {
	err := e.s.acceptLoop(e.ln, func() bool { return e.s.open.Load()+int64(len(e.slots)) >= e.s.maxConns }, func(c net.Conn) {
		e.slots <- struct{}{}
		done := func() { <-e.slots }
		res, err := e.eng.Register(gnet.NewNetConnContext(context.Background(), c))
		if err != nil {
			done()
			c.Close()
			return
		}
		go func() {
			// gnet sends the result once the loop has opened the
			// connection (or failed to take it: its copy of the
			// descriptor, say).
			if r := <-res; r.Err != nil && !e.s.stopping.Load() {
				fmt.Fprintf(e.s.log, "loopserver: gnet could not take a connection: %v\n", r.Err)
			}
			done()
		}()
	})
	if err != nil {
		e.acceptErr <- err
	}
}
