// Package examples tests the servers in other runtimes that speak the
// endpoint protocol: each must pass the conformance check.
package examples

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/bystander-kit/bystander/internal/conform"
	"github.com/bystander-kit/bystander/internal/wiretest"
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
