// Command ledger is a tiny ledger service, the backend the example shops
// call: a TCP service that answers each request line after a delay, as a
// database or another team's service would. Each connection sends lines and
// reads one line back for each, in order; many connections at once.
//
//	BALANCE 42\n  ->  42 1000\n
//	anything else ->  ERR unknown command\n
//
// Usage:
//
//	ledger [--addr 127.0.0.1:7070] [--delay 5ms]
//
// It stops on SIGTERM or SIGINT.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	fs := flag.NewFlagSet("ledger", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:7070", "the loopback `HOST:PORT` to listen on")
	delay := fs.Duration("delay", 5*time.Millisecond, "how long each answer takes (0s to 10s)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 || *delay < 0 || *delay > 10*time.Second {
		fmt.Fprintln(os.Stderr, "ledger: usage: ledger [--addr HOST:PORT] [--delay D] (D from 0s to 10s)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ledger: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("ledger: listening on %s, answering after %v\n", ln.Addr(), *delay)
	var (
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
		wg    sync.WaitGroup
	)
	go func() {
		<-ctx.Done()
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			fmt.Fprintf(os.Stderr, "ledger: %v\n", err)
			os.Exit(1)
		}
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			c.Close()
			continue
		}
		conns[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			serve(c, *delay)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// serve answers c's lines in order, each after delay.
func serve(c net.Conn, delay time.Duration) {
	defer c.Close()
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		time.Sleep(delay)
		fmt.Fprintln(w, answer(strings.TrimSpace(line)))
		if r.Buffered() == 0 { // nothing else sent: answer now
			if w.Flush() != nil {
				return
			}
		}
	}
}

func answer(line string) string {
	cmd, arg, _ := strings.Cut(line, " ")
	if cmd == "BALANCE" {
		if id, err := strconv.ParseInt(arg, 10, 64); err == nil && id >= 0 {
			return fmt.Sprintf("%d 1000", id)
		}
		return "ERR bad account"
	}
	return "ERR unknown command"
}
