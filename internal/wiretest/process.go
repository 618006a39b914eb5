package wiretest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/ready"
)

var builds sync.Map // package dir -> *built

type built struct {
	once sync.Once
	path string
	err  error
}

// Build compiles the command in dir (relative to the test's package, "."
// for itself) once per test binary and returns the executable's path.
func Build(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := builds.LoadOrStore(abs, &built{})
	b := v.(*built)
	b.once.Do(func() {
		tmp, err := os.MkdirTemp("", "bystander-build")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(tmp, filepath.Base(abs))
		out, err := exec.Command("go", "build", "-o", b.path, abs).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", abs, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// FreeAddr returns a loopback address with a port free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Start runs a server (a binary, or an interpreter and its script) with
// --ready-file and waits for its ready file (internal/ready): the kit's
// servers and its examples in other runtimes all write one. The process
// is interrupted and waited for when the test ends.
func Start(t testing.TB, bin string, args ...string) *exec.Cmd {
	t.Helper()
	rf := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(bin, append(args, "--ready-file", rf)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		}
	})
	// Its stdout ends when it exits: that, not a Wait the test may want to
	// make itself, says a server ended before it was ready.
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, out); close(ended) }()
	if _, err := ready.Wait(context.Background(), rf, ended, time.Minute); err != nil {
		t.Fatalf("%s did not start: %v", filepath.Base(bin), err)
	}
	return cmd
}

// StartServer builds the kit's server command in dir, starts it on a free
// loopback port with the admin listener off, and returns its address and
// process (stopped when the test ends).
func StartServer(t testing.TB, dir string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	addr := FreeAddr(t)
	cmd := Start(t, Build(t, dir), append([]string{"--addr", addr, "--admin", ""}, args...)...)
	return addr, cmd
}

// Noisy starts n of the kit's noisy neighbours (internal/cmd/noisy: each
// runs 2 ms and sleeps 0.5 ms, as a browser or an IDE does) from the
// binary noisy for up to d, and ends them when the test ends.
func Noisy(t testing.TB, noisy string, n int, d time.Duration) {
	t.Helper()
	cmd := exec.Command(noisy, "--procs", strconv.Itoa(n), "--for", d.String())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
}
