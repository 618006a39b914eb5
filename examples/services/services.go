// Package services starts, for tests with real processes, services written
// as their users write them, without the kit in mind: their own routes, no
// endpoint protocol, no ready file, a blocking call where its authors put
// it. They are what the kit measures "as it is" (docs/your-server.md).
//
//   - netty (shop/ShopServer.java): a Netty 4.1 shop on 4 event loops whose
//     GET /accounts/{id}/balance asks a ledger service over a plain blocking
//     socket from the event loop (shop/LedgerClient.java), about 5 ms a call.
//   - tomcat (shop/TomcatShop.java): the same shop, routes and LedgerClient
//     on an embedded Tomcat 10.1 with its default pool of 200 threads.
//   - node (node/app.js): Node.js's http module; POST /login hashes the
//     password with crypto.pbkdf2Sync on the event loop.
//   - gnet (gnetshop): a gnet service on 4 loops whose GET /report asks the
//     ledger from the loop, with net/http/pprof on a second listener.
//
// Every service binds a free loopback port, its backend too (ledger: a TCP
// service answering a line after a delay), and is stopped with SIGTERM when
// the test ends. The Java shop is built with examples/java's build.sh
// (javac over Debian's jars), the Go programs with go build, once per change
// of their sources, under the kit's cache directory (BYSTANDER_CACHE, else
// ~/.cache/bystander), in services/: a test binary after the first pays
// nothing. A build of other sources unused for a week is removed.
//
// Start skips a test outside CI when the runtime is missing (CI installs
// them, so there it fails).
package services

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/examples/java"
	"github.com/bystander-kit/bystander/internal/files"
)

//go:embed shop/*.java node/app.js ledger/*.go gnetshop/*.go
var sources embed.FS

// Kind names a service.
type Kind string

// The services.
const (
	Netty  Kind = "netty"  // shop.ShopServer on Netty 4.1, 4 event loops
	Tomcat Kind = "tomcat" // shop.TomcatShop on embedded Tomcat 10.1, 200 threads
	Node   Kind = "node"   // node/app.js on Node.js's http module
	Gnet   Kind = "gnet"   // gnetshop on gnet, 4 loops, with pprof
)

// Kinds is every service, in order.
var Kinds = []Kind{Netty, Tomcat, Node, Gnet}

// DefaultLedgerDelay is how long the ledger takes to answer a call.
const DefaultLedgerDelay = 5 * time.Millisecond

// DefaultIterations is node/app.js's PBKDF2 iterations per sign-in (its
// --iterations default): measured here at 260-460 ns an iteration (alone on
// a core, and beside other work on the same core), so 3 to 5 ms a sign-in.
const DefaultIterations = 10000

// Options change a service from its defaults.
type Options struct {
	// LedgerDelay is the ledger's delay per call (netty, tomcat, gnet);
	// 0 is DefaultLedgerDelay.
	LedgerDelay time.Duration
	// Iterations is node's PBKDF2 iterations per sign-in; 0 is
	// DefaultIterations.
	Iterations int
	// Loops is netty's and gnet's event loops; 0 is their default, 4.
	Loops int
}

// Request is one HTTP request.
type Request struct {
	Method, Path string
	// ContentType and Body, for a request with a body.
	ContentType string
	Body        []byte
}

// String is the request as "METHOD PATH".
func (r Request) String() string { return r.Method + " " + r.Path }

// HTTP is the request to base ("http://HOST:PORT").
func (r Request) HTTP(base string) *http.Request {
	req, err := http.NewRequest(r.Method, base+r.Path, bytes.NewReader(r.Body))
	if err != nil {
		panic(err) // the package's own requests: always well formed
	}
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	return req
}

// Flag is the request as the kit's --load and --bystander take it: 'METHOD
// PATH', or for a request with a body @FILE, a targets file in vegeta's
// format (its method and path, its Content-Type, @ its body's file) written
// in dir.
func (r Request) Flag(dir string) (string, error) {
	if r.Body == nil {
		return r.String(), nil
	}
	name := strings.Trim(strings.NewReplacer("/", "-", "?", "-", "&", "-", "=", "-").Replace(r.Path), "-")
	body := filepath.Join(dir, name+".body")
	targets := filepath.Join(dir, name+".targets")
	text := r.String() + "\n"
	if r.ContentType != "" {
		text += "Content-Type: " + r.ContentType + "\n"
	}
	text += "@" + body + "\n"
	if err := os.WriteFile(body, r.Body, 0o644); err != nil {
		return "", fmt.Errorf("services: %w", err)
	}
	if err := os.WriteFile(targets, []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("services: %w", err)
	}
	return "@" + targets, nil
}

// Service is a started service.
type Service struct {
	Kind Kind
	// Addr is its HTTP listener (127.0.0.1:PORT); PID the process that
	// holds it (the JVM, node, the Go program: never a wrapper).
	Addr string
	PID  int
	// PProf is gnet's profiler, "http://127.0.0.1:PORT", serving
	// /debug/pprof/ ("" for the others).
	PProf string
	// Ledger is the backend it calls (nil for node).
	Ledger *Ledger
	// Loops is its event loops (netty, gnet: 4; node: 1), Threads its
	// pool's size (tomcat: 200).
	Loops, Threads int
	// Blocking is the request whose handler makes the blocking call: the
	// netty and tomcat shops' GET /accounts/42/balance, gnet's GET
	// /report?account=42 (each one ledger call), node's POST /login
	// (PBKDF2 on the loop). Fast is a route that does nothing slow:
	// GET /health.
	Blocking, Fast Request
	// Chunked is a fast route answered with Transfer-Encoding: chunked:
	// netty's and tomcat's GET /orders (the others send Content-Length),
	// node's GET /items (node answers every route chunked: it writes its
	// head before its body), none on gnet (Content-Length only).
	Chunked Request
	// Frame, FrameFile and FrameLine are the service's own frame that
	// makes the blocking call, as a culprit names it: the first outside the
	// runtime's library and the server's. The JVM shop's is
	// shop.LedgerClient.balance at its readLine (LedgerClient.java), gnet's
	// main.(*ledgerClient).balance at its ReadString (main.go); node's is
	// "" (the kit's outside view sees its main thread on a CPU, in
	// pbkdf2Sync called from app.js's login).
	Frame, FrameFile string
	FrameLine        int
}

// URL is "http://" + Addr.
func (s *Service) URL() string { return "http://" + s.Addr }

// Target is s as the kit's --target takes a service (issues 47 and 48):
// KIND=URL,pid=PID, and gnet's ,pprof=URL.
func (s *Service) Target() string {
	t := fmt.Sprintf("%s=%s,pid=%d", s.Kind, s.URL(), s.PID)
	if s.PProf != "" {
		t += ",pprof=" + s.PProf
	}
	return t
}

// Ledger is a started ledger (ledger/main.go).
type Ledger struct {
	Addr  string
	PID   int
	Delay time.Duration
}

// Missing says what k needs and is not installed, with the command that
// installs it, or "". (The Go programs are built with the go command that
// runs the tests: go test puts it on the PATH.)
func Missing(k Kind) string {
	switch k {
	case Netty, Tomcat:
		return java.Missing()
	case Node:
		if _, err := exec.LookPath("node"); err != nil {
			return "node missing: apt-get install -y nodejs"
		}
		return ""
	case Gnet:
		return ""
	}
	return fmt.Sprintf("no service %q (one of %v)", k, Kinds)
}

// Start builds k if needed and starts it (and its ledger) on free
// loopback ports, waits until it answers GET /health, and stops it with
// SIGTERM when the test ends (a service that does not stop within 10 s
// is killed, and the test fails). It skips the test when k's runtime is
// missing, outside CI.
func Start(t testing.TB, k Kind, o Options) *Service {
	t.Helper()
	if m := Missing(k); m != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("services: %s (.ci/run installs it)", m)
		}
		t.Skipf("services: %s; CI installs it", m)
	}
	loops := o.Loops
	if loops == 0 {
		loops = 4
	}
	s := &Service{Kind: k, Fast: Request{Method: "GET", Path: "/health"}}
	var bin string
	var args []string
	switch k {
	case Netty, Tomcat:
		s.Ledger = StartLedger(t, o.LedgerDelay)
		launcher := "shopserver"
		args = []string{"--ledger", s.Ledger.Addr}
		if k == Netty {
			args = append(args, "--workers", strconv.Itoa(loops))
			s.Loops = loops
		} else {
			launcher = "tomcatshop"
			s.Threads = 200
		}
		bin = filepath.Join(buildJava(t), launcher)
		s.Blocking = Request{Method: "GET", Path: "/accounts/42/balance"}
		s.Chunked = Request{Method: "GET", Path: "/orders"}
		s.Frame, s.FrameFile = "shop.LedgerClient.balance", "LedgerClient.java"
		s.FrameLine = lineOf("shop/LedgerClient.java", "c.in.readLine()")
	case Gnet:
		s.Ledger = StartLedger(t, o.LedgerDelay)
		bin = buildGo(t, "gnetshop")
		args = []string{"--ledger", s.Ledger.Addr, "--loops", strconv.Itoa(loops)}
		s.Loops = loops
		s.Blocking = Request{Method: "GET", Path: "/report?account=42"}
		s.Frame, s.FrameFile = "main.(*ledgerClient).balance", "main.go"
		s.FrameLine = lineOf("gnetshop/main.go", "c.r.ReadString('\\n')")
	case Node:
		iterations := o.Iterations
		if iterations == 0 {
			iterations = DefaultIterations
		}
		bin = "node"
		args = []string{nodeScript(t), "--iterations", strconv.Itoa(iterations)}
		s.Loops = 1
		s.Blocking = Request{Method: "POST", Path: "/login", ContentType: "application/json",
			Body: []byte(`{"user":"alice","password":"wonderland"}`)}
		s.Chunked = Request{Method: "GET", Path: "/items"}
	}
	argsFor := func(addr string) []string { return append(append([]string{}, args...), "--addr", addr) }
	if k == Gnet {
		argsFor = func(addr string) []string {
			pprof := freeAddr(t)
			s.PProf = "http://" + pprof
			return append(append([]string{}, args...), "--addr", addr, "--pprof", pprof)
		}
	}
	began := time.Now()
	s.Addr, s.PID = start(t, string(k), bin, argsFor, healthy)
	t.Logf("services: %s serves on %s (PID %d), started in %v", k, s.Addr, s.PID, time.Since(began).Round(time.Millisecond))
	return s
}

// lineOf is the number of the line of the embedded file that holds marker.
func lineOf(file, marker string) int {
	b, err := sources.ReadFile(file)
	if err != nil {
		panic(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, marker) {
			return i + 1
		}
	}
	panic("services: " + file + " holds no " + marker)
}

// StartLedger starts a ledger answering each line after delay (0:
// DefaultLedgerDelay) on a free loopback port, stopped when the test ends.
func StartLedger(t testing.TB, delay time.Duration) *Ledger {
	t.Helper()
	if delay == 0 {
		delay = DefaultLedgerDelay
	}
	l := &Ledger{Delay: delay}
	args := func(addr string) []string { return []string{"--addr", addr, "--delay", delay.String()} }
	l.Addr, l.PID = start(t, "ledger", buildGo(t, "ledger"), args, func(addr string) error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	return l
}

// healthy says whether addr answers GET /health with 200.
func healthy(addr string) error {
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/health")
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET /health: %s", resp.Status)
	}
	return nil
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("services: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startTimeout bounds a start: a JVM on a busy machine takes seconds.
const startTimeout = time.Minute

// start runs bin args(ADDR) with ADDR a free loopback port until
// ready(ADDR) says it serves, and returns ADDR and its PID. A process that
// ends before it is ready (another took a port a moment after it was free)
// is started again on other ports, twice at most.
func start(t testing.TB, name, bin string, args func(addr string) []string, ready func(addr string) error) (string, int) {
	t.Helper()
	var why string
	for try := 0; try < 3; try++ {
		addr := freeAddr(t)
		p := launch(t, name, bin, args(addr))
		deadline := time.Now().Add(startTimeout)
		for {
			err := ready(addr)
			if err == nil {
				return addr, p.cmd.Process.Pid
			}
			select {
			case <-p.ended:
				why = fmt.Sprintf("%s ended before it served (%v):\n%s", name, p.cmd.ProcessState, p.out.String())
			case <-time.After(50 * time.Millisecond):
				if time.Now().Before(deadline) {
					continue
				}
				t.Fatalf("services: %s did not serve on %s within %v: %v\n%s", name, addr, startTimeout, err, p.out.String())
			}
			break
		}
	}
	t.Fatalf("services: %s", why)
	return "", 0
}

type process struct {
	cmd   *exec.Cmd
	out   *tail
	ended chan struct{}
}

// stopWithin bounds a stop after SIGTERM.
const stopWithin = 10 * time.Second

// launch starts a process that dies with the test binary, and ends it with
// SIGTERM when the test ends; its output is shown if the test failed.
func launch(t testing.TB, name, bin string, args []string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), out: &tail{max: 32 << 10}, ended: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// Killed with the test binary, whatever ends it: the signal follows
	// the thread that started the process, and Go ends no thread but one
	// a goroutine locked and left.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("services: start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.ended) }()
	t.Cleanup(func() {
		select {
		case <-p.ended:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.ended:
			case <-time.After(stopWithin):
				_ = p.cmd.Process.Kill()
				<-p.ended
				t.Errorf("services: %s (PID %d) did not stop within %v of SIGTERM: killed", name, p.cmd.Process.Pid, stopWithin)
			}
		}
		if t.Failed() {
			t.Logf("services: %s (%s) said:\n%s", name, strings.Join(p.cmd.Args, " "), p.out.String())
		}
	})
	return p
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// builds holds the artifacts made, once per test binary each.
var builds sync.Map // source directory -> *build

type build struct {
	once sync.Once
	path string
	err  error
}

// once makes the artifact of the embedded directory src with f, in that
// directory's build directory, once per test binary, and returns its path.
func once(t testing.TB, src string, f func(dir string) (string, error)) string {
	t.Helper()
	v, _ := builds.LoadOrStore(src, &build{})
	b := v.(*build)
	b.once.Do(func() { b.path, b.err = locked(src, f) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// buildJava builds the shop (shopserver, tomcatshop) and returns their
// directory.
func buildJava(t testing.TB) string {
	t.Helper()
	return once(t, "shop", func(dir string) (string, error) {
		shop, err := fs.Sub(sources, "shop")
		if err != nil {
			return "", err
		}
		p := java.Program{Sources: shop, Launchers: map[string]string{"shopserver": "shop.ShopServer", "tomcatshop": "shop.TomcatShop"}}
		// A build outlives no test that waits for it longer than this.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if _, err := p.Build(ctx, dir); err != nil {
			return "", fmt.Errorf("services: %w", err)
		}
		return dir, nil
	})
}

// buildGo builds the command in the package's directory name (go build:
// nothing when it is up to date) and returns its path.
func buildGo(t testing.TB, name string) string {
	t.Helper()
	return once(t, name, func(dir string) (string, error) {
		bin := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", bin, "github.com/bystander-kit/bystander/examples/services/"+name)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("services: go build %s: %v\n%s", name, err, out)
		}
		return bin, nil
	})
}

// nodeScript writes node/app.js and returns its path.
func nodeScript(t testing.TB) string {
	t.Helper()
	return once(t, "node", func(dir string) (string, error) {
		b, err := sources.ReadFile("node/app.js")
		if err != nil {
			return "", err
		}
		path := filepath.Join(dir, "app.js")
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
			return path, nil
		}
		return path, os.WriteFile(path, b, 0o644)
	})
}

// locked runs f on the build directory of this version of the embedded
// directory src, holding its lock (flock: other test binaries build there
// too, at once).
func locked(src string, f func(dir string) (string, error)) (string, error) {
	dir, err := buildDir(src)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("services: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("services: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("services: lock %s: %w", dir, err)
	}
	now := time.Now()
	_ = os.Chtimes(lock.Name(), now, now) // in use: not pruned
	prune(filepath.Dir(dir), dir)
	return f(dir)
}

// keepUnused is how long a build of other sources is kept unused.
const keepUnused = 7 * 24 * time.Hour

// prune removes the builds of other versions of the sources unused for
// keepUnused (the Go programs are tens of MB).
func prune(parent, keep string) {
	old, _ := filepath.Glob(filepath.Join(parent, "*"))
	for _, d := range old {
		if d == keep {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, "lock")); err == nil && time.Since(fi.ModTime()) > keepUnused {
			_ = os.RemoveAll(d)
		}
	}
}

// buildDir is where this version of the embedded directory src is built:
// the kit's cache directory (files.CacheDir), then services/SRC-HASH (HASH:
// its files').
func buildDir(src string) (string, error) {
	base := files.CacheDir()
	h := sha256.New()
	err := fs.WalkDir(sources, src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(p)
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("services: %w", err)
	}
	return filepath.Join(base, "services", src+"-"+hex.EncodeToString(h.Sum(nil))[:16]), nil
}
