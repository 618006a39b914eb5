package experiment

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bystander-kit/bystander/examples/java"
	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// needJava skips outside CI when Java or the libraries are missing; CI
// installs them, so there it fails.
func needJava(t *testing.T) {
	t.Helper()
	if m := java.Missing(); m != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: .ci/run installs them", m)
		}
		t.Skipf("%s; CI installs them", m)
	}
}

// TestPublishedServers: the published experiment on its own servers,
// started by the kit like its own: Netty stalls exactly the connections on
// its blocked loops, Tomcat none (or a row says the machine was too busy to
// judge it); two pool-kind servers (the kit's pool
// and Tomcat) keep their offload rows and files apart; every Java server
// is warmed up and stopped, nothing is left running.
func TestPublishedServers(t *testing.T) {
	needJava(t)
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	// Two loops: Netty's k = 1, 2 stall as four would, in two steps fewer
	// (each a JVM started and looked at from outside).
	o, err := tryOpts(func(o *Options) {
		quick(o)
		o.Phases, o.Servers, o.Conc, o.Loops = []string{"stall", "offload"}, []string{"pool", "netty", "tomcat"}, []int{16}, 2
		o.JVMWarmup = ms(300) // what is asserted does not depend on the JIT
		o.Out, o.Bin = out, bin
	})
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stdout); code != 0 {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	run, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	noOrphans(t, run)
	files := map[string]string{}
	for _, m := range run.Measurements {
		if m.Status != "ok" {
			t.Errorf("%s: %s: %s", m.ID, m.Status, m.Reason)
		}
		for _, f := range []string{m.LoadFile, m.ProbeFile, m.PerConnFile} {
			if f == "" {
				continue
			}
			if other, ok := files[f]; ok {
				t.Errorf("%s and %s share %s", m.ID, other, f)
			}
			files[f] = m.ID
		}
	}
	f := findings.Compute(out, run)
	pools := map[string]bool{}
	for _, r := range f.Offload {
		if r.Step.Variant == "pool" && r.OK() {
			pools[r.Step.Server.Name] = true
		}
	}
	if !pools["pool"] || !pools["tomcat"] {
		t.Errorf("offload rows of the two pools: %v", pools)
	}
	for _, r := range f.Stall {
		if r.Step.Server.Name == "netty" && r.Step.Server.Workers != 2 {
			t.Errorf("netty with %d loops, want --loops 2", r.Step.Server.Workers)
		}
	}
	// Exact, or said to be too busy to judge (beside noisy neighbours a
	// row of Tomcat's once was): never silently wrong.
	exactOrTooBusy(t, f)
	heldFromOutside(t, f)
	for _, want := range []string{"Thread.sleep", "offload-tomcat-pool", "This run beside the published"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the terminal lacks %q", want)
		}
	}
}

// TestNoJava: without the Java packages, --servers=netty is refused before
// anything runs, with the one command that installs them.
func TestNoJava(t *testing.T) {
	t.Setenv("BYSTANDER_JAVA_JARS", t.TempDir())
	out := filepath.Join(t.TempDir(), "run")
	o, err := tryOpts(func(o *Options) { o.Servers, o.Out, o.Bin = []string{"loop", "netty"}, out, kit(t) })
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runCode(context.Background(), o, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), java.Install) {
		t.Errorf("the refusal does not give the command that installs Java:\n%s", stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run left its directory behind")
	}
}

// heldFromOutside: on the Java servers, with k blockers, the outside view
// names every one of Netty's k blocked loops with its whole thread name,
// in Thread.sleep at the server's blocking call (the looks find the loop
// held and the stacks say where; on a machine so busy that the blockers'
// own calls come slowly, the looks can find a loop waiting for the next
// call too often to say so, and the stacks alone find it in the call); on
// Tomcat the threads it found in that call at one moment, at most k,
// beside the rest of its 200 free (none found, on a step too busy to judge).
func heldFromOutside(t *testing.T, f *findings.Findings) {
	t.Helper()
	// Where the blocking call sleeps: the line of Thread.sleep in the
	// servers' Protocol.java.
	src, err := os.ReadFile("../../examples/java/Protocol.java")
	if err != nil {
		t.Fatal(err)
	}
	line := 1 + bytes.Count(src[:bytes.Index(src, []byte("Thread.sleep(ns / 1_000_000L)"))], []byte("\n"))
	at := fmt.Sprintf("bystander.Protocol.block (Protocol.java:%d)", line)
	for _, r := range f.Stall {
		name := r.Step.Server.Name
		if (name != "netty" && name != "tomcat") || r.Step.K == 0 {
			continue
		}
		var where []string
		for _, c := range r.Culprits {
			if c.Culprit().Short() != at || c.State != "Thread.sleep" {
				t.Errorf("k=%d %s: %s", r.Step.K, name, c.Words())
			}
			where = append(where, c.Thread)
		}
		said := strings.Join(r.Outside, "\n")
		if strings.Contains(said, "Thread.print did not answer within") && len(r.Culprits) == 0 {
			// A JVM that answered no stack within its time on a machine
			// too busy (seen at 80-95% taken by other processes): said,
			// and nothing named, which is all the view may do.
			t.Logf("k=%d %s: no Java stacks, said: %s", r.Step.K, name, said)
			continue
		}
		switch name {
		case "netty":
			if len(r.Culprits) != r.Step.K {
				t.Errorf("k=%d netty: held %q, want %d loops\n%s", r.Step.K, where, r.Step.K, said)
			}
			for _, c := range r.Culprits {
				if !strings.HasPrefix(c.Thread, "nioEventLoopGroup-") {
					t.Errorf("k=%d netty: %s", r.Step.K, c.Words())
				}
			}
			if want := fmt.Sprintf("%d of %d nioEventLoopGroup-", r.Step.K, r.Step.Server.Workers); !strings.Contains(said, want) {
				t.Errorf("k=%d netty: the outside view said %q, want %q", r.Step.K, said, want)
			}
		case "tomcat":
			// On a machine too busy to judge the step's connections, the
			// blockers' own calls come slowly, and the looks may find no
			// thread held at two in three: said, never a wrong thread.
			busy := r.Judged == 0 && len(r.Unjudged) > 0 && strings.Contains(r.Unjudged[0].Why, "machine too busy to judge")
			if len(r.Culprits) > r.Step.K || len(r.Culprits) == 0 && !busy {
				t.Errorf("k=%d tomcat: held %q, want 1 to %d threads\n%s", r.Step.K, where, r.Step.K, said)
			} else if len(r.Culprits) == 0 {
				t.Logf("k=%d tomcat: no thread held found, the step too busy to judge: %s", r.Step.K, said)
			}
			if !strings.Contains(said, " of 200 http-nio-") || !strings.Contains(said, "free (waiting for work)") {
				t.Errorf("k=%d tomcat: the outside view said %q", r.Step.K, said)
			}
		}
		if !strings.Contains(said, "stopped the JVM") {
			t.Errorf("k=%d %s: the JVM's pause is not said: %q", r.Step.K, name, said)
		}
	}
}
