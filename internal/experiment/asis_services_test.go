package experiment

import (
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/examples/services"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/stall"
)

// The done-when tests of measuring a service as it is: the example
// services (examples/services), written as their users write them, started
// as real processes and measured with their own requests, --quick. Their
// assertions hold on a busy 2-core machine: a step the machine starved is
// "too busy to judge", said so, and then holds no count to check.

// asIsRun measures svc as it is with its blocking route as the load and
// GET /health as the bystander, at 1 and 4 callers (and more), and
// returns its findings.
func asIsRun(t *testing.T, svc *services.Service, conc string) findings.AsIs {
	t.Helper()
	load, err := svc.Blocking.Flag(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The kit's own servers take the names netty and tomcat.
	target := strings.Replace(svc.Target(), string(svc.Kind)+"=", "svc=", 1)
	out, run, stdout := runTargets(t, "--phases", "sweep", "--conc", conc, "--target", target, "--load", load, "--bystander", svc.Fast.String())
	for _, m := range run.Measurements {
		if m.Status != "ok" {
			t.Fatalf("%s: %s: %s\n%s", m.ID, m.Status, m.Reason, stdout.String())
		}
	}
	f, err := findings.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.AsIs) != 1 {
		t.Fatalf("%d servers measured as they are", len(f.AsIs))
	}
	a := f.AsIs[0]
	t.Logf("%s: %s; %s; stalled %s", svc.Kind, a.Text, a.CPUText(), a.StalledLine())
	for _, st := range a.Steps {
		// Every step counts its stalled connections, or says why not.
		if !st.Stalled.OK() && len(st.Unjudged) == 0 {
			t.Errorf("at %d callers: neither a count nor why", st.Step.Conc)
		}
	}
	return a
}

// judged is the step at conc callers when the rule could judge it; nil
// when the machine was too busy, or the 12 connections' prober was placed
// too late to share the load's window (logged), failing the test for any
// other reason.
func judged(t *testing.T, a findings.AsIs, conc int) *findings.AsIsStep {
	t.Helper()
	for i := range a.Steps {
		st := &a.Steps[i]
		if st.Step.Conc != conc {
			continue
		}
		if st.Stalled.OK() {
			return st
		}
		if !strings.HasPrefix(st.Unjudged[0], stall.TooBusy) && !strings.HasPrefix(st.Unjudged[0], findings.ConnsOffset) {
			t.Errorf("at %d callers not judged: %s", conc, st.Unjudged[0])
		}
		t.Logf("at %d callers: %s", conc, st.Unjudged[0])
		return nil
	}
	t.Fatalf("no step at %d callers", conc)
	return nil
}

// TestAsIsNetty: the Netty shop, whose balance route asks the ledger over
// a blocking socket from its event loop: its threads are held by the
// load; at 1 caller the 3 of its 12 bystander connections that share the
// caller's loop stalled, the other 9 did not; its call waits, off the CPU.
func TestAsIsNetty(t *testing.T) {
	a := asIsRun(t, services.Start(t, services.Netty, services.Options{}), "4")
	if st := judged(t, a, 1); st != nil {
		if a.Class != findings.ClassLoop || st.Stalled.Median() != 3 {
			t.Errorf("class %s (%s), %s stalled at 1 caller: want the 3 of 12 on the caller's loop", a.Class, a.Text, st.StalledText())
		}
	} else if a.Class != findings.ClassUnknown {
		t.Errorf("class %s without a verdict at 1 caller", a.Class)
	}
	if a.CPUBound || !a.CPUKnown {
		t.Errorf("the ledger call waits on a socket: %s", a.CPUText())
	}
}

// TestAsIsTomcat: the same shop on Tomcat's 200 threads: a pool that
// forgives the call; none of the bystander's 12 connections stalled up to
// its callers, far fewer than its pool's size, and its median from due
// stays near the connections' wait unloaded.
func TestAsIsTomcat(t *testing.T) {
	svc := services.Start(t, services.Tomcat, services.Options{})
	a := asIsRun(t, svc, "4,16")
	if a.Class != findings.ClassPool && a.Class != findings.ClassUnknown {
		t.Fatalf("class %s (%s), want a pool", a.Class, a.Text)
	}
	for _, conc := range []int{1, 4, 16} {
		st := judged(t, a, conc)
		if st == nil {
			continue
		}
		if st.Stalled.Median() != 0 {
			t.Errorf("at %d callers, %s stalled, fewer callers than its %d threads", conc, st.StalledText(), svc.Threads)
		}
		if a.Class == findings.ClassPool && conc > a.Forgives {
			t.Errorf("judged, none stalled at %d callers, but forgives up to %d only", conc, a.Forgives)
		}
		// Its bystander stays near its wait unloaded, where the machine
		// left the server its CPU: beside other tenants (or the load's
		// own generators filling the cores) a probe waits for a CPU too.
		// The least wait unloaded the sweep saw (a step without one is
		// left out, as findings leaves it out).
		p, unloaded := st.Fast.P50.Median(), 0.0
		for _, s := range a.Steps {
			if u := s.Unloaded.Median(); u > 0 && (unloaded == 0 || u < unloaded) {
				unloaded = u
			}
		}
		if unloaded == 0 {
			t.Errorf("at %d callers: no step has a wait unloaded", conc)
			continue
		}
		b := st.Bound()
		t.Logf("at %d callers: bystander p50 %.0fus, %.1fx its %.0fus unloaded; bound %s", conc, p, p/unloaded, unloaded, b.Line())
		// Over 2x and over 1 ms more than unloaded: a 0.2 ms wait doubled
		// is a scheduler's hiccup on 2 cores, a held thread adds the
		// ledger's 5 ms.
		if b != nil && b.Kind != "cpu" && !b.Shared && p > 2*unloaded && p > unloaded+1000 {
			t.Errorf("at %d callers, on a machine not shared, its bystander's median %.0fus is over 2x its %.0fus unloaded and 1 ms more", conc, p, unloaded)
		}
	}
}

// TestAsIsNode: Node.js's sign-in, hashing the password with pbkdf2Sync on
// its one loop: a thread the load holds, every bystander connection
// stalled behind it at 1 caller, and the call runs on a CPU.
func TestAsIsNode(t *testing.T) {
	// A sign-in of 60,000 iterations (some 20 ms): longer than what a busy
	// machine's starvation alone makes a connection wait, so that its
	// verdict at 1 caller is given beside other tenants too.
	a := asIsRun(t, services.Start(t, services.Node, services.Options{Iterations: 60000}), "4")
	if st := judged(t, a, 1); st != nil {
		if a.Class != findings.ClassLoop || st.Stalled.Median() != 12 {
			t.Errorf("class %s (%s), %s stalled at 1 caller: want every connection behind its one loop", a.Class, a.Text, st.StalledText())
		}
	}
	if !a.CPUBound {
		t.Errorf("pbkdf2Sync on the loop: %s", a.CPUText())
	}
}
