// Package serverflags holds what every server of the kit is configured with
// and checks the same way: where it listens, the blocking call, the delay,
// the offload pool and the admin listener.
package serverflags

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/block"
	"github.com/bystander-kit/bystander/internal/cli"
	"github.com/bystander-kit/bystander/internal/protocol"
	"github.com/bystander-kit/bystander/internal/ready"
)

// Common are the flags both servers share.
type Common struct {
	Addr      string
	Admin     string
	Block     protocol.Block
	Delay     time.Duration
	MaxBlock  time.Duration
	BlockMode block.Mode
	// DBURL and DBPool are the database of --block-mode postgres: where it
	// is, and how many connections the server's pool holds.
	DBURL          string
	DBPool         int
	OffloadWorkers int
	OffloadQueue   int
	// A connection is closed when it sent nothing for IdleTimeout between
	// requests, took longer than HeaderTimeout to send a request's line and
	// headers, or longer than BodyTimeout for the body it promised; 0 turns
	// one off. An answer the server owes (an /async or /offload under way)
	// is never cut short by them.
	IdleTimeout   time.Duration
	HeaderTimeout time.Duration
	BodyTimeout   time.Duration
	db            *block.DB // opened by OpenDB
	// ReadyFile, when set, gets the server's ready file (internal/ready)
	// once it accepts connections: where it listens and its PID.
	ReadyFile string
}

// Defaults returns the shared defaults with the given addresses.
func Defaults(addr, admin string) Common {
	return Common{
		Addr: addr, Admin: admin,
		Block: protocol.Block(5 * time.Millisecond), Delay: 5 * time.Millisecond, MaxBlock: protocol.DefaultMaxBlock,
		BlockMode: block.Syscall, DBPool: DefaultDBPool, OffloadWorkers: 200, OffloadQueue: 10000,
		IdleTimeout: time.Minute, HeaderTimeout: 10 * time.Second, BodyTimeout: 10 * time.Second,
	}
}

// Register adds the shared flags to fs, with c's values as defaults.
func (c *Common) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address (loopback by default)")
	fs.Var(&c.Block, "block", "how long /slow and /offload block, a `duration` (default of ?block=)")
	fs.DurationVar(&c.Delay, "delay", c.Delay, "how long /async waits before its continuation (default of ?delay=)")
	fs.DurationVar(&c.MaxBlock, "max-block", c.MaxBlock, "largest ?block= or ?delay= accepted; above it 400")
	fs.Var(&c.BlockMode, "block-mode", "how the blocking call blocks: sleep (parks the goroutine), syscall (holds the OS thread in nanosleep), spin (burns CPU), postgres (SELECT pg_sleep on a connection of the server's database pool: --db-url, --db-pool)")
	fs.StringVar(&c.DBURL, "db-url", c.DBURL, "with --block-mode postgres: the PostgreSQL the blocking call asks (postgres://USER@HOST:PORT/DB); no password in it\n(every local user reads a process's arguments): the password is PGPASSWORD's or ~/.pgpass's")
	fs.IntVar(&c.DBPool, "db-pool", c.DBPool, "with --block-mode postgres: connections in the server's database pool, all opened at start (HikariCP's default: 10)")
	fs.IntVar(&c.OffloadWorkers, "offload-workers", c.OffloadWorkers, "workers of the pool /offload runs the blocking call on")
	fs.IntVar(&c.OffloadQueue, "offload-queue", c.OffloadQueue, "jobs that may wait for an offload worker; past it /offload answers 503")
	fs.StringVar(&c.Admin, "admin", c.Admin, "admin listener for GET /stats, /metrics (Prometheus), /lag (the loop server's loop lag, streamed) and /debug/pprof (empty disables)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "close a keep-alive connection idle this long between requests (0: never)")
	fs.DurationVar(&c.HeaderTimeout, "header-timeout", c.HeaderTimeout, "close a connection whose request line and headers take longer than this to arrive (0: never)")
	fs.DurationVar(&c.BodyTimeout, "body-timeout", c.BodyTimeout, "close a connection whose promised request body takes longer than this to arrive (0: never)")
	fs.StringVar(&c.ReadyFile, "ready-file", c.ReadyFile, "once it accepts connections, write where it listens, its admin listener and PID to this file as JSON ("+ready.Schema+"; the kit waits for it)")
}

// Parse is a server's flags: the shared ones into c (Register) and its own
// (own), with --help saying what it serves (about), and no positional
// argument.
func Parse(name, about string, c *Common, args []string, stderr io.Writer, own func(*flag.FlagSet)) error {
	fs := cli.Flags(name, "Usage: "+name+" [flags]\n\n"+about)
	c.Register(fs)
	own(fs)
	return cli.ParseOnly(fs, args, stderr)
}

// Main is a server program's main: its flags parsed (parse, under
// cli.Main), it serves until interrupted (serve), says where it listens
// once it does (announce, which calls Announce) and exits 1 on an error,
// said on stderr.
func Main[O any](args []string, stderr io.Writer, parse func([]string, io.Writer) (O, error),
	serve func(ctx context.Context, o O, ready func(addr, admin net.Addr)) error, announce func(o O, addr, admin net.Addr)) int {
	return cli.Main(args, stderr, parse, func(ctx context.Context, o O) int {
		if err := serve(ctx, o, func(addr, admin net.Addr) { announce(o, addr, admin) }); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	})
}

// Announce says the server is ready: one line on stdout ("PROG: listening
// on http://ADDR (WHAT, block ..., delay ...); admin ..."), and the ready
// file when --ready-file is set. kind is loop, pool or goroutine, workers
// its loops or slots.
func (c *Common) Announce(stdout, stderr io.Writer, prog, what string, addr, admin net.Addr, kind string, workers int) {
	side := "admin off"
	if c.Admin != "" {
		side = fmt.Sprintf("admin http://%s/stats", admin)
	}
	mode := c.BlockMode.String()
	if c.BlockMode == block.Postgres {
		mode = fmt.Sprintf("postgres, %d database connections", c.DBPool)
	}
	line := fmt.Sprintf("%s: listening on http://%s (%s, block %s %s, delay %s); %s", prog, addr, what, c.Block, mode, c.Delay, side)
	fmt.Fprintln(stdout, line)
	if c.ReadyFile == "" {
		return
	}
	f := ready.File{Addr: addr.String(), Kind: kind, Workers: workers, Line: line}
	if c.Admin != "" {
		f.Admin = admin.String()
	}
	if err := ready.Write(c.ReadyFile, f); err != nil {
		fmt.Fprintf(stderr, "--ready-file: %v\n", err)
	}
}

// DefaultDBPool is --db-pool's default: HikariCP's, the pool in front of
// most Java services' databases.
const DefaultDBPool = 10

// DBOpenWait bounds how long a server waits for its database at start.
const DBOpenWait = 30 * time.Second

// OpenDB makes the server's blocking call ready: for --block-mode postgres
// it opens the database pool (every connection, within DBOpenWait), which
// Call then uses; the caller closes it with CloseDB when it stops. In the
// other modes it does nothing.
func (c *Common) OpenDB(ctx context.Context, prog string) error {
	if c.BlockMode != block.Postgres {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, DBOpenWait)
	defer cancel()
	db, err := block.OpenDB(ctx, c.DBURL, c.DBPool)
	if err != nil {
		return fmt.Errorf("%s: --db-url: %w", prog, err)
	}
	c.db = db
	return nil
}

// CloseDB closes what OpenDB opened.
func (c *Common) CloseDB() { c.db.Close() }

// Call is the server's blocking call: its mode, and its database once
// OpenDB opened it.
func (c *Common) Call() block.Call { return block.Call{Mode: c.BlockMode, DB: c.db} }

// DBConns is the database connections the blocking call can hold at once:
// the pool's size with --block-mode postgres, else 0 (no such limit).
func (c *Common) DBConns() int {
	if c.BlockMode != block.Postgres {
		return 0
	}
	return c.DBPool
}

// Bounds on what an operator may ask for: a server that takes seconds and
// gigabytes to start, or runs out of memory, is no server.
const (
	MaxMaxBlock       = time.Hour
	MaxOffloadWorkers = 10000
	MaxOffloadQueue   = 1_000_000
)

// Validate checks the shared flags; prog prefixes the error. It resolves a
// named port (127.0.0.1:http) to its number, as every engine needs.
func (c *Common) Validate(prog string) error {
	switch {
	case c.MaxBlock <= 0 || c.MaxBlock > MaxMaxBlock:
		return fmt.Errorf("%s: --max-block %s: want more than 0 and at most %s", prog, c.MaxBlock, MaxMaxBlock)
	case c.Block < 0 || c.Block.D() > c.MaxBlock:
		return fmt.Errorf("%s: --block %s: want 0 to --max-block (%s)", prog, c.Block, c.MaxBlock)
	case c.Delay < 0 || c.Delay > c.MaxBlock:
		return fmt.Errorf("%s: --delay %s: want 0 to --max-block (%s)", prog, c.Delay, c.MaxBlock)
	case c.OffloadWorkers < 1 || c.OffloadWorkers > MaxOffloadWorkers:
		return fmt.Errorf("%s: --offload-workers %d: want 1 to %d", prog, c.OffloadWorkers, MaxOffloadWorkers)
	case c.OffloadQueue < 0 || c.OffloadQueue > MaxOffloadQueue:
		return fmt.Errorf("%s: --offload-queue %d: want 0 to %d", prog, c.OffloadQueue, MaxOffloadQueue)
	case c.BlockMode == block.Postgres && c.DBURL == "":
		return fmt.Errorf("%s: --block-mode postgres needs --db-url (the PostgreSQL to ask; ./run.sh --block-mode postgres starts one of its own)", prog)
	case c.BlockMode == block.Postgres && (c.DBPool < 1 || c.DBPool > block.MaxDBConns):
		return fmt.Errorf("%s: --db-pool %d: want 1 to %d", prog, c.DBPool, block.MaxDBConns)
	}
	if c.BlockMode == block.Postgres {
		if _, err := block.DBHosts(c.DBURL); err != nil {
			return fmt.Errorf("%s: --db-url: %v", prog, err)
		}
	}
	switch {
	case c.IdleTimeout < 0 || c.IdleTimeout > time.Hour:
		return fmt.Errorf("%s: --idle-timeout %s: want 0 (never) to 1h", prog, c.IdleTimeout)
	case c.HeaderTimeout < 0 || c.HeaderTimeout > time.Hour:
		return fmt.Errorf("%s: --header-timeout %s: want 0 (never) to 1h", prog, c.HeaderTimeout)
	case c.BodyTimeout < 0 || c.BodyTimeout > time.Hour:
		return fmt.Errorf("%s: --body-timeout %s: want 0 (never) to 1h", prog, c.BodyTimeout)
	}
	var err error
	if c.Addr, err = numericPort(c.Addr); err != nil {
		return fmt.Errorf("%s: --addr %q: %v", prog, c.Addr, err)
	}
	if c.Admin != "" {
		if c.Admin, err = numericPort(c.Admin); err != nil {
			return fmt.Errorf("%s: --admin %q: %v", prog, c.Admin, err)
		}
		if c.Admin == c.Addr && !strings.HasSuffix(c.Addr, ":0") {
			return fmt.Errorf("%s: --admin %s is the same address as --addr: give the admin listener its own port (or --admin= to disable it)", prog, c.Admin)
		}
	}
	return nil
}

// numericPort checks host:port and turns a named port into its number.
func numericPort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, err
	}
	n, err := net.LookupPort("tcp", port)
	if err != nil {
		return addr, err
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// CheckFree fails with one line when addr cannot be bound.
func CheckFree(prog, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return ListenError(prog, addr, err)
	}
	return ln.Close()
}

// ListenError turns a failed listen into one line that says what to do.
func ListenError(prog, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s: %s is already in use: stop what listens there or pick another --addr", prog, addr)
	}
	return fmt.Errorf("%s: cannot listen on %s: %w", prog, addr, err)
}

// Timeout names the timeout a connection is past.
type Timeout int

// The timeouts, as Past says them.
const (
	NotPast Timeout = iota
	IdlePast
	HeaderPast
	BodyPast
)

// Past says which timeout a connection is past at now (unix ns): with an
// incomplete request buffered since partialSince, its line and headers
// (all in when headerDone) or its promised body; else idle since
// lastActive. A connection owed an answer is the caller's to spare.
func (c *Common) Past(now, lastActive, partialSince int64, headerDone bool) Timeout {
	past := func(d time.Duration, since int64) bool { return d > 0 && now-since > int64(d) }
	switch {
	case partialSince != 0 && headerDone && past(c.BodyTimeout, partialSince):
		return BodyPast
	case partialSince != 0 && !headerDone && past(c.HeaderTimeout, partialSince):
		return HeaderPast
	case partialSince == 0 && past(c.IdleTimeout, lastActive):
		return IdlePast
	}
	return NotPast
}

// SweepEvery is how often a server looks for connections past a timeout:
// a quarter of the shortest, 10 ms to 1 s; 0 when none is set.
func (c *Common) SweepEvery() time.Duration {
	var shortest time.Duration
	for _, d := range []time.Duration{c.IdleTimeout, c.HeaderTimeout, c.BodyTimeout} {
		if d > 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	if shortest == 0 {
		return 0
	}
	return min(max(shortest/4, 10*time.Millisecond), time.Second)
}
