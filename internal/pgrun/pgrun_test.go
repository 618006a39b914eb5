package pgrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// needPostgres skips outside CI when PostgreSQL is missing; CI installs it,
// so there a missing one fails.
func needPostgres(t *testing.T) {
	t.Helper()
	if _, _, err := BinDir(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs PostgreSQL: %v", err)
		}
		t.Skip(err)
	}
}

func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || strings.Contains(string(b), ") Z ")
}

// A private instance starts, answers pg_sleep over loopback TCP, and
// leaves no process and no directory once stopped.
func TestStartStop(t *testing.T) {
	needPostgres(t)
	in, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := in.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Exec(ctx, "SELECT pg_sleep(0.02)"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 20*time.Millisecond {
		t.Errorf("pg_sleep(0.02) answered in %s", took)
	}
	var who string
	if err := c.QueryRow(ctx, "SELECT current_user").Scan(&who); err != nil || who != User {
		t.Errorf("current_user %q, %v", who, err)
	}
	c.Close(ctx)
	if st, err := os.Stat(filepath.Join(in.Dir, "data")); err != nil || !st.IsDir() {
		t.Fatalf("no data directory: %v", err)
	}
	pid := in.PID
	if err := in.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := in.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	if !gone(pid) {
		t.Errorf("postgres %d still runs after Stop", pid)
	}
	if _, err := os.Stat(in.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", in.Dir, err)
	}
}

// An instance whose run is gone is stopped and removed by the next run's
// Sweep, which says so; a live run's instance is left alone.
func TestSweepStopsALeftover(t *testing.T) {
	needPostgres(t)
	mine, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Stop()
	left, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer left.Stop()
	// Make left's run a process that has ended.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left.Dir, ownerFile), fmt.Appendf(nil, "%d 1\n", dead.Process.Pid), 0o644); err != nil {
		t.Fatal(err)
	}
	// (A leftover of some earlier run on this machine may be said too.)
	said := Sweep()
	if l := lineFor(said, left.Dir); !strings.Contains(l, fmt.Sprintf("stopped its server (pid %d)", left.PID)) || lineFor(said, mine.Dir) != "" {
		t.Errorf("Sweep said %q", said)
	}
	select {
	case <-left.done:
	case <-time.After(15 * time.Second):
		t.Errorf("the leftover's postgres %d still runs after Sweep", left.PID)
	}
	if _, err := os.Stat(left.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", left.Dir, err)
	}
	if c, err := mine.Connect(context.Background()); err != nil {
		t.Errorf("Sweep touched a live run's instance: %v", err)
	} else if err := c.Close(context.Background()); err != nil {
		t.Errorf("Sweep touched a live run's instance: %v", err)
	}
	if said := Sweep(); lineFor(said, left.Dir) != "" || lineFor(said, mine.Dir) != "" {
		t.Errorf("a second Sweep found %q", said)
	}
}

// A run killed outright (SIGKILL) takes its server with it (SIGQUIT from
// the kernel); the next run's Sweep removes the directory and says so.
func TestKilledRunLeavesNothingAfterSweep(t *testing.T) {
	needPostgres(t)
	if os.Getenv("PGRUN_HELPER") == "1" {
		in, err := Start(context.Background(), Options{})
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("DIR", in.Dir, in.PID)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKilledRunLeavesNothingAfterSweep$")
	cmd.Env = append(os.Environ(), "PGRUN_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	var pid int
	for {
		var word string
		if _, err := fmt.Fscan(out, &word); err != nil {
			t.Fatalf("helper: %v", err)
		}
		if word == "DIR" {
			fmt.Fscan(out, &dir, &pid)
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for !gone(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if said := Sweep(); lineFor(said, dir) == "" {
		t.Errorf("Sweep said %q", said)
	}
	if !gone(pid) {
		t.Errorf("postgres %d runs on", pid)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", dir, err)
	}
}

// lineFor is the line of said about dir, or "".
func lineFor(said []string, dir string) string {
	for _, l := range said {
		if strings.Contains(l, dir+";") || strings.Contains(l, dir+",") {
			return l
		}
	}
	return ""
}

// Only the run's own processes get in: no connection without the
// password of the run's making, over TCP or the socket; the superuser not
// over TCP at all; another OS user (nobody) neither way; and the servers'
// role cannot run a program as the database's owner (COPY TO PROGRAM).
func TestOnlyTheRunGetsIn(t *testing.T) {
	needPostgres(t)
	in, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Stop()
	sock := filepath.Join(in.Dir, "sock")
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the socket directory: %v %v, want 0700", st.Mode(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ how, host, user, password string }{
		{"TCP, no password", "127.0.0.1", User, ""},
		{"TCP, a wrong password", "127.0.0.1", User, "guess"},
		{"TCP, the superuser without a password", "127.0.0.1", Superuser, ""},
		{"TCP, the superuser with its own password", "127.0.0.1", Superuser, in.adminPassword},
		{"the socket, no password", sock, User, ""},
		{"the socket, a wrong password", sock, User, "guess"},
		{"the socket, the superuser without a password", sock, Superuser, ""},
	} {
		if err := connectAs(ctx, in, tc.host, tc.user, tc.password); err == nil {
			t.Errorf("%s: connected", tc.how)
		} else {
			t.Logf("%s: %v", tc.how, err)
		}
	}
	c, err := in.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var super bool
	if err := c.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || super {
		t.Errorf("the servers' role is a superuser: %v %v", super, err)
	}
	// Where the database's owner could write, had it run the program.
	open, err := os.MkdirTemp("", "pgrun-proof-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(open)
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	proof := filepath.Join(open, "ran")
	var pgErr *pgconn.PgError
	if _, err := c.Exec(ctx, fmt.Sprintf("COPY (SELECT 1) TO PROGRAM 'id > %s'", proof)); !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("COPY TO PROGRAM as the servers' role: %v, want permission denied (42501)", err)
	}
	// The tester's command, as another local user.
	if os.Geteuid() == 0 {
		bin, _, _ := BinDir()
		for _, host := range []string{"127.0.0.1", sock} {
			for _, user := range []string{User, Superuser} {
				cmd := exec.CommandContext(ctx, filepath.Join(bin, "psql"), "-w", "-h", host, "-p", fmt.Sprint(in.Port), "-U", user, "-d", "postgres",
					"-c", fmt.Sprintf("COPY (SELECT 1) TO PROGRAM 'id > %s'", proof))
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true}}
				cmd.Env = []string{"HOME=/", "PATH=/usr/bin:/bin"}
				cmd.Dir = "/"
				out, err := cmd.CombinedOutput()
				if err == nil {
					t.Errorf("nobody connected as %s over %s: %s", user, host, out)
				} else {
					t.Logf("nobody as %s over %s: %s", user, host, strings.TrimSpace(string(out)))
				}
			}
		}
	}
	if b, err := os.ReadFile(proof); err == nil {
		t.Errorf("a program ran as the database's owner: %s", b)
	}
}

// connectAs connects to in as user with password (none: ""), at host (a
// loopback address or the socket's directory), reading no password from
// the environment or a password file.
func connectAs(ctx context.Context, in *Instance, host, user, password string) error {
	cfg, err := pgx.ParseConfig(in.URL())
	if err != nil {
		return err
	}
	cfg.Host, cfg.User, cfg.Password = host, user, password
	cfg.Fallbacks = nil
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		c.Close(ctx)
	}
	return err
}

// Died is nil while the server runs and after Stop, and says how it ended
// when it was killed under the run.
func TestDied(t *testing.T) {
	needPostgres(t)
	in, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Stop()
	if err := in.Died(); err != nil {
		t.Errorf("running: Died %v", err)
	}
	if err := syscall.Kill(in.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-in.done:
	case <-time.After(15 * time.Second):
		t.Fatal("postgres still runs 15 s after SIGKILL")
	}
	if err := in.Died(); err == nil || err.Error() != "signal: killed" {
		t.Errorf("killed: Died %v", err)
	}
	if err := in.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := in.Died(); err != nil {
		t.Errorf("after Stop: Died %v", err)
	}
}
