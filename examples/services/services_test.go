package services_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/examples/services"
)

// get sends r to s on client c and returns the answer, its body read.
func get(t *testing.T, c *http.Client, s *services.Service, r services.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Do(r.HTTP(s.URL()))
	if err != nil {
		t.Fatalf("%s %s: %v", s.Kind, r, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: %v", s.Kind, r, err)
	}
	return resp, body
}

// answers checks that r is answered status with a JSON body holding want.
func answers(t *testing.T, c *http.Client, s *services.Service, r services.Request, status int, want string) *http.Response {
	t.Helper()
	resp, body := get(t, c, s, r)
	if resp.StatusCode != status || !strings.Contains(string(body), want) || !json.Valid(body) {
		t.Errorf("%s %s: %d %q, want %d with %q, JSON", s.Kind, r, resp.StatusCode, body, status, want)
	}
	return resp
}

// chunked: the answer came with Transfer-Encoding: chunked, no length.
func chunked(resp *http.Response) bool {
	return slices.Equal(resp.TransferEncoding, []string{"chunked"}) && resp.ContentLength == -1
}

// reused says whether c sends r on a connection it kept (keep-alive).
func reused(t *testing.T, c *http.Client, s *services.Service, r services.Request) bool {
	t.Helper()
	var kept bool
	req := r.HTTP(s.URL())
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { kept = i.Reused },
	}))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", s.Kind, r, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return kept
}

// holdsListener checks that s.PID holds the socket listening on s.Addr:
// the process the kit's outside view must look at.
func holdsListener(t *testing.T, s *services.Service) {
	t.Helper()
	_, port, _ := net.SplitHostPort(s.Addr)
	p, _ := strconv.Atoi(port)
	inode := ""
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// local address (hex IP:PORT), remote, state (0A: LISTEN), ..., inode
			f := strings.Fields(line)
			if len(f) > 9 && strings.HasSuffix(f[1], fmt.Sprintf(":%04X", p)) && f[3] == "0A" {
				inode = f[9]
			}
		}
	}
	if inode == "" {
		t.Fatalf("%s: nothing listens on %s", s.Kind, s.Addr)
	}
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", s.PID))
	for _, fd := range fds {
		if l, _ := os.Readlink(fd); l == "socket:["+inode+"]" {
			return
		}
	}
	t.Errorf("%s: PID %d does not hold the socket listening on %s (inode %s)", s.Kind, s.PID, s.Addr, inode)
}

// median of d's times (sorted in place).
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// timeOf is the median time of n calls of r, one at a time, on c.
func timeOf(t *testing.T, c *http.Client, s *services.Service, r services.Request, n int) time.Duration {
	t.Helper()
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		resp, _ := get(t, c, s, r)
		d[i] = time.Since(start)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %s", s.Kind, r, resp.Status)
		}
	}
	return median(d)
}

// raw is r as HTTP/1.1 text.
func raw(r services.Request) string {
	s := r.Method + " " + r.Path + " HTTP/1.1\r\nHost: localhost\r\n"
	if r.Body != nil {
		s += "Content-Type: " + r.ContentType + "\r\nContent-Length: " + strconv.Itoa(len(r.Body)) + "\r\n"
	}
	return s + "\r\n" + string(r.Body)
}

// batch is n requests written at once on one connection (pipelined): the
// server's thread that takes them answers them one after another.
type batch struct {
	conn          net.Conn
	first, last   time.Time // when its first and last answers came
	firstAnswered chan struct{}
	done          chan error
}

func sendBatch(t *testing.T, addr string, r services.Request, n int) *batch {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b := &batch{conn: c, firstAnswered: make(chan struct{}), done: make(chan error, 1)}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, strings.Repeat(raw(r), n)); err != nil {
		t.Fatal(err)
	}
	go func() {
		br := bufio.NewReader(c)
		for i := range n {
			resp, err := http.ReadResponse(br, nil)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("%s", resp.Status)
			}
			if err != nil {
				b.done <- fmt.Errorf("answer %d of %d: %v", i+1, n, err)
				return
			}
			if i == 0 {
				b.first = time.Now()
				close(b.firstAnswered)
			}
		}
		b.last = time.Now()
		b.done <- nil
	}()
	return b
}

// fresh sends r on a new connection and returns when its answer came.
func fresh(t *testing.T, addr string, r services.Request) time.Time {
	t.Helper()
	done, err := freshErr(addr, r)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

func freshErr(addr string, r services.Request) (time.Time, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return time.Time{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, raw(r)); err != nil {
		return time.Time{}, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("%s", resp.Status)
		}
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%s on a fresh connection: %v", r, err)
	}
	return time.Now(), nil
}

// perBatch is how many blocking calls each batch holds its thread for.
const perBatch = 60

// try is one look at a fast route sent while batches of blocking calls
// hold the service's threads: when the batches were sent, when the fast
// route was sent (once each batch had its first answer: each under way on
// its thread), when it was answered, and when the batches ended.
type try struct {
	sent, fastSent, fastDone, firstEnd, lastEnd time.Time
}

// underLoad sends conns batches of s.Blocking, then s.Fast on a fresh
// connection once every batch is under way, until it has 3 tries. A try is
// left out when the fast route could not be sent within three quarters of
// the least time a batch takes (perBatch ledger delays): on a machine that
// busy it may find the threads free; unless a batch began only once
// another had ended, which is the service's doing (fewer threads than
// batches), and fails. At most 6 are made; with none, the test skips,
// saying each try's figures and load average.
func underLoad(t *testing.T, s *services.Service, conns int) []try {
	t.Helper()
	var out []try
	var busy []string // why each try left out was the machine's
	for range 6 {
		var tr try
		tr.sent = time.Now()
		bs := make([]*batch, conns)
		for i := range bs {
			bs[i] = sendBatch(t, s.Addr, s.Blocking, perBatch)
		}
		for _, b := range bs {
			select {
			case <-b.firstAnswered:
			case err := <-b.done:
				t.Fatalf("%s: %s batch: %v", s.Kind, s.Blocking, err)
			}
		}
		tr.fastSent = time.Now()
		late := tr.fastSent.Sub(tr.sent) > perBatch*s.Ledger.Delay*3/4
		if !late {
			tr.fastDone = fresh(t, s.Addr, s.Fast)
		}
		for _, b := range bs {
			if err := <-b.done; err != nil {
				t.Fatalf("%s: %s batch: %v", s.Kind, s.Blocking, err)
			}
			if tr.firstEnd.IsZero() || b.last.Before(tr.firstEnd) {
				tr.firstEnd = b.last
			}
			if b.last.After(tr.lastEnd) {
				tr.lastEnd = b.last
			}
			b.conn.Close()
		}
		if late {
			// A busy machine slows every batch alike; a service with fewer
			// threads than batches begins one only once another has ended:
			// that is the service, never left out.
			if later, ended, ok := servedApart(bs); ok {
				t.Fatalf("%s: of %d batches of %d %s, one's first answer came %v after another's last: it served them one after another, not at once (fewer threads than batches)",
					s.Kind, conns, perBatch, s.Blocking, bs[later].first.Sub(bs[ended].last).Round(time.Millisecond))
			}
			load, _ := os.ReadFile("/proc/loadavg")
			busy = append(busy, fmt.Sprintf("first answers after %v, no batch waiting for another, load average %s", tr.fastSent.Sub(tr.sent).Round(time.Millisecond),
				strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " ")))
			t.Logf("%s: a try left out: %s", s.Kind, busy[len(busy)-1])
			continue
		}
		t.Logf("%s: %s sent %v after %d batches of %d %s, answered after %v; the batches ended %v-%v after they were sent",
			s.Kind, s.Fast, tr.fastSent.Sub(tr.sent).Round(time.Millisecond), conns, perBatch, s.Blocking,
			tr.fastDone.Sub(tr.fastSent).Round(time.Millisecond), tr.firstEnd.Sub(tr.sent).Round(time.Millisecond),
			tr.lastEnd.Sub(tr.sent).Round(time.Millisecond))
		if out = append(out, tr); len(out) == 3 {
			break
		}
	}
	if len(out) == 0 {
		t.Skipf("%s: the machine was too busy for every try (%s)", s.Kind, strings.Join(busy, "; "))
	}
	return out
}

// servedApart says whether a batch's first answer came after another
// batch's last, and which: the service served them one after another.
func servedApart(bs []*batch) (later, ended int, ok bool) {
	for i, b := range bs {
		for j, o := range bs {
			if i != j && !b.first.IsZero() && !o.last.IsZero() && b.first.After(o.last) {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

// heldByLoad: on an event-loop service, with each loop holding a batch of
// blocking calls, the fast route on a fresh connection (dealt to one of
// them: netty and gnet deal connections round robin) is answered only once
// its loop's batch is done, which cannot be before perBatch ledger delays
// after the batches were sent (each call waits for the one before it).
func heldByLoad(t *testing.T, s *services.Service) {
	for _, tr := range underLoad(t, s, s.Loops) {
		if floor := tr.sent.Add(perBatch * s.Ledger.Delay); tr.fastDone.Before(floor) {
			t.Errorf("%s: %s answered %v after the batches were sent, before its loop could be free (%v): the loops were not held",
				s.Kind, s.Fast, tr.fastDone.Sub(tr.sent), floor.Sub(tr.sent))
		}
	}
}

// TestNetty: the Netty shop answers its routes as Netty does, its PID is
// the JVM holding the listener, and its /health waits while its 4 event
// loops are held by balance calls (the ledger call is made on the loop).
func TestNetty(t *testing.T) {
	s := services.Start(t, services.Netty, services.Options{})
	shop(t, s)
	heldByLoad(t, s)
}

// TestTomcat: the same shop on Tomcat answers the same routes, and its
// /health is answered while 8 balance calls hold 8 of its threads: in at
// least one try of three, before any of the 8 batches ended (which the
// Netty shop cannot do: TestNetty).
func TestTomcat(t *testing.T) {
	s := services.Start(t, services.Tomcat, services.Options{})
	shop(t, s)
	tries := underLoad(t, s, 8)
	for _, tr := range tries {
		if tr.fastDone.Before(tr.firstEnd) {
			return
		}
	}
	t.Errorf("tomcat: %s was answered after a batch of balance calls ended in every try: the pool did not forgive them", s.Fast)
}

// shop checks the Netty and Tomcat shops' routes.
func shop(t *testing.T, s *services.Service) {
	t.Helper()
	holdsListener(t, s)
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	health := answers(t, c, s, s.Fast, 200, `"status":"ok"`)
	if health.ContentLength <= 0 {
		t.Errorf("%s: /health came with no Content-Length (%v)", s.Kind, health.TransferEncoding)
	}
	if !reused(t, c, s, s.Fast) {
		t.Errorf("%s: the connection was not kept alive", s.Kind)
	}
	answers(t, c, s, s.Blocking, 200, `{"account":42,"balance":1000}`)
	order := services.Request{Method: "POST", Path: "/orders", ContentType: "application/json", Body: []byte(`{"item":"book","quantity":2}`)}
	resp := answers(t, c, s, order, 201, `"item":"book","quantity":2`)
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "/orders/") {
		t.Errorf("%s: POST /orders: Location %q", s.Kind, loc)
	} else {
		answers(t, c, s, services.Request{Method: "GET", Path: loc}, 200, `"item":"book"`)
	}
	answers(t, c, s, services.Request{Method: "POST", Path: "/orders", Body: []byte(`{"item":"book"}`)}, 400, "quantity")
	if resp := answers(t, c, s, s.Chunked, 200, `"item":"book"`); !chunked(resp) {
		t.Errorf("%s: %s: Transfer-Encoding %v, length %d; want chunked", s.Kind, s.Chunked, resp.TransferEncoding, resp.ContentLength)
	}
	if resp, _ := get(t, c, s, services.Request{Method: "GET", Path: "/nowhere"}); resp.StatusCode != 404 {
		t.Errorf("%s: GET /nowhere: %s", s.Kind, resp.Status)
	}
	t.Logf("%s: %s takes %v at 1 caller (median of 20; the ledger %v), %s %v",
		s.Kind, s.Blocking, timeOf(t, c, s, s.Blocking, 20), s.Ledger.Delay, s.Fast, timeOf(t, c, s, s.Fast, 20))
}

// TestGnet: the gnet service answers its routes and serves pprof (an
// execution trace too) on its second listener, and its /health waits
// while its 4 loops are held by /report calls.
func TestGnet(t *testing.T) {
	s := services.Start(t, services.Gnet, services.Options{})
	holdsListener(t, s)
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	if resp := answers(t, c, s, s.Fast, 200, `"status":"ok"`); resp.ContentLength <= 0 {
		t.Errorf("gnet: /health came with no Content-Length")
	}
	if !reused(t, c, s, s.Fast) {
		t.Errorf("gnet: the connection was not kept alive")
	}
	answers(t, c, s, s.Blocking, 200, `{"account":42,"balance":1000,`)
	answers(t, c, s, services.Request{Method: "GET", Path: "/items"}, 200, `"name":"item 1"`)
	answers(t, c, s, services.Request{Method: "GET", Path: "/nowhere"}, 404, "not found")
	answers(t, c, s, services.Request{Method: "POST", Path: "/health", Body: []byte("{}")}, 405, "not allowed")
	resp, err := c.Get(s.PProf + "/debug/pprof/trace?seconds=0.2")
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 16)
	_, err = io.ReadFull(resp.Body, head)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || !bytes.HasPrefix(head, []byte("go 1.")) {
		t.Errorf("gnet: pprof's trace: %s %q %v", resp.Status, head, err)
	}
	t.Logf("gnet: %s takes %v at 1 caller (median of 20; the ledger %v), %s %v",
		s.Blocking, timeOf(t, c, s, s.Blocking, 20), s.Ledger.Delay, s.Fast, timeOf(t, c, s, s.Fast, 20))
	heldByLoad(t, s)
}

// ticks is the CPU time so far, in clock ticks, of a process
// (/proc/PID/stat) or one of its threads (/proc/PID/task/TID/stat).
func ticks(t *testing.T, stat string) int64 {
	t.Helper()
	b, err := os.ReadFile(stat)
	if err != nil {
		t.Skipf("no %s: %v", stat, err)
	}
	// after the command's ")": state is field 3, utime 14 and stime 15
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// mainThread is a process's main thread's stat file.
func mainThread(pid int) string { return fmt.Sprintf("/proc/%d/task/%d/stat", pid, pid) }

// TestNode: the Node service answers its routes (chunked, as Node writes
// a head before its body), and a /health sent while a /login hashes its
// password is answered only once the hash is done: node's one thread is
// held.
func TestNode(t *testing.T) {
	// 40 times the default's iterations: a sign-in of 100 ms of CPU or more.
	s := services.Start(t, services.Node, services.Options{Iterations: 40 * services.DefaultIterations})
	holdsListener(t, s)
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	if resp := answers(t, c, s, s.Fast, 200, `"status":"ok"`); !chunked(resp) {
		t.Errorf("node: /health: Transfer-Encoding %v; want chunked", resp.TransferEncoding)
	}
	if !reused(t, c, s, s.Fast) {
		t.Errorf("node: the connection was not kept alive")
	}
	answers(t, c, s, s.Blocking, 200, `"token":"`)
	answers(t, c, s, services.Request{Method: "POST", Path: "/login", Body: []byte(`{"user":"alice","password":"nope"}`)}, 401, "bad user")
	answers(t, c, s, services.Request{Method: "POST", Path: "/login", Body: []byte(`{"user":`)}, 400, "not JSON")
	answers(t, c, s, s.Chunked, 200, `"name":"item 1"`)
	answers(t, c, s, services.Request{Method: "GET", Path: "/nowhere"}, 404, "not found")

	// A sign-in under way is node's main thread on its CPU (idle, it uses
	// none), so its CPU time says how far the hash has gone, whatever the
	// order in which this process sees the two answers. The /health goes
	// once that thread has spent 2 clock ticks (20 ms) since the sign-in
	// was sent; when it is answered, the hash must be done: what the
	// thread spends after that is the login's answer, next to nothing.
	main := mainThread(s.PID)
	for range 3 {
		before := ticks(t, main)
		var loginErr error
		login := make(chan struct{})
		go func() { _, loginErr = freshErr(s.Addr, s.Blocking); close(login) }()
		held := true
		for held && ticks(t, main) < before+2 {
			select {
			case <-login:
				held = false
			case <-time.After(time.Millisecond):
			}
		}
		if !held {
			if loginErr != nil {
				t.Fatal(loginErr)
			}
			t.Errorf("node: a sign-in was answered before node's main thread spent 20 ms of CPU: the hash is not on its loop")
			continue
		}
		sent := time.Now()
		fresh(t, s.Addr, s.Fast)
		waited := time.Since(sent)
		atHealth := ticks(t, main)
		<-login
		if loginErr != nil {
			t.Fatal(loginErr)
		}
		total, after := ticks(t, main)-before, ticks(t, main)-atHealth
		t.Logf("node: /health sent during a /login, answered after %v; the sign-in took %d clock ticks of node's main thread, %d of them after the /health was answered",
			waited.Round(time.Millisecond), total, after)
		if after*3 > total {
			t.Errorf("node: %d of a sign-in's %d clock ticks were spent after a /health sent during it was answered: the loop was not held", after, total)
		}
	}
}

// TestNodeSignInOnItsLoop: at the default iterations, a sign-in's CPU is
// spent on node's main thread (its event loop), not on a pool's: most of
// the process's CPU over 50 sign-ins is that thread's.
func TestNodeSignInOnItsLoop(t *testing.T) {
	s := services.Start(t, services.Node, services.Options{})
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	proc := fmt.Sprintf("/proc/%d/stat", s.PID)
	main0, all0 := ticks(t, mainThread(s.PID)), ticks(t, proc)
	d := timeOf(t, c, s, s.Blocking, 50)
	main, all := ticks(t, mainThread(s.PID))-main0, ticks(t, proc)-all0
	t.Logf("node: %s takes %v at 1 caller (median of 50, %d iterations); over the 50, node's main thread used %d clock ticks of the process's %d",
		s.Blocking, d, services.DefaultIterations, main, all)
	// CPU time is charged only while a thread runs: a busy machine makes
	// the sign-ins longer, never cheaper. 50 of them using under 5 ticks
	// (under 100 ns an iteration) is a sign-in that does not hash as it
	// should, not a machine too busy to judge.
	if all < 5 {
		t.Fatalf("node: 50 sign-ins used %d clock ticks, under 50 ms of CPU: the sign-in does not do its %d iterations", all, services.DefaultIterations)
	}
	if main*10 < all*6 {
		t.Errorf("node: its main thread used %d of the process's %d clock ticks over 50 sign-ins: the hash is not on the loop", main, all)
	}
}

// TestLedger: the ledger answers each line after its delay, many
// connections at once: 20 connections' calls end together, in far less
// than 20 delays.
func TestLedger(t *testing.T) {
	const delay = 100 * time.Millisecond
	l := services.StartLedger(t, delay)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			c, err := net.Dial("tcp", l.Addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "BALANCE %d\nNOPE\n", i)
			r := bufio.NewReader(c)
			for _, want := range []string{fmt.Sprintf("%d 1000\n", i), "ERR unknown command\n"} {
				if got, err := r.ReadString('\n'); got != want || err != nil {
					t.Errorf("ledger: %q %v, want %q", got, err, want)
				}
			}
		})
	}
	wg.Wait()
	if took := time.Since(start); took < 2*delay || took > 10*delay {
		t.Errorf("ledger: 20 connections' 2 calls took %v; want 2 delays (%v) or a little more, not one after another", took, 2*delay)
	}
}

// TestFlag: a request without a body is 'METHOD PATH'; with one, a
// targets file in vegeta's format naming its body's file.
func TestFlag(t *testing.T) {
	dir := t.TempDir()
	if f, err := (services.Request{Method: "GET", Path: "/health"}).Flag(dir); f != "GET /health" || err != nil {
		t.Errorf("%q %v", f, err)
	}
	r := services.Request{Method: "POST", Path: "/login", ContentType: "application/json", Body: []byte(`{"user":"alice"}`)}
	f, err := r.Flag(dir)
	if err != nil || !strings.HasPrefix(f, "@") {
		t.Fatalf("%q %v", f, err)
	}
	b, _ := os.ReadFile(f[1:])
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || lines[0] != "POST /login" || lines[1] != "Content-Type: application/json" || !strings.HasPrefix(lines[2], "@/") {
		t.Fatalf("targets file %q", b)
	}
	if body, err := os.ReadFile(lines[2][1:]); string(body) != `{"user":"alice"}` || err != nil {
		t.Errorf("body %q %v", body, err)
	}
}

// TestTarget: a service as the kit's --target takes it.
func TestTarget(t *testing.T) {
	for s, want := range map[*services.Service]string{
		{Kind: services.Netty, Addr: "127.0.0.1:8080", PID: 42}:                               "netty=http://127.0.0.1:8080,pid=42",
		{Kind: services.Gnet, Addr: "127.0.0.1:8090", PID: 7, PProf: "http://127.0.0.1:6060"}: "gnet=http://127.0.0.1:8090,pid=7,pprof=http://127.0.0.1:6060",
	} {
		if got := s.Target(); got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

// TestServedApart: batches served at once overlap, whatever their
// lateness; a batch whose first answer came after another's last was
// served after it (a pool of 4 threads given 8 batches: the Netty shop's 4
// loops given 8 were all "too busy to judge" before).
func TestServedApart(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	together := []*batch{{first: at(400), last: at(700)}, {first: at(450), last: at(760)}}
	if _, _, ok := servedApart(together); ok {
		t.Error("two batches under way together, both late, said served apart")
	}
	apart := []*batch{{first: at(5), last: at(305)}, {first: at(310), last: at(610)}}
	if later, ended, ok := servedApart(apart); !ok || later != 1 || ended != 0 {
		t.Errorf("a batch begun 5 ms after the other ended: %d after %d, %v", later, ended, ok)
	}
}
