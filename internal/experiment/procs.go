package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bystander-kit/bystander/internal/client"
	"github.com/bystander-kit/bystander/internal/ready"
	"github.com/bystander-kit/bystander/internal/results"
)

// tail keeps the last bytes written to it: a child's stderr, to show when
// it dies.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.Join(lines, "\n")
}

// child is one process the run started.
type child struct {
	name   string
	cmd    *exec.Cmd
	stderr *tail
	done   chan struct{}
	err    error // after done
}

func (c *child) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// stop asks the child to end (sig), waits up to grace, then kills it.
func (c *child) stop(sig os.Signal, grace time.Duration) {
	if !c.alive() {
		return
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// wait waits for the child to exit by itself, up to timeout.
func (c *child) wait(ctx context.Context, timeout time.Duration) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		c.stop(os.Interrupt, 3*time.Second) // tools write a partial result on SIGINT
		return c.err
	case <-time.After(timeout):
		c.stop(os.Interrupt, 3*time.Second)
		return fmt.Errorf("%s did not finish within %s", c.name, timeout)
	}
}

// exitErr describes how a child ended, with the tail of its stderr.
func (c *child) exitErr() error {
	if c.err == nil && c.alive() {
		return nil
	}
	msg := fmt.Sprintf("%s: %v", c.name, c.err)
	if c.err == nil {
		msg = c.name + " exited with status 0, unasked"
	}
	if t := c.stderr.String(); t != "" {
		msg += "; its stderr ends:\n    " + strings.ReplaceAll(t, "\n", "\n    ")
	}
	return errors.New(msg)
}

// procs starts and tracks every child of the run.
type procs struct {
	bin        string
	readyDir   string // where the servers' ready files go
	serial     int    // numbers the ready files
	pin        bool
	serverCPUs string
	genCPUs    string
	mu         sync.Mutex
	all        []*child
	onStart    func(pid int, name string)
	cleanReady func() // removes readyDir
}

// start runs name from the kit's bin directory. role "server" or "gen"
// picks the CPU set under --pin. stdout, if not nil, gets the child's stdout.
func (p *procs) start(role, name string, stdout io.Writer, args ...string) (*child, error) {
	return p.startEnv(role, name, nil, stdout, args...)
}

// startEnv is start with env added to the child's environment (which
// only its own user and root can read, unlike its argv).
func (p *procs) startEnv(role, name string, env []string, stdout io.Writer, args ...string) (*child, error) {
	path := filepath.Join(p.bin, name)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s is not built: run ./run.sh (it builds into %s)", path, p.bin)
	}
	argv := append([]string{path}, args...)
	if p.pin {
		cpus := p.genCPUs
		if role == "server" {
			cpus = p.serverCPUs
		}
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the run
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	c := &child{name: name, cmd: cmd, stderr: &tail{}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.WaitDelay = toolWaitDelay // once it ended, whatever holds its output
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	p.mu.Lock()
	p.all = append(p.all, c)
	p.mu.Unlock()
	if p.onStart != nil {
		p.onStart(cmd.Process.Pid, name)
	}
	return c, nil
}

// stopAll ends every child still running.
func (p *procs) stopAll() {
	p.mu.Lock()
	all := append([]*child(nil), p.all...)
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.stop(syscall.SIGTERM, 2*time.Second)
		}()
	}
	wg.Wait()
}

// server is a started server and its addresses, or a --target the user
// started (child nil).
type server struct {
	child       *child
	addr, admin string
	kind        string // loop | pool | other
	extPID      int    // a --target's pid=, 0 when not given
}

// pid is the server's process, 0 when not known (a --target without pid=).
func (s *server) pid() int {
	if s.child != nil {
		return s.child.cmd.Process.Pid
	}
	return s.extPID
}

// alive says whether the server still runs: the kit's own while its
// process has not exited; a --target while its process exists (pid=) or,
// without one, while it accepts connections.
func (s *server) alive() bool {
	switch {
	case s.child != nil:
		return s.child.alive()
	case s.extPID > 0:
		return processRuns(s.extPID)
	}
	return answers(s.addr)
}

// exitErr says how the server ended.
func (s *server) exitErr() error {
	if s.child != nil {
		return s.child.exitErr()
	}
	if s.extPID > 0 {
		return fmt.Errorf("process %d (the target's pid=) no longer exists", s.extPID)
	}
	return fmt.Errorf("%s no longer accepts connections", s.addr)
}

// stop ends a server the kit started; a --target is the user's to stop.
func (s *server) stop(sig os.Signal, grace time.Duration) {
	if s.child != nil {
		s.child.stop(sig, grace)
	}
}

// startServer starts a server on free loopback ports, waits for its ready
// file and until it answers /fast, and warms a Java server up; a --target
// is already running and is only looked up.
func (p *procs) startServer(ctx context.Context, s Server, block results.Block, o Options) (*server, error) {
	if s.External {
		for _, t := range o.Targets {
			if t.Name == s.Name {
				srv := externalServer(s, t.Addr)
				if !srv.alive() {
					return nil, fmt.Errorf("the target %s: %v", s.Name, srv.exitErr())
				}
				return srv, nil
			}
		}
		return nil, fmt.Errorf("no --target named %s", s.Name)
	}
	p.mu.Lock()
	p.serial++
	readyFile := filepath.Join(p.readyDir, fmt.Sprintf("%s.%d.ready", s.Name, p.serial))
	p.mu.Unlock()
	defer os.Remove(readyFile)
	name, args := serverCommand(s, block, o, readyFile)
	c, err := p.startEnv("server", name, serverEnv(o), nil, args...)
	if err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) (*server, error) {
		c.stop(syscall.SIGTERM, time.Second)
		return nil, fmt.Errorf(format, a...)
	}
	// A JVM takes a second or two to start: the limit is generous.
	rf, err := ready.Wait(ctx, readyFile, c.done, 30*time.Second)
	switch {
	case errors.Is(err, ready.ErrEnded):
		return nil, fmt.Errorf("%s %s exited at start: %w", name, strings.Join(args, " "), c.exitErr())
	case ctx.Err() != nil:
		return fail("%w", ctx.Err())
	case err != nil:
		// What it said last may be why (a database slow to let it in).
		if t := c.stderr.String(); t != "" {
			return fail("%s did not say it listens: %v; its stderr ends:\n    %s", name, err, strings.ReplaceAll(t, "\n", "\n    "))
		}
		return fail("%s did not say it listens: %v", name, err)
	}
	srv := &server{child: c, addr: rf.Addr, admin: rf.Admin, kind: s.Kind}
	// It listens; wait until it answers.
	probe := client.New(srv.addr, "/fast", time.Second)
	defer probe.Close()
	var r client.Response
	for i := 0; ; i++ {
		if err := probe.Do(&r); err == nil {
			break
		} else if i > 50 || !c.alive() {
			return fail("%s on %s does not answer /fast: %v", name, srv.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if jvmServer(s) {
		if err := warm(ctx, srv.addr, o.JVMWarmup); err != nil && ctx.Err() == nil {
			return fail("%s: %v", name, err)
		}
	}
	return srv, nil
}

// cpuSets splits the machine for --pin: the first half for servers, the
// rest for generators.
func cpuSets(n int) (server, gen string, err error) {
	if n < 2 {
		return "", "", fmt.Errorf("run.sh: --pin needs at least 2 CPUs, this machine has %d", n)
	}
	half := n / 2
	return rangeList(0, half-1), rangeList(half, n-1), nil
}

func rangeList(a, b int) string {
	if a == b {
		return strconv.Itoa(a)
	}
	return fmt.Sprintf("%d-%d", a, b)
}

// checkPinned verifies that every thread of pid may run only on cpus.
func checkPinned(pid int, cpus string) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // it ended (and was reaped) since it was started: no thread runs anywhere
	}
	if err != nil {
		return err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != cpus {
				return fmt.Errorf("thread %s of process %d may run on CPUs %s, not only %s", t.Name(), pid, strings.TrimSpace(v), cpus)
			}
		}
	}
	return nil
}

// externalServer is a --target as a running server: nothing to start or
// stop; alive while its process exists (pid=) or it accepts connections.
func externalServer(s results.Server, addr string) *server {
	return &server{addr: addr, kind: s.Kind, extPID: s.PID}
}

// answers says whether something accepts connections at addr.
func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
