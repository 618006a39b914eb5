package experiment

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/examples/java"
	"github.com/bystander-kit/bystander/internal/wiretest"
)

// freshBin copies the kit's programs into a directory of their own, so a
// run there builds the Java servers anew.
func freshBin(t *testing.T) string {
	t.Helper()
	src, dst := kit(t), t.TempDir()
	es, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// processesWith lists the pids of the processes whose command line holds s.
func processesWith(s string) []int {
	var out []int
	ds, _ := os.ReadDir("/proc")
	for _, d := range ds {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) && !strings.Contains(string(b), "\x00-test.") {
			out = append(out, pid)
		}
	}
	return out
}

// TestKilledDuringJavaBuild: kill -9 of the orchestrator while it builds
// the Java servers ends the build with it: no javac runs on, and no
// launcher is written into the kit's bin directory afterwards.
func TestKilledDuringJavaBuild(t *testing.T) {
	if m := java.Missing(); m != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(m)
		}
		t.Skip(m)
	}
	bin := freshBin(t)
	cmd := exec.Command(filepath.Join(bin, "experiment"), "--bin", bin, "--servers=netty", "--phases", "sweep", "--quick", "--out", filepath.Join(t.TempDir(), "run"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var javac []int
	for deadline := time.Now().Add(60 * time.Second); len(javac) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no javac was seen building into " + bin)
		}
		for _, pid := range processesWith(filepath.Join(bin, "java")) {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); !strings.Contains(string(b), "experiment") {
				javac = append(javac, pid)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(processesWith(filepath.Join(bin, "java"))) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the build runs on after the orchestrator was killed: %v", processesWith(filepath.Join(bin, "java")))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	for _, l := range java.Launchers {
		if _, err := os.Stat(filepath.Join(bin, "java", l)); err == nil {
			t.Errorf("%s was written into %s after the orchestrator was killed", l, bin)
		}
	}
}

// TestKilledLeavesNoReadyDir: a run killed outright leaves its servers'
// ready directory in the temporary space; the next run removes it.
func TestKilledLeavesNoReadyDir(t *testing.T) {
	bin := kit(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(filepath.Join(bin, "experiment"), "--bin", bin, "--servers=loop", "--phases", "sweep", "--quick", "--out", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	glob := filepath.Join(os.TempDir(), "bystander-ready-"+strconv.Itoa(cmd.Process.Pid)+"-*")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m, _ := filepath.Glob(glob); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no ready directory %s was made", glob)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if m, _ := filepath.Glob(glob); len(m) == 0 {
		t.Fatal("kill -9 left no ready directory: the test shows nothing")
	}
	// The next run, even one refused at once, removes it.
	next := exec.Command(filepath.Join(bin, "experiment"), "--bin", bin, "--servers=", "--target", "x=http://"+wiretest.FreeAddr(t), "--out", filepath.Join(t.TempDir(), "next"))
	_ = next.Run()
	if m, _ := filepath.Glob(glob); len(m) > 0 {
		t.Fatalf("the next run left the killed run's ready directory %v", m)
	}
}
