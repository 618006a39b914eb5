package conform

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fault is one way a server can get the protocol wrong.
type fault int

const (
	correct          fault = iota
	asyncBlocks            // /async waits holding its loop
	otherLoop              // continuations say they ran on another loop
	noBlockedNs            // no X-Blocked-Ns
	closeEvery             // Connection: close on every answer
	slowOffLoop            // /slow blocks without holding its loop
	offloadHoldsLoop       // /offload blocks on the loop
	closeOnError           // closes the connection after every 4xx, as Tomcat and httpd do (allowed)
	asyncAmbiguous         // /async holds its loop for half the delay: a request beside it waits half a delay, neither free nor held
	starved                // correct, on a machine that gives it no CPU: every request waits 250 ms before its handler begins, its loop free
)

// fakeServer speaks the protocol with loops: each connection belongs to a
// loop dealt round-robin, and a loop is a mutex that its connections'
// handlers hold while they run, as an event loop's one thread is held. It
// gets exactly one thing wrong: f.
func fakeServer(t *testing.T, loops int, f fault) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	locks := make([]sync.Mutex, loops)
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				go func() { <-done; nc.Close() }()
				serveFake(nc, i%loops, &locks[i%loops], loops, f)
			}()
		}
	}()
	return ln.Addr().String()
}

func serveFake(nc net.Conn, loop int, mu *sync.Mutex, loops int, f fault) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if !strings.Contains(err.Error(), "EOF") {
				fmt.Fprintf(nc, "HTTP/1.1 400 Bad Request\r\nContent-Length: 12\r\nConnection: close\r\n\r\nbad request\n")
			}
			return
		}
		h := map[string]int64{}
		status, body := 200, ""
		if f == starved {
			time.Sleep(250 * time.Millisecond) // the server's thread waits for a CPU before it reads
		}
		mu.Lock()
		h["X-Handler-Start"] = time.Now().UnixNano()
		h["X-Loop"] = int64(loop)
		cont := int64(loop)
		if f == otherLoop {
			cont = int64((loop + 1) % loops)
		}
		param := func(name string) (time.Duration, bool) {
			v := req.URL.Query().Get(name)
			if v == "" {
				return 5 * time.Millisecond, true
			}
			d, err := time.ParseDuration(v)
			return d, err == nil && d >= 0
		}
		switch path := req.URL.Path; {
		case req.Method != "GET" && req.Method != "HEAD":
			status, body = 405, "method not allowed\n"
		case path == "/fast":
			body = "fast\n"
		case path == "/slow" || path == "/offload":
			d, ok := param("block")
			if !ok {
				status, body = 400, "bad block\n"
				break
			}
			hold := (path == "/slow" && f != slowOffLoop) || (path == "/offload" && f == offloadHoldsLoop)
			if !hold {
				mu.Unlock()
			}
			t0 := time.Now()
			time.Sleep(d)
			h["X-Blocked-Ns"] = int64(time.Since(t0))
			if !hold {
				mu.Lock()
			}
			if path == "/offload" {
				h["X-Continuation-Start"], h["X-Continuation-Loop"] = time.Now().UnixNano(), cont
			}
			if f == noBlockedNs {
				delete(h, "X-Blocked-Ns")
			}
			body = path[1:] + "\n"
		case path == "/async":
			d, ok := param("delay")
			if !ok {
				status, body = 400, "bad delay\n"
				break
			}
			if f == asyncAmbiguous {
				time.Sleep(d / 2) // what a badly disturbed machine might do to a loop, or a loop half-held
				d -= d / 2
			}
			if f != asyncBlocks {
				mu.Unlock()
			}
			time.Sleep(d)
			if f != asyncBlocks {
				mu.Lock()
			}
			h["X-Continuation-Start"], h["X-Continuation-Loop"] = time.Now().UnixNano(), cont
			body = "async\n"
		default:
			status, body = 404, "not found\n"
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n", status, http.StatusText(status), len(body))
		for k, v := range h {
			sb.WriteString(k + ": " + strconv.FormatInt(v, 10) + "\r\n")
		}
		closes := f == closeEvery || (f == closeOnError && status >= 400)
		if closes {
			sb.WriteString("Connection: close\r\n")
		}
		sb.WriteString("\r\n" + body)
		_, err = nc.Write([]byte(sb.String()))
		mu.Unlock()
		if err != nil || closes {
			return
		}
	}
}
