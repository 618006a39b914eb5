package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/examples/java"
	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/results"
)

// kitServer is a server the kit starts itself, named in --servers.
type kitServer struct {
	name, about string
	// jvm: a Java server, built from examples/java and warmed up after
	// every start.
	jvm bool
}

// kitServers are --servers' names, in the order a plan measures them.
var kitServers = []kitServer{
	{name: "loop", about: "the kit's event-loop server, one per --engines (gnet, evio, nbio)"},
	{name: "pool", about: "the kit's pool of --slots worker slots"},
	{name: "netty", about: "the published experiment's Netty 4.1 server: --loops NioEventLoopGroup loops, Thread.sleep on the loop", jvm: true},
	{name: "tomcat", about: "the published experiment's embedded Tomcat 10.1: --slots request threads", jvm: true},
	{name: "nethttp", about: "Go's net/http as it comes: a goroutine per connection, no pool (the pool server with --slots 0)"},
	{name: "fasthttp", about: "valyala/fasthttp with its default worker pool (a worker goroutine per connection, up to 256 Ki)"},
	{name: "netpoll", about: "cloudwego/netpoll: event loops that hand each connection's requests to a goroutine of its pool"},
}

// LoopEngines are the loop server's engines, --engines' names.
var LoopEngines = []string{"gnet", "evio", "nbio"}

func kitServerNames() []string {
	var out []string
	for _, k := range kitServers {
		out = append(out, k.name)
	}
	return out
}

// kitNames are the names the kit's servers take in a run: a target may
// not take one.
var kitNames = []string{"loop-gnet", "loop-evio", "loop-nbio", "pool", "netty", "tomcat", "nethttp", "fasthttp", "netpoll"}

// jvmServer says whether the server is one of the Java servers.
func jvmServer(s Server) bool { return s.Engine == "netty" || s.Engine == "tomcat" }

// usesJava says whether the run starts a Java server.
func (o Options) usesJava() bool {
	for _, s := range o.Servers {
		if s == "netty" || s == "tomcat" {
			return true
		}
	}
	return false
}

// JVMWarmup is how long a Java server is loaded on every endpoint after it
// starts and before it is measured (--jvm-warmup): a JVM interprets code at
// first and compiles what runs hot (its JIT), so its first seconds are
// several times slower. Measured here (docs/measurements.md): Netty's /fast
// went from 14k to 58k req/s over its first 4 s of load, Tomcat's from 12k
// to 44k.
const JVMWarmup = 4 * time.Second

// buildJava builds the Java servers into the kit's bin directory when the
// run starts one: once per change of their sources.
func buildJava(ctx context.Context, o Options, w func(string)) error {
	if !o.usesJava() {
		return nil
	}
	if m := java.Missing(); m != "" {
		return fmt.Errorf("run.sh: --servers %s needs Java and the published experiment's libraries from Debian's packages; %s", strings.Join(o.Servers, ","), m)
	}
	if m := java.MissingDB(); m != "" && o.BlockMode == "postgres" {
		return fmt.Errorf("run.sh: --block-mode postgres with --servers %s: the Java servers call the database through HikariCP and the PostgreSQL JDBC driver; %s", strings.Join(o.Servers, ","), m)
	}
	dir := filepath.Join(o.Bin, "java")
	if !java.UpToDate(dir) {
		w("building the Java servers (examples/java/build.sh: javac over Debian's jars, once per change of their sources) ...")
	}
	if _, err := java.Build(ctx, dir); err != nil {
		return fmt.Errorf("run.sh: %w", err)
	}
	return nil
}

// serverCommand is the program and arguments that start s on free
// loopback ports, told the run's block and delay as its defaults (every
// request also asks for them), writing readyFile once it listens.
func serverCommand(s Server, block results.Block, o Options, readyFile string) (string, []string) {
	common := []string{"--addr", "127.0.0.1:0", "--ready-file", readyFile, "--block", block.String(),
		"--delay", o.Delay.String(), "--offload-workers", strconv.Itoa(o.Slots)}
	goServer := append(common, "--admin", "127.0.0.1:0", "--block-mode", o.BlockMode)
	if o.BlockMode == "postgres" {
		goServer = append(goServer, "--db-url", o.dbURL, "--db-pool", strconv.Itoa(o.DBPool))
	}
	if o.BlockMode == "postgres" && (s.Engine == "netty" || s.Engine == "tomcat") {
		jdbc, _ := java.JDBCURL(o.dbURL) // checked when the run got its database
		common = append(common, "--db-url", jdbc, "--db-pool", strconv.Itoa(o.DBPool))
	}
	switch s.Engine {
	case "netty":
		return filepath.Join("java", java.Launchers["netty"]), append(common, "--loops", strconv.Itoa(s.Workers))
	case "tomcat":
		return filepath.Join("java", java.Launchers["tomcat"]), append(common, "--threads", strconv.Itoa(s.Workers))
	case "gnet", "evio", "nbio":
		return "loopserver", append(goServer, "--engine", s.Engine, "--loops", strconv.Itoa(s.Workers))
	case "nethttp":
		return "poolserver", append(goServer, "--slots", "0")
	case "fasthttp", "netpoll":
		return "goserver", append(goServer, "--engine", s.Engine)
	}
	return "poolserver", append(goServer, "--slots", strconv.Itoa(s.Workers))
}

// serverEnv is what a server's environment gets beside the run's: the
// database's password, as PGPASSWORD (pgx reads it, and so do the Java
// servers), never in its argv, which every local user can read.
func serverEnv(o Options) []string {
	if o.BlockMode != "postgres" || o.dbPassword == "" {
		return nil
	}
	return []string{"PGPASSWORD=" + o.dbPassword}
}

// warm loads every endpoint of a freshly started Java server for d, four
// connections each, so that what is measured runs compiled code.
func warm(ctx context.Context, addr string, d time.Duration) error {
	var conns []warmConn
	for _, t := range []string{"/fast", "/slow?block=0s", "/async?delay=0s", "/offload?block=0s"} {
		for range 4 {
			conns = append(conns, warmConn{client.New(addr, t, 5*time.Second), t, false})
		}
	}
	return warmConns(ctx, addr, d, conns)
}

// warmAsIs loads a server measured as it is with its own requests for d
// before its first measurement, four connections on --load and one on
// --bystander: a service that runs on a JVM (or caches, or grows a pool
// as it is asked) is measured warm, not in its first seconds.
func warmAsIs(ctx context.Context, t *Target, d time.Duration) error {
	var conns []warmConn
	for i := range 4 {
		c := client.New(t.Addr, "/", 5*time.Second)
		c.Use(t.load.Mix().Fork(i))
		conns = append(conns, warmConn{c, "--load " + t.load.String(), true})
	}
	c := client.New(t.Addr, "/", 5*time.Second)
	c.Use(t.bystander.Mix())
	return warmConns(ctx, t.Addr, d, append(conns, warmConn{c, "--bystander " + t.bystander.String(), true}))
}

// warmConn is a connection that warms a server up, and what it asks;
// with answersAll, an answer other than 2xx or 3xx is the service's
// answer, not a failure (a service measured as it is may shed its load).
type warmConn struct {
	c          *client.Conn
	what       string
	answersAll bool
}

// warmConns drives each connection back to back for d; the first failure
// ends its connection's part and is returned.
func warmConns(ctx context.Context, addr string, d time.Duration, conns []warmConn) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, wc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := wc.c
			defer c.Close()
			stop := context.AfterFunc(ctx, c.Interrupt)
			defer stop()
			var r client.Response
			var b client.Backoff // a failed answer's pause, as the tools have it
			for ctx.Err() == nil {
				err := c.Do(&r)
				if err != nil && ctx.Err() == nil && !(wc.answersAll && client.KindOf(err) == client.BadStatus) {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("warming %s up: %s: %w", addr, wc.what, err)
					}
					mu.Unlock()
					return
				}
				now := time.Now()
				b.After(&r, err, now)
				if wait := b.Due(now).Sub(now); wait > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(wait):
					}
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// readyDir holds the run's servers' ready files, removed when the run ends.
func readyDir() (string, func(), error) {
	// Named by this run's pid, so that a later run can tell one left by a
	// run killed outright (kill -9 runs no cleanup) and remove it.
	prefix := "bystander-ready-"
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, o := range old {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(o), prefix), "-", 2)[0])
		if fi, serr := os.Stat(o); err == nil && serr == nil && fi.IsDir() && ownedByMe(fi) && !processRuns(pid) {
			_ = os.RemoveAll(o)
		}
	}
	d, err := os.MkdirTemp("", prefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", nil, fmt.Errorf("run.sh: %w", err)
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// ownedByMe says whether fi is this user's.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
