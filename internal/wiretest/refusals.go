package wiretest

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/h1"
)

// Refusal is a request and what every server of the kit must answer it
// with: the status, and whether the connection is then closed.
type Refusal struct {
	Name, Req string
	Status    int
	Closes    bool
}

// Refusals is the input table both servers are tested against: every
// malformed request of h1.BadRequests (answered, then closed), and the
// well-formed requests the protocol refuses or must still answer (kept alive).
func Refusals() []Refusal {
	var out []Refusal
	for _, c := range h1.BadRequests() {
		out = append(out, Refusal{c.Name, c.Req, c.Status, true})
	}
	return append(out,
		Refusal{"POST", "POST /fast HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi", 405, false},
		Refusal{"DELETE", "DELETE /slow HTTP/1.1\r\nHost: t\r\n\r\n", 405, false},
		Refusal{"unknown path", "GET /nope HTTP/1.1\r\nHost: t\r\n\r\n", 404, false},
		Refusal{"path prefix", "GET /fastest HTTP/1.1\r\nHost: t\r\n\r\n", 404, false},
		Refusal{"absolute-form, unknown path", "GET http://t HTTP/1.1\r\nHost: t\r\n\r\n", 404, false},
		Refusal{"absolute-form", "GET http://t/fast HTTP/1.1\r\nHost: t\r\n\r\n", 200, false},
		Refusal{"block unparsable", "GET /slow?block=abc HTTP/1.1\r\nHost: t\r\n\r\n", 400, false},
		Refusal{"block without unit", "GET /slow?block=5 HTTP/1.1\r\nHost: t\r\n\r\n", 400, false},
		Refusal{"block negative", "GET /slow?block=-5ms HTTP/1.1\r\nHost: t\r\n\r\n", 400, false},
		Refusal{"block above max", "GET /offload?block=1h HTTP/1.1\r\nHost: t\r\n\r\n", 400, false},
		Refusal{"delay unparsable", "GET /async?delay=soon HTTP/1.1\r\nHost: t\r\n\r\n", 400, false},
		Refusal{"delay above max", "GET /async?delay=11s HTTP/1.1\r\nHost: t\r\n\r\n", 400, false},
		Refusal{"bad escape", "GET /slow?block=%zz HTTP/1.1\r\nHost: t\r\n\r\n", 400, false},
	)
}

// Differ is the answer a server gives instead of the table's where RFC 9112
// allows both, and why.
type Differ struct {
	Status int
	Why    string
}

// CheckRefusals sends each case of Refusals on its own connection to addr
// while a bystander connection keeps using the server: each gets its status
// and a one-line reason, closes where it must, and the bystander never
// notices. differs names the cases the server answers otherwise.
func CheckRefusals(t *testing.T, addr string, differs map[string]Differ) {
	t.Helper()
	by := Dial(t, addr)
	for _, tc := range Refusals() {
		c := Dial(t, addr)
		a, err := c.Raw(tc.Req, "GET")
		if d, ok := differs[tc.Name]; ok {
			t.Logf("%s: %d %v (%s)", tc.Name, a.Status, err, d.Why)
			if err == nil && a.Status != d.Status {
				t.Errorf("%s: status %d, want %d (%s)", tc.Name, a.Status, d.Status, d.Why)
			}
		} else {
			checkRefusal(t, c, tc, a, err)
		}
		if b := by.MustGet("/fast"); b.Status != 200 {
			t.Fatalf("after %s the bystander got %d", tc.Name, b.Status)
		}
	}
}

func checkRefusal(t *testing.T, c *Conn, tc Refusal, a Answer, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", tc.Name, err)
		return
	}
	if a.Status != tc.Status {
		t.Errorf("%s: status %d %q, want %d", tc.Name, a.Status, a.Body, tc.Status)
	}
	if a.Body == "" || strings.Contains(strings.TrimSuffix(a.Body, "\n"), "\n") {
		t.Errorf("%s: reason %q is not one line", tc.Name, a.Body)
	}
	if tc.Closes {
		if !a.Closed || !c.EOF() {
			t.Errorf("%s: connection left open after %d", tc.Name, a.Status)
		}
	} else if b := c.MustGet("/fast"); b.Status != 200 {
		t.Errorf("%s: the same connection then got %d", tc.Name, b.Status)
	}
}

// CheckPortInUse: a server binary given a taken --addr says so in one line
// on stderr and exits with status 1.
func CheckPortInUse(t *testing.T, bin string, args ...string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(bin, append([]string{"--addr", ln.Addr().String(), "--admin", ""}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("%v: exit %v, want status 1", args, err)
	}
	msg := strings.TrimSpace(stderr.String())
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "already in use") || !strings.Contains(msg, ln.Addr().String()) {
		t.Fatalf("%v: stderr %q, want one line naming the address", args, msg)
	}
}

// CheckSignalStops: SIGTERM and SIGINT stop a server binary within 1 s,
// even while a request is inside a 5 s block.
func CheckSignalStops(t *testing.T, bin string, args ...string) {
	t.Helper()
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		addr := FreeAddr(t)
		cmd := Start(t, bin, append([]string{"--addr", addr, "--admin", "127.0.0.1:0"}, args...)...)
		c := Dial(t, addr)
		c.MustGet("/fast")
		_, _ = io.WriteString(c.C, "GET /slow?block=5s HTTP/1.1\r\nHost: t\r\n\r\n")
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		_ = cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v %v: exit %v, want 0", args, sig, err)
			}
			// It stops without waiting for the 5 s call to end (it gives a
			// blocked loop 900 ms); how soon is the machine's business.
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("%v %v: stopped after %s, as if it waited for the blocked loop", args, sig, d)
			}
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%v %v: still running 3 s after the signal", args, sig)
		}
	}
}
