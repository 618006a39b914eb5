package experiment

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// callTimeout is loadgen's per-request timeout for calls that ask for
// these blocks: the longest and 10 s more (loadgen's own default is 10 s).
// A call may be asked to hold its worker for up to 10 s (--stall-block), and
// one answered after loadgen's timeout counts as a timeout, not an answer:
// blockers whose every call timed out got no answer and fail their step.
func callTimeout(blocks ...time.Duration) string {
	return (slices.Max(append(blocks, 0)) + 10*time.Second).String()
}

// toolSpec is a REQUEST flag's value as the tools are given it: a targets
// file by its absolute path, so that it is the file the run read whatever
// directory a tool starts in.
func toolSpec(v string) string {
	v = strings.TrimSpace(v)
	if file, ok := strings.CutPrefix(v, "@"); ok {
		return "@" + abs(strings.TrimSpace(file))
	}
	return v
}

// asked is the request target that asks a server for the step's block
// (/slow, /offload) or delay (/async): every server, the kit's or a
// --target, blocks or waits what the run says, whatever its own default.
func asked(endpoint string, d time.Duration) string {
	switch endpoint {
	case "/slow", "/offload":
		return endpoint + "?block=" + d.String()
	case "/async":
		return endpoint + "?delay=" + d.String()
	}
	return endpoint
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func openReport(w io.Writer, path string) {
	for _, opener := range []string{"xdg-open", "open"} {
		if p, err := exec.LookPath(opener); err == nil {
			if err := exec.Command(p, path).Start(); err == nil {
				return
			}
		}
	}
	fmt.Fprintf(w, "--open: no browser opener found (xdg-open); open %s yourself\n", path)
}

// The bounds of the run's waits for the commands it runs: toolLimit for
// one the manifest asks, toolWaitDelay for any command's output once the
// command has ended (or was ended).
const (
	toolLimit     = 10 * time.Second
	toolWaitDelay = time.Second
)

// abs is p made absolute against the working directory (p as it is when
// that cannot be read).
func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// processRuns says whether pid is a process that has not ended: one that
// exists and is not a zombie (ended, not yet reaped by its parent).
func processRuns(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// slipTold is the file whose making tells the slip's load to slow the
// call (loadgen --switch-when).
func slipTold(dir string, s Step) string { return filepath.Join(dir, s.Phase, s.ID+".slow-now") }
