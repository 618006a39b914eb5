// Package pgrun starts a private PostgreSQL for one run of the kit and
// removes it after: Debian's postgresql package's binaries (under
// /usr/lib/postgresql/N/bin, not on PATH), a data directory of its own in
// temporary space, a free loopback port, and, when the run is root, an
// unprivileged user (PostgreSQL refuses to run as root). It never touches
// the package's own cluster.
//
// Only the run's own processes get in. Every connection needs a password
// of the run's making (SCRAM-SHA-256, random, held in the run's memory and
// handed to the servers through their environment, never their argv): the
// superuser's (Superuser) only over the unix socket, whose directory only
// the server's user (and root) may enter; the servers' (User, no superuser,
// so no COPY TO PROGRAM) also over loopback TCP. No other role, address or
// database replication is allowed in (pg_hba.conf).
//
// The server is the run's child: it receives SIGQUIT (immediate shutdown)
// when the run dies, even by SIGKILL, and the next run's Sweep stops any
// instance whose run is gone and removes its directory, saying so.
package pgrun

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/files"
	"github.com/jackc/pgx/v5"
)

// Prefix names every instance's directory in os.TempDir().
const Prefix = "bystander-pg-"

// Install is what to run when PostgreSQL is missing.
const Install = "apt-get install postgresql (Debian's package; or give --pg-url to use your own)"

// ErrNotInstalled: no PostgreSQL binaries were found.
var ErrNotInstalled = errors.New("pgrun: PostgreSQL is not installed: " + Install)

// User is the role the servers log in as: not a superuser.
const User = "bystander"

// Superuser is the instance's superuser, which the run alone uses (to
// create User), over the unix socket only.
const Superuser = "bystander_admin"

// hba is the instance's pg_hba.conf: passwords everywhere, the superuser
// over the socket only, nothing else.
const hba = `# bystander: the run's own processes only, with the passwords it made.
local all ` + Superuser + ` scram-sha-256
local all ` + User + ` scram-sha-256
host all ` + User + ` 127.0.0.1/32 scram-sha-256
`

// Options are what an instance is started with.
type Options struct {
	// MaxConnections is the server's max_connections (default 100).
	MaxConnections int
	// Wait bounds the whole start (default 60 s).
	Wait time.Duration
}

// Instance is a running private PostgreSQL.
type Instance struct {
	Dir     string // the instance's directory: data/, sock/, owner, log
	Port    int
	Version string // the binaries' major version, e.g. "15"
	PID     int

	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
	err  error
	// exit is how the server process ended, once done is closed;
	// stopping is set once Stop asks it to.
	exit     error
	stopping atomic.Bool
	// password is User's, adminPassword Superuser's.
	password, adminPassword string
}

// URL is where the servers connect, as User over loopback TCP; it carries
// no password (Password does).
func (in *Instance) URL() string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", User, in.Port)
}

// Password is User's password: a secret of the run's, for the servers'
// environment (PGPASSWORD), never for their argv or a file.
func (in *Instance) Password() string { return in.password }

// Connect connects as User over loopback TCP, with its password.
func (in *Instance) Connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(in.URL())
	if err != nil {
		return nil, fmt.Errorf("pgrun: %w", err)
	}
	cfg.Password = in.password
	return pgx.ConnectConfig(ctx, cfg)
}

// adminConfig is Superuser's connection, over the unix socket.
func (in *Instance) adminConfig() (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", Superuser, in.Port))
	if err != nil {
		return nil, fmt.Errorf("pgrun: %w", err)
	}
	cfg.Host, cfg.Password, cfg.Fallbacks = filepath.Join(in.Dir, "sock"), in.adminPassword, nil
	return cfg, nil
}

// BinDir finds the newest PostgreSQL's binaries: Debian's
// /usr/lib/postgresql/N/bin, else the directory of an initdb on PATH.
func BinDir() (dir, version string, err error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return majorOf(matches[i]) > majorOf(matches[j]) })
	for _, m := range matches {
		d := filepath.Dir(m)
		if isExec(filepath.Join(d, "postgres")) {
			return d, strconv.Itoa(majorOf(m)), nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && isExec(filepath.Join(filepath.Dir(p), "postgres")) {
		return filepath.Dir(p), "", nil
	}
	return "", "", ErrNotInstalled
}

func majorOf(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// Start creates and starts a private instance. It removes whatever it
// created when it fails.
func Start(ctx context.Context, o Options) (in *Instance, err error) {
	if o.MaxConnections <= 0 {
		o.MaxConnections = 100
	}
	if o.Wait <= 0 {
		o.Wait = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()
	bin, version, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", Prefix)
	if err != nil {
		return nil, fmt.Errorf("pgrun: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := writeOwner(dir); err != nil {
		return nil, err
	}
	// The directory is the run's; data/ and sock/ are the server's user's.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pgrun: %w", err)
	}
	for _, sub := range []string{"data", "sock"} {
		p := filepath.Join(dir, sub)
		if err := os.Mkdir(p, 0o700); err != nil {
			return nil, fmt.Errorf("pgrun: %w", err)
		}
		if cred != nil {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("pgrun: %w", err)
			}
		}
	}
	adminPassword, password := secret(), secret()
	if err := initDB(ctx, bin, dir, cred, adminPassword); err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 { // a port found free may be taken before the server binds it
		in, lastErr = startServer(ctx, bin, dir, cred, o, adminPassword)
		if lastErr == nil {
			break
		}
		if ctx.Err() != nil || !strings.Contains(lastErr.Error(), "could not bind") {
			return nil, lastErr
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	in.Version, in.password = version, password
	if err := in.createUser(ctx); err != nil {
		stopProcess(in.cmd.Process, in.done)
		return nil, err
	}
	return in, nil
}

// secret is a password of the run's making: 128 random bits.
func secret() string { return rand.Text() }

// initDB creates the data directory: Superuser with its password (read
// from a file in the socket's directory, which only the server's user may
// enter, removed at once) and the instance's pg_hba.conf.
func initDB(ctx context.Context, bin, dir string, cred *syscall.Credential, adminPassword string) error {
	pwfile := filepath.Join(dir, "sock", "initdb.pw")
	if err := os.WriteFile(pwfile, []byte(adminPassword+"\n"), 0o600); err != nil {
		return fmt.Errorf("pgrun: %w", err)
	}
	defer os.Remove(pwfile)
	if cred != nil {
		if err := os.Chown(pwfile, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgrun: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-A", "scram-sha-256", "-U", Superuser,
		"--pwfile", pwfile, "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	initdb.Dir = "/"
	initdb.WaitDelay = time.Second // ended, its postgres children may hold its output a moment
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("pgrun: initdb: %v: %s", err, lastLines(out, 6))
	}
	// initdb made the file as the server's user: writing keeps its owner.
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return fmt.Errorf("pgrun: %w", err)
	}
	return nil
}

// createUser creates User, as Superuser over the socket. Its password
// goes as a SCRAM verifier, so the password itself is in no statement the
// server could log.
func (in *Instance) createUser(ctx context.Context) error {
	cfg, err := in.adminConfig()
	if err != nil {
		return err
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("pgrun: connecting as %s over the socket: %w", Superuser, err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", User, scramVerifier(in.password))); err != nil {
		return fmt.Errorf("pgrun: creating the role %s: %w", User, err)
	}
	return nil
}

// scramVerifier is what PostgreSQL stores for a SCRAM-SHA-256 password
// (RFC 5802, RFC 7677; PostgreSQL's scram_build_secret), given in
// CREATE ROLE as psql's \password does. password is ASCII: SASLprep
// leaves it as it is.
func scramVerifier(password string) string {
	const iterations = 4096
	salt := make([]byte, 16)
	rand.Read(salt) // never fails (crypto/rand)
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		panic(err) // only for a key length sha256 cannot give
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(mac(salted, "Server Key")))
}

// startServer starts postgres on a free port and waits until it answers.
func startServer(ctx context.Context, bin, dir string, cred *syscall.Credential, o Options, adminPassword string) (*Instance, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgrun: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(dir, "data"), "-p", strconv.Itoa(port),
		"-k", filepath.Join(dir, "sock"), "-c", "unix_socket_permissions=0700", "-c", "listen_addresses=127.0.0.1",
		// The servers' role is not a superuser: every connection is theirs
		// to take (the run's own comes before theirs), and one past them is
		// refused in PostgreSQL's words for it, "too many clients".
		"-c", "max_connections="+strconv.Itoa(o.MaxConnections), "-c", "superuser_reserved_connections=0",
		"-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "autovacuum=off", "-c", "log_min_messages=warning")
	// Its own process group (a terminal's Ctrl-C is the run's to handle,
	// which stops it in order) and SIGQUIT when the run dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgrun: starting postgres: %w", err)
	}
	in := &Instance{Dir: dir, Port: port, PID: cmd.Process.Pid, cmd: cmd, done: make(chan struct{}), adminPassword: adminPassword}
	go func() {
		in.exit = cmd.Wait()
		close(in.done)
	}()
	cfg, err := in.adminConfig()
	if err != nil {
		in.Stop()
		return nil, err
	}
	for {
		err := ping(ctx, cfg)
		if err == nil {
			return in, nil
		}
		select {
		case <-in.done:
			b, _ := files.ReadCapped(logPath, 64<<10)
			return nil, fmt.Errorf("pgrun: postgres exited (%v): %s", in.exit, lastLines(b, 6))
		case <-ctx.Done():
			in.Stop()
			return nil, fmt.Errorf("pgrun: postgres (port %d) did not answer on its socket: %v", port, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ping connects once and asks SELECT 1.
func ping(ctx context.Context, cfg *pgx.ConnConfig) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, "SELECT 1")
	return err
}

// Died says how the server ended when it ended unasked (killed, crashed,
// stopped by someone else): its exit, "signal: killed"; nil while it runs
// and once Stop stopped it.
func (in *Instance) Died() error {
	select {
	case <-in.done:
	default:
		return nil
	}
	switch {
	case in.stopping.Load():
		return nil
	case in.exit == nil:
		return errors.New("exit status 0")
	}
	return in.exit
}

// Stop shuts the instance down (fast shutdown, then immediate, then
// SIGKILL) and removes its directory. It is safe to call twice.
func (in *Instance) Stop() error {
	if in == nil {
		return nil
	}
	in.stopping.Store(true)
	in.once.Do(func() {
		stopProcess(in.cmd.Process, in.done)
		if err := os.RemoveAll(in.Dir); err != nil {
			in.err = fmt.Errorf("pgrun: removing %s: %w", in.Dir, err)
			return
		}
		in.err = nil
	})
	return in.err
}

// stopProcess asks a postmaster to stop: SIGINT (fast: ends the sessions,
// checkpoints), SIGQUIT after 5 s, SIGKILL after 5 s more; done closes
// when it has exited.
func stopProcess(p *os.Process, done <-chan struct{}) {
	for _, step := range []struct {
		sig   syscall.Signal
		grace time.Duration
	}{{syscall.SIGINT, 5 * time.Second}, {syscall.SIGQUIT, 5 * time.Second}, {syscall.SIGKILL, 5 * time.Second}} {
		if p.Signal(step.sig) != nil {
			break
		}
		select {
		case <-done:
			return
		case <-time.After(step.grace):
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// runAs is who the server runs as: nil (the run's own user) unless the run
// is root, then the postgres user the package creates (nobody without it).
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 == nil && err2 == nil && uid != 0 {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
		}
	}
	return nil, errors.New("pgrun: running as root and no unprivileged user (postgres or nobody) to run PostgreSQL as")
}

// freePort is a loopback port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgrun: no free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lastLines is the last n lines of b, on one line each, for an error.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
