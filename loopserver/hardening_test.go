package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/evio"

	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// startLimited starts the loop server with both descriptor limits at
// nofile (wiretest.StartLimited).
func startLimited(t *testing.T, nofile int, args ...string) (string, *exec.Cmd) {
	t.Helper()
	return wiretest.StartLimited(t, wiretest.Build(t, "."), nofile, args...)
}

// TestDescriptorBurst: connections that arrive faster than they are
// accepted must not run the process out of descriptors: gnet's own
// acceptor took a whole burst before its loops could close the ones past
// the cap, ran out, and stopped the engine (5 of 8 trials, every client
// dropped). 1,100 connections opened at once, then every one under the
// cap must still be served.
func TestDescriptorBurst(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			for trial := range 3 {
				addr, cmd := startLimited(t, 1024, "--engine", eng)
				conns := make([]net.Conn, 1100)
				var wg sync.WaitGroup
				for i := range conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						conns[i], _ = net.DialTimeout("tcp", addr, 10*time.Second)
					}()
				}
				wg.Wait()
				// Every connection under the cap is answered (900 of them;
				// the cap is a little above). Those past it were closed.
				served := 0
				for _, c := range conns {
					if c == nil {
						continue
					}
					_ = c.SetDeadline(time.Now().Add(20 * time.Second))
					if _, err := c.Write([]byte("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")); err != nil {
						continue
					}
					buf := make([]byte, 512)
					if n, err := c.Read(buf); err == nil && strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
						served++
					}
				}
				for _, c := range conns {
					if c != nil {
						c.Close()
					}
				}
				if cmd.ProcessState != nil || served < 900 {
					t.Fatalf("trial %d: %d of 1,100 connections served (want the 900 or more under the cap); server exited: %v", trial, served, cmd.ProcessState)
				}
			}
		})
	}
}

// TestOutOfDescriptors: 1,100 connections against a limit of 1,024
// descriptors (wiretest.CheckOutOfDescriptors): gnet's engine stopped on
// EMFILE and the process exited with status 0. Every engine.
func TestOutOfDescriptors(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, cmd := startLimited(t, 1024, "--engine", eng)
			wiretest.CheckOutOfDescriptors(t, addr, cmd)
		})
	}
}

// TestClientNeverReads: a client pipelines /fast and never reads
// (wiretest.CheckClientNeverReads): gnet grew by about 4 MB per MiB sent.
func TestClientNeverReads(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, cmd := wiretest.StartServer(t, ".", "--engine", eng)
			wiretest.CheckClientNeverReads(t, addr, cmd.Process.Pid)
		})
	}
}

// TestPartialRequest: half a request costs nothing and is closed at the
// header timeout (wiretest.CheckPartialRequest).
func TestPartialRequest(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, cmd := wiretest.StartServer(t, ".", "--engine", eng, "--header-timeout", "1s")
			wiretest.CheckPartialRequest(t, addr, cmd.Process.Pid)
		})
	}
}

// TestBigPipelineAnswered: far more answers than the server keeps
// waiting, then read: every one, in order (wiretest.CheckBigPipelineAnswered).
func TestBigPipelineAnswered(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, _ := wiretest.StartServer(t, ".", "--engine", eng)
			wiretest.CheckBigPipelineAnswered(t, addr)
		})
	}
}

// TestPipelinedContinuations: 1,000 trials each of two pipelined /async
// and two pipelined /offload requests (on 200 connections at a time):
// every answer arrives. evio's wake replaced the connection's unsent
// output, so an answer handed back through it lost the one before.
func TestPipelinedContinuations(t *testing.T) {
	for _, eng := range engines {
		for _, target := range []string{"/async?delay=0s", "/offload?block=0s"} {
			t.Run(eng+target, func(t *testing.T) {
				addr, _ := wiretest.StartServer(t, ".", "--engine", eng)
				req := "GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n"
				var lost, trials int
				for range 5 {
					var wg sync.WaitGroup
					var mu sync.Mutex
					for range 200 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							got := 0
							defer func() {
								mu.Lock()
								lost += 2 - got
								trials++
								mu.Unlock()
							}()
							c, err := net.DialTimeout("tcp", addr, 5*time.Second)
							if err != nil {
								return
							}
							defer c.Close()
							if _, err := c.Write([]byte(req + req)); err != nil {
								return
							}
							br := bufio.NewReader(c)
							_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
							for range 2 {
								resp, err := http.ReadResponse(br, nil)
								if err != nil {
									return
								}
								_, _ = io.Copy(io.Discard, resp.Body)
								resp.Body.Close()
								if resp.StatusCode == 200 {
									got++
								}
							}
						}()
					}
					wg.Wait()
				}
				if lost != 0 {
					t.Fatalf("%d answers lost in %d trials of two pipelined %s", lost, trials, target)
				}
			})
		}
	}
}

// TestEvioUnsentField: the evio connection still keeps its unsent output,
// its descriptor and its loop's epoll set where evioUnsent, the fd of the
// transport and quiet read them.
func TestEvioUnsentField(t *testing.T) {
	var ec evio.Conn
	ready, opened := make(chan struct{}), make(chan struct{})
	var ev evio.Events
	ev.Serving = func(evio.Server) evio.Action { close(ready); return evio.None }
	ev.Opened = func(c evio.Conn) ([]byte, evio.Options, evio.Action) {
		ec = c
		close(opened)
		return nil, evio.Options{}, evio.Shutdown
	}
	addr := wiretest.FreeAddr(t)
	done := make(chan error, 1)
	go func() { done <- evio.Serve(ev, "tcp://"+addr) }()
	<-ready
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("evio never opened the connection")
	}
	// evio's shutdown can lose its wake (its poll reads the eventfd after
	// the queued wakes; the loop server re-pokes for this reason) and then
	// never returns: one CI run hung here for 10 minutes. The connection is
	// all this test needs; the shutdown is waited for a while, not forever.
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Log("evio's shutdown did not return within 5 s (its lost wake); the check goes on")
	}
	v := reflect.ValueOf(ec).Elem()
	if f := v.FieldByName("out"); !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Uint8 {
		t.Fatalf("evio's connection has no []byte field out: %v", v.Type())
	}
	if _, ok := evioField(ec, evioOut); !ok {
		t.Fatal("evioField does not find the unsent output")
	}
	if f, ok := evioField(ec, evioFD); !ok || f.Int() <= 0 {
		t.Fatalf("evioField does not find the descriptor: %v %v", f, ok)
	}
	if ep, ok := evioEpfd(ec); !ok || ep <= 0 {
		t.Fatalf("evioEpfd does not find the loop's epoll set (conn.loop.poll.fd): %d %v", ep, ok)
	}
}

// TestThousandPipelinedAsync: one connection pipelines 1,000 /async; all
// 1,000 answers come back (evio gave 576 and hung).
func TestThousandPipelinedAsync(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, _ := wiretest.StartServer(t, ".", "--engine", eng)
			c := wiretest.Dial(t, addr)
			if _, err := c.C.Write([]byte(strings.Repeat("GET /async?delay=0s HTTP/1.1\r\nHost: a\r\n\r\n", 1000))); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			for i := range 1000 {
				if a, err := c.Read("GET", start); err != nil || a.Status != 200 {
					t.Fatalf("answer %d of 1000: %v %v", i+1, a.Status, err)
				}
			}
		})
	}
}

// TestTimeouts: idle, slow-header and promised-body connections are closed;
// an answer under way is not cut short. Every engine.
func TestTimeouts(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			wiretest.CheckTimeouts(t, func(args ...string) string {
				addr, _ := wiretest.StartServer(t, ".", append([]string{"--engine", eng}, args...)...)
				return addr
			})
		})
	}
}

// TestHalfClosed: a client that sends its request and shuts down its
// sending side (printf ... | nc -N) still gets the /async or /offload
// answer it asked for, as HTTP/1.1 allows; the engines closed the
// connection on the end of input and the answer was lost.
func TestHalfClosed(t *testing.T) {
	for _, eng := range engines {
		for _, target := range []string{"/async?delay=100ms", "/offload?block=100ms", "/fast"} {
			t.Run(eng+target, func(t *testing.T) {
				addr, _ := wiretest.StartServer(t, ".", "--engine", eng)
				// 20 clients at once, each on its own connection: the
				// answers come on the loops, or the offload pool, together.
				var wg sync.WaitGroup
				for range 20 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c, err := net.Dial("tcp", addr)
						if err != nil {
							t.Error(err)
							return
						}
						defer c.Close()
						if _, err := c.Write([]byte("GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n")); err != nil {
							t.Error(err)
							return
						}
						_ = c.(*net.TCPConn).CloseWrite()
						_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
						b, err := io.ReadAll(c)
						if !strings.HasPrefix(string(b), "HTTP/1.1 200") {
							t.Errorf("after the client's half-close: %q %v", b, err)
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}

// TestReusedDescriptor: while a half-closed client waits for its /async
// answer, the server keeps its socket through a duplicate descriptor; the
// engine's own descriptor, closed at the end of input, is taken by the
// next connections. An engine that leaves a closed descriptor in its epoll
// set (nbio) went on getting the kept socket's events under that number:
// it closed the new connection holding it (about one half-closed client in
// 6,000 in TestHalfClosed lost its answer or hung). Every engine.
func TestReusedDescriptor(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, _ := wiretest.StartServer(t, ".", "--engine", eng)
			a := halfClosed(t, addr, "/async?delay=1s")
			time.Sleep(100 * time.Millisecond) // the engine saw the end of input and closed its descriptor
			// More connections than loops, one after another: one of them
			// takes the closed descriptor's number on a's loop.
			for i := range 8 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				time.Sleep(20 * time.Millisecond) // the engine has it
				br := bufio.NewReader(c)
				for j := range 3 {
					if _, err := c.Write([]byte("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")); err != nil {
						t.Fatalf("connection %d, request %d: %v", i+1, j+1, err)
					}
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Fatalf("connection %d, request %d, opened while a half-closed client waited: %v", i+1, j+1, err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			answered(t, a)
		})
	}
}

// TestKeptSocketQuiet: while a half-closed client waits for its /async
// answer, the loops sleep. evio closes the descriptor at the end of input
// but leaves it in its level-triggered epoll set, where the socket the kit
// keeps for the answer reported its end of input again at every wait: the
// loop spun, a whole core for as long as the answer was owed. Measured on
// the loop threads' time on a CPU (/proc schedstat): a spinning loop gets
// its share of the CPUs however busy the machine (53 to 570 ms of 800,
// quiet or beside 8 noisy processes at a load average of 23), resting
// loops 1 to 3 ms in all (evio wakes each loop every 100 ms, loop 0 every
// 20 ms for its tick). Not on their time waiting for a CPU too: each of
// those wakes waits its turn behind the neighbours (up to 330 ms a loop
// in the window), and the sum of both reached 3.6 s of 800 ms with the
// loops on a CPU about 1 ms. Every engine, beside noisy neighbours, where
// the measure has to hold.
func TestKeptSocketQuiet(t *testing.T) {
	wiretest.Noisy(t, wiretest.Build(t, "../internal/cmd/noisy"), 4, time.Minute)
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, cmd := wiretest.StartServer(t, ".", "--engine", eng)
			a := halfClosed(t, addr, "/async?delay=2s")
			time.Sleep(200 * time.Millisecond) // the engine saw the end of input
			before := usageOf(t, cmd.Process.Pid)
			const window = 800 * time.Millisecond
			time.Sleep(window)
			ran, threads := loopThreadsRan(t, before, usageOf(t, cmd.Process.Pid))
			if ran > window/40 {
				t.Errorf("the loop threads ran %s on a CPU in %s while one half-closed client waited: a loop spins (%s)", ran, window, threads)
			}
			t.Logf("the loop threads ran %s on a CPU in %s (%s)", ran, window, threads)
			answered(t, a)
		})
	}
}

// halfClosed sends target's request on a new connection to addr and shuts
// down its sending side, as printf ... | nc -N does.
func halfClosed(t *testing.T, addr, target string) net.Conn {
	a, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if _, err := a.Write([]byte("GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = a.(*net.TCPConn).CloseWrite()
	return a
}

// answered says whether the half-closed client a got its answer.
func answered(t *testing.T, a net.Conn) {
	_ = a.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(a); !strings.HasPrefix(string(b), "HTTP/1.1 200") {
		t.Errorf("the half-closed client: %q %v", b, err)
	}
}

// usageOf is process pid's counts, thread by thread (proc.Of).
func usageOf(t *testing.T, pid int) proc.Usage {
	u, _, err := proc.Of(pid)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// loopThreadsRan is how long the loop threads ("loop-N") ran on a CPU
// between two readings, and what each did, for a message: time on a CPU,
// time waiting for one, and how many times it was put on one.
func loopThreadsRan(t *testing.T, before, after proc.Usage) (time.Duration, string) {
	var ran time.Duration
	var each []string
	for _, th := range after.ThreadsSince(before) {
		if !strings.HasPrefix(th.Name, "loop-") {
			continue
		}
		ran += time.Duration(th.CPUNs)
		each = append(each, fmt.Sprintf("%s ran %s, waited %s for a CPU, %d times on one", th.Name,
			time.Duration(th.CPUNs).Round(time.Microsecond), time.Duration(th.RunqWaitNs).Round(time.Microsecond), th.RunqWaits))
	}
	if len(each) == 0 {
		t.Fatal("no loop thread (loop-N) found")
	}
	return ran, strings.Join(each, "; ")
}

// TestEvioLostWake: evio v1.0.8's poll loses a wake that arrives between
// its handling of the queued wakes and its read of the eventfd, and the
// loop sleeps on until other traffic or its 100 ms poll timeout; the
// heartbeat, handed over the moment the last beat ran, falls in that
// window (beats 20-100 ms late on idle evio loops). With every first wake
// of a beat lost, the beats must still run, by a repeated wake. The loops
// are not locked to threads here: a locked loop parked in its wait is not
// woken for its beats at all (lag.Loop.Locked), so few wakes would be lost.
func TestEvioLostWake(t *testing.T) {
	s := startHooked(t, "evio", hooks{dropWake: func(again bool) bool { return !again }}, func(o *options) {
		o.lockThreads = false
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := stats(t, s)
		var beats int64
		for _, l := range st.Loops {
			beats += l.LagBeats
		}
		if beats >= 8 && st.BeatsRepeated >= 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d beats and %d repeated wakes after 10s with every first wake lost", beats, st.BeatsRepeated)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
