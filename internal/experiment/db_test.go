package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/pgrun"
	"github.com/bystander-kit/bystander/internal/prose"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/serverflags"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// privateDir finds the private PostgreSQL's directory a run said it
// started, and checks that neither it nor a process serving it is left.
var startedLine = regexp.MustCompile(`started a private PostgreSQL \S+ on 127\.0\.0\.1:\d+ \(data in (\S+);`)

func leftNothing(t *testing.T, stdout string) {
	t.Helper()
	m := startedLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("the run did not say where its PostgreSQL was:\n%s", stdout)
	}
	dir := m[1]
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", dir, err)
	}
	if p := processesWith(filepath.Join(dir, "data")); len(p) > 0 {
		t.Errorf("postgres serving %s runs on: %v", dir, p)
	}
}

// TestPostgresMode runs the loop and pool servers with --block-mode
// postgres on a private PostgreSQL: the loops' stalls stay exact, the
// pool is bound by its database connections (never above 10 / the
// measured block, where its 200 slots would allow 16 / block), its cliff
// runs at shares of the 10, its slip is bound by them on both sides, and
// nothing of the database is left after.
func TestPostgresMode(t *testing.T) {
	wiretest.NeedPostgres(t)
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	// Two loops: the stall's k = 1, 2 say as much as four would, in half
	// the steps.
	o := opts(t, func(o *Options) {
		quick(o)
		o.Duration, o.Warmup, o.Out, o.Bin, o.BlockMode = time.Second, ms(300), out, bin, "postgres"
		o.Phases, o.Conc, o.Loops = []string{"sweep", "stall", "cliff", "slip"}, []int{16}, 2
	})
	var stdout bytes.Buffer
	watch := watchSecrets()
	if code := runCode(context.Background(), o, &stdout, &stdout); code != 0 {
		watch.stop()
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	// The servers got the database's password in their environment, and
	// it is nowhere a run's reader, or another local user, could see it.
	watch.noSecret(t, "", stdout.String(), out)
	leftNothing(t, stdout.String())
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	noOrphans(t, run)
	if run.Params.BlockMode != "postgres" || run.Params.DBPool != 10 || !strings.Contains(run.Params.DB, "private to the run") {
		t.Errorf("run.json: mode %q pool %d db %q", run.Params.BlockMode, run.Params.DBPool, run.Params.DB)
	}
	f := findings.Compute(out, run)
	exactOrTooBusy(t, f)
	var pool int
	for _, r := range f.Sweep {
		if r.Step.Server.Name != "pool" {
			continue
		}
		pool++
		b := r.Bound()
		if b == nil || !b.BlockMeasured {
			t.Fatalf("%s: no measured block: %+v", r.Step.ID, b)
		}
		// Little's law on the connections: at most 10 held at once.
		if limit := 1.05 * findings.CeilingPerS(10, b.MeasuredBlock); r.Throughput.Median() > limit {
			t.Errorf("%s: %.0f req/s above 10 connections / %s = %.0f", r.Step.ID, r.Throughput.Median(), b.MeasuredBlock, limit/1.05)
		}
		if b.Kind == "workers" && !strings.Contains(prose.BoundText(b), "its 10 database connections (behind 200 slots)") {
			t.Errorf("%s: bound by workers, not said to be the database's: %s", r.Step.ID, prose.BoundText(b))
		}
		t.Logf("%s: %.0f req/s; %s", r.Step.ID, r.Throughput.Median(), prose.BoundLine(b))
	}
	// The private database's CPU is read in every measured window; where
	// a thousand requests or more went through it, it shows (/proc counts
	// CPU in 10 ms ticks: a cliff step at 100 ms blocks may read none).
	for _, m := range run.Measurements {
		if m.Use == nil && slices.ContainsFunc(m.Notes, func(n string) bool { return strings.HasSuffix(n, findings.ProcNotRead) }) {
			// A tool that started its clock late (a machine 80-95% busy
			// with other processes): its window's /proc readings are not
			// claimed, and the step says so.
			t.Logf("%s: /proc not read, said: %v", m.ID, m.Notes)
			continue
		}
		if m.Status == "ok" && (m.Use == nil || m.Use.DB == nil || m.Use.DB.Threads < 11) {
			t.Errorf("%s: the database's processes not read: %+v", m.ID, m.Use)
		}
	}
	for _, r := range f.Cost {
		if r.Cost.Requests >= 1000 && (r.Cost.DBCores <= 0 || r.Cost.DBCPUUsPerRequest <= 0) {
			t.Errorf("%s: the database's CPU not measured: %+v", r.ID, r.Cost)
		}
	}
	if pool == 0 {
		t.Error("the pool's sweep is missing")
	}
	var cliff []int
	for _, m := range run.Measurements {
		if m.Phase == "cliff" && m.Server.Name == "pool" {
			cliff = append(cliff, m.Conc)
		}
	}
	if want := []int{6, 10, 15}; !slices.Equal(cliff, want) {
		t.Errorf("the pool's cliff at %v callers, want %v (shares of its 10 connections)", cliff, want)
	}
	// Classified by what bound it: a pool of 10, not of its 200 slots.
	// (On a machine too busy to judge its stalls, it is not classified, and
	// says why.)
	for _, c := range prose.Classes(f) {
		switch {
		case c.Server != "pool":
		case c.Class == findings.ClassUnknown && strings.HasPrefix(c.Text, "not classified: ") && !strings.Contains(c.Text, "not whole loops") && !strings.Contains(c.Text, "not measured"):
			t.Logf("the pool: %s", c.Text)
		case c.Class != findings.ClassPool || c.Configured != 10 || !strings.Contains(c.Text, "a pool of 10: its 10 database connections, as configured, behind 200 slots"):
			t.Errorf("the pool classified %s: %s", c.Class, c.Text)
		}
	}
	// Beside the published figures (Thread.sleep), every row says the call
	// differs.
	rows := prose.Published(f)
	for _, r := range rows {
		if !strings.Contains(r.Differs, "the call: a database call through 10 connections here, Thread.sleep published") {
			t.Errorf("published %s %s: differs %q", r.What, r.Server, r.Differs)
		}
	}
	if len(rows) == 0 {
		t.Error("nothing set beside the published figures")
	}
	// The bad afternoon: the database's 10 connections bind the pool on
	// both sides of the step, 2,000 -> 200 req/s behind its 200 slots.
	slipHolds(t, f, map[string]string{"loop-gnet": "2 loops", "pool": "10 database connections"})
	if s := f.Server("pool"); !s.DBBound || s.SweepWorkers != 10 || !strings.HasPrefix(prose.ServerCeiling(s), "10 database connections / 5ms") {
		t.Errorf("the pool's summary: %+v %q", s, prose.ServerCeiling(s))
	}
}

// TestPostgresInterrupted: Ctrl-C (SIGINT to the terminal's process group)
// during a run with a private PostgreSQL stops and removes it.
func TestPostgresInterrupted(t *testing.T) {
	wiretest.NeedPostgres(t)
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(filepath.Join(bin, "experiment"), "--bin", bin, "--quick", "--block-mode", "postgres", "--phases", "sweep", "--conc", "4,8", "--out", out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if run, err := results.ReadRun(out); err == nil && run.Measurements[0].Status == "ok" {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no measurement finished within 60 s\n%s", stdout.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("exit %v, want 130", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("still running 30 s after Ctrl-C\n%s", stdout.String())
	}
	leftNothing(t, stdout.String())
}

// TestPostgresRefused: a --pg-url nobody answers at refuses the run with
// one line, before any load, and leaves no run directory; --db-pool and
// --pg-url without --block-mode postgres are refused as flags.
func TestPostgresRefused(t *testing.T) {
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Out, o.Bin, o.BlockMode, o.PGURL = out, bin, "postgres", "postgres://nobody@127.0.0.1:1/db"
	})
	var stdout, stderr bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "run.sh: --pg-url: ") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run left %s: %v", out, err)
	}
	for _, edit := range []func(o *Options){
		func(o *Options) { o.DBPool = 5 },
		func(o *Options) { o.PGURL = "postgres://u@127.0.0.1:5432/db" },
		func(o *Options) { o.BlockMode, o.DBPool = "postgres", 0 },
	} {
		if o, err := tryOpts(edit); err == nil {
			t.Errorf("mode %s, --pg-url %q, --db-pool %d accepted", o.BlockMode, o.PGURL, o.DBPool)
		}
	}
}

// secretWatch looks at the run's servers while it runs: their argv (which
// every local user reads, ps) and the PGPASSWORD of their environment.
type secretWatch struct {
	mu        sync.Mutex
	argv      []string
	passwords map[string]bool
	// leaked: the other children (loadgen, the prober, ...) that had a
	// PGPASSWORD in their environment, by their command.
	leaked []string
	stop   func()
}

// watchSecrets looks every 50 ms at this process's children that were
// given --db-url (the run's servers).
func watchSecrets() *secretWatch {
	w := &secretWatch{passwords: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w.stop = func() { cancel(); <-done }
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w.look()
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *secretWatch) look() {
	pids, _ := filepath.Glob("/proc/[0-9]*")
	me := fmt.Sprintf("PPid:\t%d\n", os.Getpid())
	for _, p := range pids {
		st, err := os.ReadFile(p + "/status")
		if err != nil || !strings.Contains(string(st), me) {
			continue
		}
		cmdline, err := os.ReadFile(p + "/cmdline")
		if err != nil {
			continue
		}
		env, _ := os.ReadFile(p + "/environ")
		if !strings.Contains(string(cmdline), "\x00--db-url\x00") {
			for _, kv := range strings.Split(string(env), "\x00") {
				if v, ok := strings.CutPrefix(kv, "PGPASSWORD="); ok && v != "" {
					w.mu.Lock()
					if name := filepath.Base(strings.SplitN(string(cmdline), "\x00", 2)[0]); !slices.Contains(w.leaked, name) {
						w.leaked = append(w.leaked, name)
					}
					w.mu.Unlock()
				}
			}
			continue
		}
		w.mu.Lock()
		w.argv = append(w.argv, strings.ReplaceAll(string(cmdline), "\x00", " "))
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "PGPASSWORD="); ok && v != "" {
				w.passwords[v] = true
			}
		}
		w.mu.Unlock()
	}
}

// noSecret stops the watch and checks that the servers got a password in
// their environment (want, when not "", that one), and that none of the
// passwords seen, nor want, is in a server's argv, in out (what the run
// printed) or in any file of the run directory.
func (w *secretWatch) noSecret(t *testing.T, want, out, dir string) {
	t.Helper()
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.argv) == 0 {
		t.Fatal("no server with --db-url seen")
	}
	if len(w.passwords) == 0 || (want != "" && !w.passwords[want]) {
		t.Errorf("the servers' environment held no PGPASSWORD (want %v): %d seen", want != "", len(w.passwords))
	}
	if len(w.leaked) > 0 {
		t.Errorf("processes of the run other than its servers had the password in their environment: %v", w.leaked)
	}
	secrets := slices.Collect(maps.Keys(w.passwords))
	if want != "" {
		secrets = append(secrets, want)
	}
	for _, s := range secrets {
		for _, a := range w.argv {
			if strings.Contains(a, s) {
				t.Errorf("a server's argv holds the password: %s", strings.ReplaceAll(a, s, "<password>"))
			}
		}
		if strings.Contains(out, s) {
			t.Error("the run printed the password")
		}
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
					t.Errorf("%s holds the password", p)
				}
			}
			return nil
		})
	}
}

// TestPGURLFlags: a --pg-url that carries a password is refused in one
// line that does not repeat it and says where the password goes instead;
// one that is not on this machine is refused without --allow-remote.
func TestPGURLFlags(t *testing.T) {
	for _, tc := range []struct {
		url, want string // want "" ok, else in the error
		remote    bool
	}{
		{"postgres://owner@127.0.0.1:55432/postgres", "", false},
		{"postgresql://owner@localhost/db?sslmode=disable", "", false},
		{"postgres://owner@[::1]:5432/db", "", false},
		{"postgres://owner@%2Fvar%2Frun%2Fpostgresql/db", "?host=/DIR", false},
		{"postgres://owner@/db?host=/var/run/postgresql", "", false},
		{"postgres://owner:S3CRET@127.0.0.1:55432/postgres", "PGPASSWORD or ~/.pgpass", false},
		{"postgres://owner:S3CRET@127.0.0.1:55432/postgres", "PGPASSWORD or ~/.pgpass", true},
		{"postgres://owner@127.0.0.1:55432/postgres?password=S3CRET", "PGPASSWORD or ~/.pgpass", false},
		{"postgres://owner@127.0.0.1:55432/postgres?sslmode=require&sslpassword=S3CRET", "PGPASSWORD or ~/.pgpass", false},
		{"postgres://owner:S3CRET@db.example.com:5432/postgres%zz", "postgres://", false},
		{"host=127.0.0.1 user=owner password=S3CRET", "postgres://", false},
		{"postgres://owner@10.1.2.3:5432/db", "--allow-remote", false},
		{"postgres://owner@10.1.2.3:5432/db", "", true},
		{"postgres://owner@db.example.com/db", "--allow-remote", false},
		{"postgres://owner@127.0.0.1,10.1.2.3/db", "--allow-remote", false},
		{"postgres://owner@127.0.0.1/db?host=10.1.2.3", "--allow-remote", false},
	} {
		args := []string{"--block-mode", "postgres", "--pg-url", tc.url}
		if tc.remote {
			args = append(args, "--allow-remote")
		}
		_, err := tryOpts(func(o *Options) { o.BlockMode, o.PGURL, o.AllowRemote = "postgres", tc.url, tc.remote })
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "run.sh: --pg-url")):
			t.Errorf("%v: %v, want an error with %q", args, err, tc.want)
		case err != nil && (strings.Contains(err.Error(), "S3CRET") || strings.Contains(err.Error(), "\n")):
			t.Errorf("%v: not one line without the password: %v", args, err)
		}
	}
}

// TestPGURLPassword: the password of a --pg-url database, from a
// password file (~/.pgpass, here PGPASSFILE's), reaches the servers in
// their environment (PGPASSWORD, which the Java servers read too) and
// nowhere else: not their argv, the run's output or any file of the run.
func TestPGURLPassword(t *testing.T) {
	t.Run("pgpass", func(t *testing.T) { pgURLPassword(t, false) })
	// The password in the run's environment reached every process it
	// started (loadgen, the prober, jcmd, which runs as a JVM's user).
	t.Run("PGPASSWORD", func(t *testing.T) { pgURLPassword(t, true) })
}

func pgURLPassword(t *testing.T, inEnv bool) {
	db := wiretest.Postgres(t)
	if inEnv {
		t.Setenv("PGPASSWORD", db.Password())
	} else {
		pgpass := filepath.Join(t.TempDir(), "pgpass")
		if err := os.WriteFile(pgpass, fmt.Appendf(nil, "127.0.0.1:%d:*:%s:%s\n", db.Port, pgrun.User, db.Password()), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PGPASSFILE", pgpass)
		t.Setenv("PGPASSWORD", "") // none: pgx reads the file
	}
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Duration, o.Warmup, o.Out, o.Bin, o.BlockMode, o.PGURL = ms(500), ms(200), out, bin, "postgres", db.URL()
		o.Servers, o.Phases, o.Conc = []string{"loop", "pool"}, []string{"sweep"}, []int{4}
	})
	var stdout bytes.Buffer
	watch := watchSecrets()
	if code := runCode(context.Background(), o, &stdout, &stdout); code != 0 {
		watch.stop()
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	watch.noSecret(t, db.Password(), stdout.String(), out)
}

// TestPostgresTooManyClients: a server whose pool the database does not
// let in whole exits at start with the database's own words, well within
// the 30 s it may take to open its pool, and the measurement says them (it
// said "not ready within 30s", or the words after 30 s: the server hung
// closing its pool, ignoring SIGTERM, until its 30 s were up or for ever).
func TestPostgresTooManyClients(t *testing.T) {
	db := wiretest.PostgresWith(t, pgrun.Options{MaxConnections: 4})
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	o := opts(t, func(o *Options) {
		quick(o)
		o.Out, o.Bin, o.BlockMode, o.PGURL, o.DBPool = out, bin, "postgres", db.URL(), 10
		o.Servers, o.Phases, o.Conc = []string{"pool"}, []string{"sweep"}, []int{4}
	})
	var stdout bytes.Buffer
	start := time.Now()
	if code := runCode(context.Background(), o, &stdout, &stdout); code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stdout.String())
	}
	// A refused connection is refused at once: the run (one server's
	// start, the report) is done long before the server's wait for its
	// pool could have ended.
	if took := time.Since(start); took >= serverflags.DBOpenWait {
		t.Errorf("the run took %s: the server waited out its %s for the database", took.Round(time.Second), serverflags.DBOpenWait)
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	noOrphans(t, run)
	m := run.Measurements[0]
	t.Logf("%s: %s", m.Status, m.Reason)
	if m.Status != "failed" || !strings.Contains(m.Reason, "exited at start") || !strings.Contains(m.Reason, "too many clients") {
		t.Errorf("%s: %s: %s; want the server's exit at start with the database's words", m.ID, m.Status, m.Reason)
	}
}

// TestPostgresDied: the private PostgreSQL killed mid-run is said as such,
// once, and the measurement it died in and those after it fail with that
// reason (they said bad_status counts and "connection refused", never
// that the database had died); the one before it stands.
func TestPostgresDied(t *testing.T) {
	wiretest.NeedPostgres(t)
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	stdout, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	cmd := exec.Command(filepath.Join(bin, "experiment"), "--bin", bin, "--quick", "--duration", "1500ms", "--block-mode", "postgres",
		"--servers", "pool", "--phases", "sweep", "--conc", "4,8,16", "--out", out)
	cmd.Stdout, cmd.Stderr = stdout, stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	said := func() string { b, _ := os.ReadFile(stdout.Name()); return string(b) }
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(90 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("%s: not within 90 s\n%s", what, said())
			}
		}
	}
	// The first measurement ends; the second's load runs; the database is
	// killed under it.
	until("the first measurement", func() bool {
		run, err := results.ReadRun(out)
		return err == nil && run.Measurements[0].Status == "ok"
	})
	until("the second measurement's load", func() bool { return len(processesWith("sweep-pool-c8.load.json")) > 0 })
	m := startedLine.FindStringSubmatch(said())
	if m == nil {
		t.Fatalf("the run did not say where its PostgreSQL was:\n%s", said())
	}
	b, err := os.ReadFile(filepath.Join(m[1], "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("exit %v, want 1 (a measurement failed)", err)
		}
	case <-time.After(120 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("still running 120 s after the database died\n%s", said())
	}
	text := said()
	if n := strings.Count(text, "bystander: the private PostgreSQL died mid-run (signal: killed): "); n != 1 {
		t.Errorf("the database's death said %d times, want once:\n%s", n, text)
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range run.Measurements {
		dead := strings.Contains(m.Reason, "the private PostgreSQL died mid-run (signal: killed)")
		if (i == 0) != (m.Status == "ok") || (i > 0) != dead {
			t.Errorf("%s: %s: %s", m.ID, m.Status, m.Reason)
		}
	}
	leftNothing(t, text)
}
