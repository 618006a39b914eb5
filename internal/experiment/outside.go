package experiment

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bystander-kit/bystander/internal/outside"
)

// The outside view's looks: a few, some apart, before the blockers come
// and again while they hold after the measured window; each Java stack
// dump bounded.
const (
	outsideLooks     = 3
	outsideHeldLooks = 8
	outsideEvery     = 40 * time.Millisecond
	outsideDumpLimit = 1500 * time.Millisecond
	// outsideRest is how long after a blocking call's due end its thread
	// is given to be back at rest, beyond the call itself.
	outsideRest = 200 * time.Millisecond
)

// outsideView looks at a server's threads from /proc (and a JVM's stacks)
// while the kit's blockers hold it.
type outsideView struct {
	*outside.Trace
	// dumps: a JVM's stacks are taken (jcmd has not refused this
	// server earlier in the run); refused tells the run when jcmd does.
	dumps   bool
	refused func()
}

// newOutsideView is the view of srv for a stall step with blockers: the kit's
// Java servers and a --target with pid= get one (the kit's Go loop servers
// name their culprits themselves, with loopwatch); nil otherwise. A JVM
// whose stacks jcmd refused once in the run (refusing attach) is not asked
// again: the refusal is said once, in the step it came in.
func newOutsideView(srv *server, s Step, no *noJcmd) *outsideView {
	pid := srv.pid()
	if s.K == 0 || pid <= 0 || !(jvmServer(s.Server) || s.Server.External) {
		return nil
	}
	name := s.Server.Name
	return &outsideView{Trace: outside.New(name, pid, time.Time{}), dumps: !no.has(name) && outside.IsJVM(pid), refused: func() { no.add(name) }}
}

// noJcmd are the servers whose stacks jcmd refused in a run.
type noJcmd struct {
	mu    sync.Mutex
	names map[string]bool
}

func (n *noJcmd) has(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.names[name]
}

func (n *noJcmd) add(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.names == nil {
		n.names = map[string]bool{}
	}
	n.names[name] = true
}

// before looks at the server at rest, before the blockers come: once the
// last call of the step before has ended. Its blockers stopped, but a loop
// can still be inside the call they last asked for, up to block long: a
// thread looked at then seems to have been held before they came (beside
// 4 noisy neighbours, one of Netty's four loops at k=4 was, and was not
// named).
func (v *outsideView) before(ctx context.Context, block time.Duration) {
	if v == nil {
		return
	}
	sleepUntil(ctx, time.Now().Add(block+outsideRest))
	v.LookBefore(ctx, outsideLooks, outsideEvery)
	if v.dumps {
		v.DumpJVMBefore(ctx, outsideDumpLimit)
		v.stopIfRefused()
	}
}

// stopIfRefused takes no more stacks once jcmd has refused one, in this
// step or later in the run.
func (v *outsideView) stopIfRefused() {
	if v.Refused() {
		v.dumps = false
		v.refused()
	}
}

// tail is how much longer the blockers hold for the view: its looks, and
// up to two stack dumps of a JVM.
func (v *outsideView) tail() time.Duration {
	switch {
	case v == nil:
		return 0
	case v.dumps:
		return outsideHeldLooks*outsideEvery + 2*outsideDumpLimit + 500*time.Millisecond
	}
	return outsideHeldLooks*outsideEvery + 200*time.Millisecond
}

// during takes the looks and stacks while the blockers hold (until
// blockersEnd) and writes the trace to rel in dir; it returns rel, or ""
// when it could not be written.
func (v *outsideView) during(ctx context.Context, dir, rel string, blockersEnd time.Time) string {
	v.BlockersEndNs = blockersEnd.UnixNano()
	v.LookDuring(ctx, outsideHeldLooks, outsideEvery, blockersEnd.Add(-50*time.Millisecond))
	if v.dumps {
		v.DumpJVM(ctx, outsideDumpLimit, blockersEnd.Add(-100*time.Millisecond))
		v.stopIfRefused()
	}
	b, err := json.Marshal(v.Trace)
	if err != nil {
		return ""
	}
	if err := os.WriteFile(filepath.Join(dir, rel), b, 0o644); err != nil {
		return ""
	}
	return rel
}
