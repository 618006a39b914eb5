// Command goexample is a net/http server that speaks the kit's endpoint
// protocol (docs/protocol.md) with the standard library only: the shape of
// most Go services, to copy into your own server's mux and measure beside
// the kit's.
//
//	go run ./examples/go --addr 127.0.0.1:8093
//	bin/prober --mode check --target http://127.0.0.1:8093
//	./run.sh --target mine=http://127.0.0.1:8093,pid=PID,offload=32 --servers=loop
//
// net/http gives each connection a goroutine and has no pool: a blocking
// call holds one goroutine (and here, in nanosleep, one OS thread) and no
// one else. It has no event loops, so it sends no X-Loop.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// maxBlock is the largest ?block= or ?delay= taken; above it, 400.
const maxBlock = 10 * time.Second

func main() {
	fs := flag.NewFlagSet("goexample", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8093", "where to listen (port 0 picks a free one)")
	block := fs.Duration("block", 5*time.Millisecond, "the blocking call of /slow and /offload unless ?block= says")
	delay := fs.Duration("delay", 5*time.Millisecond, "the /async delay unless ?delay= says")
	workers := fs.Int("offload-workers", 32, "goroutines /offload blocks on (its bounded pool)")
	readyFile := fs.String("ready-file", "", "once it listens, write where and its PID to this file as JSON (the kit's ready file)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *block < 0 || *block > maxBlock || *delay < 0 || *delay > maxBlock || *workers < 1 || *workers > 10000 || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "goexample: --block and --delay from 0 to 10s, --offload-workers from 1 to 10000, and no arguments")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "goexample: %v\n", err)
		os.Exit(2)
	}
	srv := &http.Server{Handler: handler(*block, *delay, *workers), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 8 << 10}
	line := fmt.Sprintf("goexample: listening on %s", ln.Addr())
	fmt.Println(line)
	if *readyFile != "" {
		if err := writeReady(*readyFile, ln.Addr().String(), line); err != nil {
			fmt.Fprintf(os.Stderr, "goexample: --ready-file: %v\n", err)
			os.Exit(1)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "goexample: %v\n", err)
		os.Exit(1)
	}
}

// handler serves the four endpoints of the protocol.
func handler(block, delay time.Duration, workers int) http.Handler {
	pool := make(chan struct{}, workers) // /offload's bounded pool
	mux := http.NewServeMux()
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) {
		start(w)
		answer(w, r, "fast\n")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		start(w)
		d, ok := duration(w, r, "block", block)
		if !ok {
			return
		}
		w.Header().Set("X-Blocked-Ns", strconv.FormatInt(int64(blockFor(d)), 10)) // the call, on this goroutine
		answer(w, r, "slow\n")
	})
	mux.HandleFunc("/async", func(w http.ResponseWriter, r *http.Request) {
		start(w)
		d, ok := duration(w, r, "delay", delay)
		if !ok {
			return
		}
		<-time.After(d) // waiting, not blocking: the goroutine parks, no thread is held
		w.Header().Set("X-Continuation-Start", strconv.FormatInt(time.Now().UnixNano(), 10))
		answer(w, r, "async\n")
	})
	mux.HandleFunc("/offload", func(w http.ResponseWriter, r *http.Request) {
		start(w)
		d, ok := duration(w, r, "block", block)
		if !ok {
			return
		}
		done := make(chan time.Duration, 1)
		pool <- struct{}{} // waits for a worker of the pool
		go func() {
			defer func() { <-pool }()
			done <- blockFor(d)
		}()
		blocked := <-done
		w.Header().Set("X-Continuation-Start", strconv.FormatInt(time.Now().UnixNano(), 10))
		w.Header().Set("X-Blocked-Ns", strconv.FormatInt(int64(blocked), 10))
		answer(w, r, "offload\n")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			start(w)
			http.Error(w, "method not allowed: GET or HEAD", http.StatusMethodNotAllowed)
			return
		}
		h, pattern := mux.Handler(r)
		if pattern == "" || pattern != r.URL.Path {
			start(w)
			http.Error(w, "not found: /fast, /slow, /async or /offload", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// start says when the handler first ran: the kit times every wait from it.
func start(w http.ResponseWriter) {
	w.Header().Set("X-Handler-Start", strconv.FormatInt(time.Now().UnixNano(), 10))
}

// duration is ?name= as a Go duration, or def; a bad one is answered 400.
func duration(w http.ResponseWriter, r *http.Request, name string, def time.Duration) (time.Duration, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > maxBlock {
		http.Error(w, fmt.Sprintf("bad %s %q: want a Go duration from 0 to %s", name, v, maxBlock), http.StatusBadRequest)
		return 0, false
	}
	return d, true
}

// blockFor is the blocking call: nanosleep holds the OS thread, as a JDBC
// read or a cgo call would, and says how long it really took.
func blockFor(d time.Duration) time.Duration {
	t0 := time.Now()
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
	return time.Since(t0)
}

// writeReady writes the kit's ready file (bystander.ready/v1) whole,
// through a rename: net/http has a goroutine per connection, no pool.
func writeReady(path, addr, line string) error {
	b, err := json.Marshal(map[string]any{"schema": "bystander.ready/v1", "addr": addr, "pid": os.Getpid(), "kind": "goroutine", "line": line})
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func answer(w http.ResponseWriter, r *http.Request, body string) {
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(body))
	}
}
