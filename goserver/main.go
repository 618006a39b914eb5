// Command goserver serves the kit's endpoint protocol (/fast /slow /async
// /offload, docs/protocol.md) on one of Go's other common servers, so that
// what each does with a blocking call can be measured beside the kit's
// event loops and pool:
//
//   - fasthttp: valyala/fasthttp with its default worker pool (a worker
//     goroutine serves a connection; up to 256 Ki connections at once);
//   - netpoll: cloudwego/netpoll's event loops, which hand each
//     connection's requests to a goroutine from its pool (gopool).
//
// net/http, a goroutine per connection with no pool, is the pool server
// without its pool (poolserver --slots 0); gnet, evio and nbio are the loop
// server's engines. Every request runs on a goroutine of its own, which
// makes the blocking call itself and parks while /async and /offload wait
// (internal/routes).
//
//	goserver --engine fasthttp --block 5ms --addr 127.0.0.1:8083
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bystander-kit/bystander/internal/admin"
	"github.com/bystander-kit/bystander/internal/offload"
	"github.com/bystander-kit/bystander/internal/proc"
	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/internal/routes"
	"github.com/bystander-kit/bystander/internal/serverflags"
)

// Engines are the servers goserver runs.
var Engines = []string{"fasthttp", "netpoll"}

type options struct {
	serverflags.Common
	engine string
	log    io.Writer
}

// engine is one server library behind the protocol.
type engine interface {
	serve(ctx context.Context, s *server, ln net.Listener) error
}

// engineOf makes the engine --engine names (each of Engines).
var engineOf = map[string]func() engine{
	"fasthttp": func() engine { return &fasthttpEngine{} },
	"netpoll":  func() engine { return &netpollEngine{} },
}

// server is what every engine shares: the routes and the counters.
type server struct {
	opts    options
	routes  *routes.Server
	pool    *offload.Pool
	started time.Time
	byRoute [protocol.Offload + 1]atomic.Int64
	refused atomic.Int64
}

func main() { os.Exit(mainExit(os.Args[1:], os.Stdout, os.Stderr)) }

func mainExit(args []string, stdout, stderr io.Writer) int {
	return serverflags.Main(args, stderr, parseFlags, run, func(o options, addr, adminAddr net.Addr) {
		o.Announce(stdout, stderr, "goserver", "engine "+o.engine, addr, adminAddr, "goroutine", 0)
	})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{Common: serverflags.Defaults("127.0.0.1:8083", "127.0.0.1:9083"), log: stderr}
	err := serverflags.Parse("goserver", "Serves /fast /slow /async /offload (docs/protocol.md) on fasthttp or netpoll,\nevery request on a goroutine of its own.", &o.Common, args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&o.engine, "engine", "fasthttp", "the server library: "+strings.Join(Engines, " or "))
	})
	if err != nil {
		return o, err
	}
	if !slices.Contains(Engines, o.engine) {
		return o, fmt.Errorf("goserver: --engine %q: want %s", o.engine, strings.Join(Engines, " or "))
	}
	return o, o.Validate("goserver")
}

// Stats is the admin /stats document.
type Stats struct {
	Server     string             `json:"server"`
	Engine     string             `json:"engine"`
	BlockNs    int64              `json:"block_ns"`
	BlockMode  string             `json:"block_mode"`
	DBConns    int                `json:"db_conns,omitempty"` // --block-mode postgres: the database pool's connections
	Refused    int64              `json:"refused_requests"`
	Requests   []routeCount       `json:"requests_by_route"`
	Goroutines int                `json:"goroutines"`
	UptimeNs   int64              `json:"uptime_ns"`
	Process    proc.Usage         `json:"process"`
	Offload    map[string]float64 `json:"offload"`
}

type routeCount struct {
	Route    string `json:"route"`
	Requests int64  `json:"requests"`
}

func (s *server) stats() any {
	st := Stats{Server: "goserver", Engine: s.opts.engine, BlockNs: int64(s.opts.Block), BlockMode: s.opts.BlockMode.String(), DBConns: s.opts.DBConns(),
		Refused: s.refused.Load(), Goroutines: goroutines(), UptimeNs: int64(time.Since(s.started)), Process: proc.Self(),
		Offload: map[string]float64{"workers": float64(s.pool.Workers()), "queued": float64(s.pool.Queued())}}
	for _, r := range append([]protocol.Route{protocol.Unknown}, protocol.Routes...) {
		st.Requests = append(st.Requests, routeCount{r.String(), s.byRoute[r].Load()})
	}
	return st
}

// run serves until ctx is done; ready gets the bound addresses.
func run(ctx context.Context, o options, ready func(addr, admin net.Addr)) error {
	if o.log == nil {
		o.log = io.Discard
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return serverflags.ListenError("goserver", o.Addr, err)
	}
	if err := o.OpenDB(ctx, "goserver"); err != nil {
		ln.Close()
		return err
	}
	defer o.CloseDB()
	s := &server{opts: o, pool: offload.New(o.OffloadWorkers, o.OffloadQueue), started: time.Now()}
	defer s.pool.Close()
	s.routes = &routes.Server{Block: o.Block, Delay: o.Delay, MaxBlock: o.MaxBlock, Call: o.Call(), Pool: s.pool}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var adminAddr net.Addr = &net.TCPAddr{}
	adminDone := make(chan error, 1)
	if o.Admin != "" {
		aln, err := admin.Listen(o.Admin)
		if err != nil {
			ln.Close()
			return fmt.Errorf("goserver: admin listener %s: %w", o.Admin, err)
		}
		adminAddr = aln.Addr()
		go func() { adminDone <- admin.Serve(ctx, aln, s.stats) }()
	} else {
		adminDone <- nil
	}
	eng := engineOf[o.engine]()
	served := make(chan error, 1)
	go func() { served <- eng.serve(ctx, s, ln) }()
	if ready != nil {
		ready(ln.Addr(), adminAddr)
	}
	select {
	case err = <-served:
		if err == nil {
			err = fmt.Errorf("the %s engine stopped by itself", o.engine)
		}
	case <-ctx.Done():
		err = <-served
	}
	cancel()
	if err != nil {
		return fmt.Errorf("goserver: %s engine on %s: %w", o.engine, o.Addr, err)
	}
	return <-adminDone
}
