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
