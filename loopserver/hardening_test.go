package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/evio"

	"github.com/bystander-kit/bystander/internal/wiretest"
)

// startLimited starts the loop server with both descriptor limits at
// nofile (as `prlimit --nofile=N:N` would), so Go cannot raise them.
func startLimited(t *testing.T, nofile int, args ...string) (string, *exec.Cmd) {
	t.Helper()
	addr := wiretest.FreeAddr(t)
	bin := wiretest.Build(t, ".")
	script := "ulimit -n " + strconv.Itoa(nofile) + ` && exec "$0" "$@"`
	cmd := wiretest.Start(t, "/bin/sh", append([]string{"-c", script, bin, "--addr", addr, "--admin", ""}, args...)...)
	return addr, cmd
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
// descriptors. The server keeps serving the connections it holds, turns
// away the ones past its cap instead of dying (gnet's engine stopped on
// EMFILE and the process exited with status 0), and accepts again once
// connections close. Both engines.
func TestOutOfDescriptors(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, cmd := startLimited(t, 1024, "--engine", eng)
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for range 1100 {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					t.Fatalf("dial %d: %v", len(conns), err)
				}
				conns = append(conns, c)
			}
			// The last connection is past the cap: once the server has
			// come to it (evio accepts slowly), it is closed unanswered.
			last := conns[len(conns)-1]
			_, _ = last.Write([]byte("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n"))
			_ = last.SetReadDeadline(time.Now().Add(30 * time.Second))
			if n, err := last.Read(make([]byte, 512)); err == nil {
				t.Fatalf("connection 1,100 of a 1,024-descriptor server was answered (%d bytes)", n)
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("connection 1,100 was neither answered nor closed within 30 s")
			}
			if cmd.ProcessState != nil {
				t.Fatalf("the server exited: %v", cmd.ProcessState)
			}
			// The first connections were accepted and are served.
			for i := range 3 {
				if _, err := conns[i].Write([]byte("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")); err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 512)
				_ = conns[i].SetReadDeadline(time.Now().Add(5 * time.Second))
				n, err := conns[i].Read(buf)
				if err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
					t.Fatalf("connection %d, held before the limit: %q %v", i, buf[:n], err)
				}
			}
			// Close them all: a new connection is served again.
			for _, c := range conns {
				c.Close()
			}
			conns = nil
			deadline := time.Now().Add(10 * time.Second)
			for {
				c := wiretest.Dial(t, addr)
				a, err := c.Get("/fast")
				if err == nil && a.Status == 200 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no new connection served after the others closed: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if cmd.ProcessState != nil {
				t.Fatalf("the server exited: %v", cmd.ProcessState)
			}
		})
	}
}

// peakRSS is a process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestClientNeverReads: a client pipelines /fast as fast as it can and
// never reads an answer. The server must not buffer its answers without
// bound (gnet grew by about 4 MB per MiB sent): its peak memory stays
// within 64 MB of what it was, and it goes on serving others.
func TestClientNeverReads(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, cmd := wiretest.StartServer(t, ".", "--engine", eng)
			wiretest.Dial(t, addr).MustGet("/fast")
			before := peakRSS(t, cmd.Process.Pid)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			chunk := []byte(strings.Repeat("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n", 2048)) // 64 KiB
			var sent int64
			stop := time.Now().Add(8 * time.Second)
			for sent < 300<<20 && time.Now().Before(stop) {
				_ = c.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
				n, err := c.Write(chunk)
				sent += int64(n)
				if err != nil {
					break // the server stopped reading, or closed the connection
				}
			}
			after := peakRSS(t, cmd.Process.Pid)
			t.Logf("sent %d MiB without reading; peak RSS %d MB -> %d MB", sent>>20, before>>20, after>>20)
			if after-before > 64<<20 {
				t.Fatalf("peak RSS grew by %d MB while a client sent %d MiB and read nothing", (after-before)>>20, sent>>20)
			}
			wiretest.Dial(t, addr).MustGet("/fast")
		})
	}
}

// TestBigPipelineAnswered: a client that pipelines far more answers than
// the server keeps waiting for it, then reads, gets every one, in order.
func TestBigPipelineAnswered(t *testing.T) {
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			addr, _ := wiretest.StartServer(t, ".", "--engine", eng)
			c := wiretest.Dial(t, addr)
			const n = 20000 // about 3 MB of answers, 12 times the bound on waiting output
			req := strings.Repeat("GET /fast HTTP/1.1\r\nHost: a\r\n\r\n", n)
			errc := make(chan error, 1)
			go func() {
				_, err := c.C.Write([]byte(req))
				errc <- err
			}()
			time.Sleep(300 * time.Millisecond) // the answers pile up unread
			start := time.Now()
			for i := range n {
				a, err := c.Read("GET", start)
				if err != nil || a.Status != 200 {
					t.Fatalf("answer %d of %d: %v %v", i+1, n, a.Status, err)
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
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

// TestEvioUnsentField: the evio connection still keeps its unsent output
// and its descriptor where evioUnsent and dupFor read them.
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
// an answer under way is not cut short. Both engines.
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
// answer it asked for, as HTTP/1.1 allows; both engines closed the
// connection on the end of input and the answer was lost.
func TestHalfClosed(t *testing.T) {
	for _, eng := range engines {
		for _, target := range []string{"/async?delay=100ms", "/offload?block=100ms", "/fast"} {
			t.Run(eng+target, func(t *testing.T) {
				addr, _ := wiretest.StartServer(t, ".", "--engine", eng)
				for range 20 {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := c.Write([]byte("GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n")); err != nil {
						t.Fatal(err)
					}
					_ = c.(*net.TCPConn).CloseWrite()
					_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
					b, err := io.ReadAll(c)
					c.Close()
					if !strings.HasPrefix(string(b), "HTTP/1.1 200") {
						t.Fatalf("after the client's half-close: %q %v", b, err)
					}
				}
			})
		}
	}
}

// TestEvioLostWake: evio v1.0.8's poll loses a wake that arrives between
// its handling of the queued wakes and its read of the eventfd, and the
// loop sleeps on until other traffic or its 100 ms poll timeout; the
// heartbeat, handed over the moment the last beat ran, falls in that
// window (beats 20-100 ms late on idle evio loops). With every first wake
// of a beat lost, the beats must still run, by a repeated wake.
func TestEvioLostWake(t *testing.T) {
	s := start(t, "evio", func(o *options) { o.dropWake = func(again bool) bool { return !again } })
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
