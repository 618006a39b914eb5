// Package examples tests the servers in other runtimes that speak the
// endpoint protocol: each must pass the conformance check.
package examples

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/examples/java"
	"github.com/bystander-kit/bystander/internal/conform"
	"github.com/bystander-kit/bystander/internal/ready"
	"github.com/bystander-kit/bystander/internal/wiretest"
	"github.com/jackc/pgx/v5"
)

// Need returns the path of an interpreter, or skips the test outside CI
// (CI installs it, so there a missing one fails).
func need(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing in CI: .ci/run installs it (apt-get install %s)", name, pkg)
		}
		t.Skipf("%s is not installed (apt-get install %s); CI installs it", name, pkg)
	}
	return p
}

// conforms starts a server with its interpreter and checks it: every check
// passes, on one event loop.
func conforms(t *testing.T, interp, script string) {
	t.Helper()
	addr := wiretest.FreeAddr(t)
	wiretest.Start(t, interp, script, "--addr", addr)
	r := conform.Run(context.Background(), addr, conform.Options{})
	for _, c := range r.Checks {
		if c.Status != conform.Pass {
			t.Errorf("%s: %s %s", c.ID, c.Status, c.Reason)
		}
	}
	if !r.OK() || r.Loops != 1 {
		t.Fatalf("OK %v, loops %d (want 1: one event loop)", r.OK(), r.Loops)
	}
}

func TestNodeConforms(t *testing.T) { conforms(t, need(t, "node", "nodejs"), "node/server.js") }

func TestPythonConforms(t *testing.T) {
	conforms(t, need(t, "python3", "python3"), "python/server.py")
}

// Bad flags are refused with a clear line and status 2.
func TestFlags(t *testing.T) {
	for _, ex := range []struct{ interp, pkg, script string }{{"node", "nodejs", "node/server.js"}, {"python3", "python3", "python/server.py"}} {
		t.Run(ex.interp, func(t *testing.T) { badFlags(t, need(t, ex.interp, ex.pkg), ex.script) })
	}
}

func badFlags(t *testing.T, interp, script string) {
	for _, args := range [][]string{{"--block", "5"}, {"--delay", "11s"}, {"--offload-workers", "0"}, {"--addr", "nowhere"}, {"--what"}} {
		out, err := exec.Command(interp, append([]string{script}, args...)...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || len(out) == 0 {
			t.Errorf("%v: %v, %q; want exit 2 with a reason", args, err, out)
		}
	}
}

// The timing checks a busy machine can leave undecided (BUSY): never a
// failure of the server.
var timing = map[string]bool{conform.CheckSlowHoldsLoop: true, conform.CheckAsyncFreesLoop: true, conform.CheckOffloadFrees: true}

// TestMain removes the Java servers built for the tests once they are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if javaDir != "" {
		os.RemoveAll(javaDir)
	}
	os.Exit(code)
}

var (
	javaOnce sync.Once
	javaDir  string
	javaErr  error
)

// javaServers builds the published experiment's servers once per test
// binary, or skips outside CI when Java or the libraries are missing (CI
// installs them, so there a missing one fails).
func javaServers(t *testing.T) string {
	t.Helper()
	if m := java.Missing(); m != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: .ci/run installs them", m)
		}
		t.Skipf("%s; CI installs them", m)
	}
	javaOnce.Do(func() {
		javaDir, javaErr = os.MkdirTemp("", "bystander-java")
		if javaErr == nil {
			_, javaErr = java.Build(context.Background(), javaDir)
		}
	})
	if javaErr != nil {
		t.Fatal(javaErr)
	}
	return javaDir
}

// startJava starts one of them on a free port and waits for its ready file.
func startJava(t *testing.T, name string, args ...string) ready.File {
	t.Helper()
	rf := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(filepath.Join(javaServers(t), java.Launchers[name]), append([]string{"--addr", "127.0.0.1:0", "--ready-file", rf}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ended) }()
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); <-ended })
	f, err := ready.Wait(context.Background(), rf, ended, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if f.PID != cmd.Process.Pid {
		t.Errorf("ready file PID %d, the launcher's %d: the launcher must exec java", f.PID, cmd.Process.Pid)
	}
	return f
}

// TestNettyConforms: the published experiment's Netty server passes every
// check, with the loops it was given, learned from X-Loop.
func TestNettyConforms(t *testing.T) {
	f := startJava(t, "netty", "--loops", "3")
	r := conform.Run(context.Background(), f.Addr, conform.Options{})
	for _, c := range r.Checks {
		if c.Status != conform.Pass && !(c.Status == conform.Busy && timing[c.ID]) {
			t.Errorf("%s: %s %s", c.ID, c.Status, c.Reason)
		}
	}
	if r.Loops != 3 || f.Kind != "loop" || f.Workers != 3 {
		t.Errorf("loops %d, ready %+v; want 3 loops", r.Loops, f)
	}
}

// TestTomcatConforms: the published experiment's Tomcat passes as a pool
// (no X-Loop, so the loop checks do not apply); it closes the connection
// after a 400, which the protocol allows.
func TestTomcatConforms(t *testing.T) {
	f := startJava(t, "tomcat", "--threads", "20")
	r := conform.Run(context.Background(), f.Addr, conform.Options{})
	for _, c := range r.Checks {
		if c.Status != conform.Pass && c.Status != conform.Skip {
			t.Errorf("%s: %s %s", c.ID, c.Status, c.Reason)
		}
	}
	if !r.OK() || r.Loops != 0 || f.Kind != "pool" || f.Workers != 20 {
		t.Errorf("OK %v loops %d, ready %+v; want a pool of 20", r.OK(), r.Loops, f)
	}
}

// TestJavaFlags: bad flags are refused with a clear line and status 2.
func TestJavaFlags(t *testing.T) {
	dir := javaServers(t)
	for _, name := range []string{"netty", "tomcat"} {
		for _, args := range [][]string{{"--block", "5"}, {"--delay", "11s"}, {"--offload-workers", "0"}, {"--addr", "nowhere"}, {"--what", "x"}, {"--loops"}} {
			out, err := exec.Command(filepath.Join(dir, java.Launchers[name]), args...).CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || len(out) == 0 {
				t.Errorf("%s %v: %v, %q; want exit 2 with a reason", name, args, err, out)
			}
		}
	}
}

// TestGoConforms: the net/http example passes every check that applies to
// a server without loops (no X-Loop: the loop checks skip).
func TestGoConforms(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "goexample")
	if out, err := exec.Command("go", "build", "-o", bin, "./go").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := wiretest.FreeAddr(t)
	wiretest.Start(t, bin, "--addr", addr)
	r := conform.Run(context.Background(), addr, conform.Options{})
	for _, c := range r.Checks {
		if c.Status != conform.Pass && c.Status != conform.Skip {
			t.Errorf("%s: %s %s", c.ID, c.Status, c.Reason)
		}
	}
	if !r.OK() || r.Loops != 0 {
		t.Fatalf("OK %v, loops %d (want 0: no event loops)", r.OK(), r.Loops)
	}
	badFlags(t, bin, "--addr=127.0.0.1:0")
}

// TestJavaDatabase: with --db-url the Java servers' blocking call is
// SELECT pg_sleep on a HikariCP connection of a real PostgreSQL, on /slow
// and /offload, and X-Blocked-Ns is the call's.
func TestJavaDatabase(t *testing.T) {
	javaServers(t)
	if m := java.MissingDB(); m != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: .ci/run installs them", m)
		}
		t.Skip(m)
	}
	db := wiretest.Postgres(t) // its password in PGPASSWORD, where the servers read it
	jdbc, err := java.JDBCURL(db.URL())
	if err != nil {
		t.Fatal(err)
	}
	// A password in --db-url is refused: every local user reads argv.
	for _, name := range []string{"netty", "tomcat"} {
		out, err := exec.Command(filepath.Join(javaServers(t), java.Launchers[name]), "--addr", "127.0.0.1:0", "--db-url", jdbc+"&password=s3cret").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "PGPASSWORD") || strings.Contains(string(out), "s3cret") {
			t.Errorf("%s with a password in --db-url: %v, %q; want exit 2 saying PGPASSWORD, without the password", name, err, out)
		}
	}
	for i, name := range []string{"netty", "tomcat"} {
		f := startJava(t, name, "--db-url", jdbc, "--db-pool", "2")
		for _, path := range []string{"/slow?block=30ms", "/offload?block=30ms"} {
			resp, err := http.Get("http://" + f.Addr + path)
			if err != nil {
				t.Fatalf("%s %s: %v", name, path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			blocked, _ := strconv.ParseInt(resp.Header.Get("X-Blocked-Ns"), 10, 64)
			if resp.StatusCode != 200 || blocked < int64(30*time.Millisecond) {
				t.Errorf("%s %s: %d %q, X-Blocked-Ns %d", name, path, resp.StatusCode, body, blocked)
			}
		}
		c, err := pgx.Connect(context.Background(), db.URL())
		if err != nil {
			t.Fatal(err)
		}
		// The calls were the database's: each server's pool holds its 2
		// connections, and one of them at least last asked pg_sleep.
		var conns, slept int
		err = c.QueryRow(context.Background(), "SELECT count(*), count(*) FILTER (WHERE query LIKE 'SELECT pg_sleep%') FROM pg_stat_activity WHERE application_name = 'PostgreSQL JDBC Driver'").Scan(&conns, &slept)
		c.Close(context.Background())
		if err != nil || conns != 2*(i+1) || slept < i+1 {
			t.Errorf("%s: %d JDBC connections, %d last in pg_sleep (%v); want %d, %d at least", name, conns, slept, err, 2*(i+1), i+1)
		}
	}
}

func TestJDBCURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://bystander@127.0.0.1:5432/postgres?sslmode=disable": "jdbc:postgresql://127.0.0.1:5432/postgres?sslmode=disable&user=bystander",
		"postgresql://u@[::1]:6543/db":                                 "jdbc:postgresql://[::1]:6543/db?user=u",
	} {
		if got, err := java.JDBCURL(in); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", in, got, err, want)
		}
	}
	// A password would go in the server's argv: refused, and not repeated.
	for _, bad := range []string{"mysql://x@h/db", "127.0.0.1:5432", "postgres:///db", "postgresql://u:s3cret@[::1]:6543/db",
		"postgres://u@127.0.0.1/db?password=s3cret", "postgres://u:s3cret@/db"} {
		if got, err := java.JDBCURL(bad); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %q, %v; want an error without the password", bad, got, err)
		}
	}
}
