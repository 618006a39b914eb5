// Command gnetshop is the shop's reporting service: a small HTTP/1.1 server
// on gnet's event loops, with Go's profiler (net/http/pprof) on a second
// listener of its own.
//
//	GET /health              {"status":"ok"}
//	GET /report?account=ID   the account's report, its balance asked of the ledger service
//	GET /items               the catalogue
//
// Usage:
//
//	gnetshop [--addr 127.0.0.1:8090] [--ledger 127.0.0.1:7070] [--loops 4] [--pprof 127.0.0.1:6060]
//
// It stops on SIGTERM or SIGINT.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // the profiler, on --pprof
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
)

func main() {
	fs := flag.NewFlagSet("gnetshop", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "the `HOST:PORT` to serve HTTP on")
	ledgerAddr := fs.String("ledger", "127.0.0.1:7070", "the ledger service's `HOST:PORT`")
	loops := fs.Int("loops", 4, "gnet's event loops (1 to 256)")
	pprofAddr := fs.String("pprof", "", "the `HOST:PORT` to serve /debug/pprof/ on (none when empty)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 || *loops < 1 || *loops > 256 {
		fmt.Fprintln(os.Stderr, "gnetshop: usage: gnetshop [--addr HOST:PORT] [--ledger HOST:PORT] [--loops N] [--pprof HOST:PORT] (N from 1 to 256)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	var prof *http.Server
	if *pprofAddr != "" {
		ln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gnetshop: pprof: %v\n", err)
			os.Exit(1)
		}
		prof = &http.Server{Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = prof.Serve(ln) }()
		fmt.Printf("gnetshop: profiler on http://%s/debug/pprof/\n", ln.Addr())
	}

	s := &shop{ledger: &ledgerClient{addr: *ledgerAddr}, booted: make(chan struct{})}
	go func() {
		<-ctx.Done()
		select {
		case <-s.booted:
		case <-time.After(5 * time.Second):
			os.Exit(1)
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.eng.Stop(sctx)
	}()
	fmt.Printf("gnetshop: serving http://%s on %d event loops, pid %d, the ledger at %s\n", *addr, *loops, os.Getpid(), *ledgerAddr)
	err := gnet.Run(s, "tcp://"+*addr, gnet.WithMulticore(true), gnet.WithNumEventLoop(*loops))
	if prof != nil {
		_ = prof.Close()
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "gnetshop: %v\n", err)
		os.Exit(1)
	}
}

// shop serves the routes on gnet's loops.
type shop struct {
	gnet.BuiltinEventEngine
	eng    gnet.Engine
	booted chan struct{}
	ledger *ledgerClient
}

func (s *shop) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	close(s.booted)
	return gnet.None
}

// maxRequest bounds a request, head and body.
const maxRequest = 1 << 20

// OnTraffic answers every whole request received, in order, each as soon
// as it is served.
func (s *shop) OnTraffic(c gnet.Conn) gnet.Action {
	for {
		buf, _ := c.Peek(-1)
		if len(buf) == 0 {
			return gnet.None
		}
		req, n, err := parse(buf)
		if err == errIncomplete {
			if len(buf) <= maxRequest {
				return gnet.None
			}
			err = errors.New("request too large")
		}
		if err != nil {
			_, _ = c.Write(respond(nil, 400, fmt.Sprintf(`{"error":%q}`, err.Error()), false))
			return gnet.Close
		}
		_, _ = c.Discard(n)
		_, _ = c.Write(s.serve(nil, req))
		if !req.keepAlive {
			return gnet.Close
		}
	}
}

func (s *shop) serve(out []byte, req request) []byte {
	path, query, _ := strings.Cut(req.target, "?")
	switch {
	case path == "/health" && req.method == "GET":
		return respond(out, 200, `{"status":"ok"}`, req.keepAlive)
	case path == "/report" && req.method == "GET":
		account := int64(1)
		for _, kv := range strings.Split(query, "&") {
			if v, ok := strings.CutPrefix(kv, "account="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return respond(out, 400, `{"error":"account is not a number"}`, req.keepAlive)
				}
				account = n
			}
		}
		balance, err := s.ledger.balance(account)
		if err != nil {
			return respond(out, 502, fmt.Sprintf(`{"error":%q}`, "the ledger: "+err.Error()), req.keepAlive)
		}
		return respond(out, 200, fmt.Sprintf(`{"account":%d,"balance":%d,"generated":%q}`,
			account, balance, time.Now().UTC().Format(time.RFC3339)), req.keepAlive)
	case path == "/items" && req.method == "GET":
		return respond(out, 200, items, req.keepAlive)
	case path == "/health" || path == "/report" || path == "/items":
		return respond(out, 405, `{"error":"method not allowed"}`, req.keepAlive)
	}
	return respond(out, 404, `{"error":"not found"}`, req.keepAlive)
}

var items = func() string {
	var b strings.Builder
	b.WriteString("[")
	for id := 1; id <= 50; id++ {
		if id > 1 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"item %d","price":%d}`, id, id, 100+id*37%900)
	}
	b.WriteString("]")
	return b.String()
}()

type request struct {
	method, target string
	keepAlive      bool
}

var errIncomplete = errors.New("incomplete request")

// parse reads one request from the start of b: the request, and how many
// bytes it took (its body is read past: no route takes one).
func parse(b []byte) (request, int, error) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		if len(b) > 64<<10 {
			return request{}, 0, errors.New("the request's head is too large")
		}
		return request{}, 0, errIncomplete
	}
	lines := strings.Split(string(b[:end]), "\r\n")
	parts := strings.Split(lines[0], " ")
	if len(parts) != 3 || parts[0] == "" || !strings.HasPrefix(parts[1], "/") {
		return request{}, 0, errors.New("bad request line")
	}
	var req request
	req.method, req.target = parts[0], parts[1]
	switch parts[2] {
	case "HTTP/1.1":
		req.keepAlive = true
	case "HTTP/1.0":
	default:
		return request{}, 0, errors.New("not HTTP/1.0 or HTTP/1.1")
	}
	length := 0
	for _, line := range lines[1:] {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return request{}, 0, errors.New("bad header line")
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(name) {
		case "content-length":
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 || n > maxRequest {
				return request{}, 0, errors.New("bad Content-Length")
			}
			length = n
		case "transfer-encoding":
			return request{}, 0, errors.New("chunked requests are not taken")
		case "connection":
			switch strings.ToLower(value) {
			case "close":
				req.keepAlive = false
			case "keep-alive":
				req.keepAlive = true
			}
		}
	}
	n := end + 4 + length
	if len(b) < n {
		return request{}, 0, errIncomplete
	}
	return req, n, nil
}

var reasons = map[int]string{200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 502: "Bad Gateway"}

func respond(out []byte, status int, body string, keepAlive bool) []byte {
	out = fmt.Appendf(out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", status, reasons[status], len(body))
	if !keepAlive {
		out = append(out, "Connection: close\r\n"...)
	}
	out = append(out, "\r\n"...)
	return append(out, body...)
}

// ledgerClient asks the ledger service for balances ("BALANCE 42" ->
// "42 1000"), over connections it keeps for the next call.
type ledgerClient struct {
	addr string
	mu   sync.Mutex
	idle []*ledgerConn
}

type ledgerConn struct {
	net.Conn
	r *bufio.Reader
}

func (l *ledgerClient) balance(account int64) (int64, error) {
	c, err := l.get()
	if err != nil {
		return 0, err
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "BALANCE %d\n", account); err != nil {
		c.Close()
		return 0, err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.Close()
		return 0, err
	}
	var id, balance int64
	if _, err := fmt.Sscanf(line, "%d %d\n", &id, &balance); err != nil || id != account {
		c.Close()
		return 0, fmt.Errorf("the ledger answered %q", strings.TrimSpace(line))
	}
	l.put(c)
	return balance, nil
}

func (l *ledgerClient) get() (*ledgerConn, error) {
	l.mu.Lock()
	if n := len(l.idle); n > 0 {
		c := l.idle[n-1]
		l.idle = l.idle[:n-1]
		l.mu.Unlock()
		return c, nil
	}
	l.mu.Unlock()
	c, err := net.DialTimeout("tcp", l.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &ledgerConn{Conn: c, r: bufio.NewReader(c)}, nil
}

func (l *ledgerClient) put(c *ledgerConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.idle) >= 64 {
		c.Close()
		return
	}
	l.idle = append(l.idle, c)
}
