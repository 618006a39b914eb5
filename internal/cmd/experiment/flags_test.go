package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/experiment"
)

// The flags' own tests: what run.sh's flags read into the experiment's
// Options, the defaults that follow the flags given, and every refusal as
// one line. The experiment's tests build Options by fields.

var now = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// TestDefaultsAreTheFlags: no flags read are experiment.Defaults, the
// run directory aside (of the moment), so the experiment's tests, which
// start from Defaults, measure what run.sh does (and TestPlanGolden pins
// its plan); --stage is Defaults with the stage's phases.
func TestDefaultsAreTheFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		edit func(o *experiment.Options)
	}{
		{nil, func(*experiment.Options) {}},
		{[]string{"--stage"}, func(o *experiment.Options) { o.Stage, o.Phases = true, experiment.StagePhases() }},
	} {
		got, err := parseFlags(append(tc.args, "--bin", "/kit/bin"), io.Discard, now)
		if err != nil {
			t.Fatal(err)
		}
		want := experiment.Defaults()
		tc.edit(&want)
		want.Bin, want.Out, want.OutFresh, want.Args = "/kit/bin", experiment.DefaultOut("/kit/bin", now), true, tc.args
		if want.Args == nil {
			want.Args = []string{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q reads\n%+v\nwant\n%+v", tc.args, got, want)
		}
	}
}

// TestSettle: the defaults that follow the flags given, and the command
// line recorded without --bin (run.sh's).
func TestSettle(t *testing.T) {
	o, err := parseFlags(nil, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := parseFlags([]string{"--bin", "bin", "--conc=4", "--bin=x"}, io.Discard, now); !slices.Equal(a.Args, []string{"--conc=4"}) {
		t.Errorf("recorded args %v", a.Args)
	}
	q, _ := parseFlags([]string{"--quick"}, io.Discard, now)
	if q.Duration >= o.Duration || q.Warmup >= o.Warmup || q.JVMWarmup != o.JVMWarmup/2 {
		t.Errorf("--quick: duration %s warm-up %s JVM warm-up %s", q.Duration, q.Warmup, q.JVMWarmup)
	}
	q, _ = parseFlags([]string{"--quick", "--duration", "3s"}, io.Discard, now)
	if q.Duration != 3*time.Second {
		t.Errorf("--quick overrode an explicit --duration: %s", q.Duration)
	}
	c, err := parseFlags([]string{"--loops", "3", "--block", "8ms"}, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.TraceCallers != 6 || c.SlipBlock.D() != 80*time.Millisecond {
		t.Errorf("--loops 3 --block 8ms: %d trace callers, slip block %s; want 2 per loop and 10x the block", c.TraceCallers, c.SlipBlock)
	}
	c, err = parseFlags([]string{"--loops", "3", "--trace-callers", "5", "--block", "8ms", "--slip-block", "30ms"}, io.Discard, now)
	if err != nil || c.TraceCallers != 5 || c.SlipBlock.D() != 30*time.Millisecond {
		t.Errorf("--trace-callers 5 --slip-block 30ms: %d, %s, %v", c.TraceCallers, c.SlipBlock, err)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--block=0"}, {"--block=-5ms"}, {"--block=fast"}, {"--block=11s"},
		{"--conc=4,x"}, {"--conc=0"}, {"--conc="}, {"--conc=4,4"},
		{"--engines=netty"}, {"--servers=loop,jetty"}, {"--phases=sweep,nap"}, {"--phases="},
		{"--duration=100ms"}, {"--warmup=-1s"}, {"--repeat=0"}, {"--repeat=21"},
		{"--stall-block=0s"}, {"extra"}, {"--nope"},
		{"--block-mode=nap"}, {"--loops=0"}, {"--loops=65"}, {"--slots=0"}, {"--delay=-1ms"}, {"--probe-interval=0s"},
		{"--db-pool", "5"}, {"--pg-url", "postgres://u@127.0.0.1:5432/db"}, {"--block-mode", "postgres", "--db-pool", "0"},
		{"--trace-callers=0"}, {"--slots=6667"}, {"--slots=10000"}, {"--slip-block=0"}, {"--slip-block=11s"}, {"--slip-block=-50ms"},
	} {
		if _, err := parseFlags(args, io.Discard, now); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestAsIsFlags: --load and --bystander go together, with a --target,
// without --sweep-endpoint or --stage; a bad REQUEST is one line (a
// targets file's with its line number) before anything runs; pprof= a
// listener under the target's URL's rules (the plan they make:
// internal/experiment's TestAsIsPlan).
func TestAsIsFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("GET /a\n\nGET /b\nX-Tag 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nobody := filepath.Join(dir, "nobody.txt")
	if err := os.WriteFile(nobody, []byte("POST /login\n@missing.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tgt := []string{"--target", "svc=http://127.0.0.1:8090"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--load", "POST /login"}, "--load goes with --bystander"},
		{[]string{"--bystander", "GET /health"}, "--bystander goes with --load"},
		{[]string{"--load", "POST /login", "--bystander", "GET /health", "--sweep-endpoint", "/slow"}, "--load goes without --sweep-endpoint"},
		{[]string{"--load", "POST /login", "--bystander", "GET /health", "--stage"}, "your service alone: add --servers="},
		{[]string{"--load", "@" + bad, "--bystander", "GET /health"}, "bad.txt:4:"},
		{[]string{"--load", "GET /x", "--bystander", "GET https://127.0.0.1:8090/h"}, "plain http://"},
		{[]string{"--load", "GET http://127.0.0.1:9/x", "--bystander", "GET /h"}, "not the target"},
		{[]string{"--load", "@" + nobody, "--bystander", "GET /h"}, "nobody.txt:2: "},
		{[]string{"--load", "GET /x", "--bystander", "GET /h", "--target", "tls=https://127.0.0.1:8443"}, "plain HTTP"},
	} {
		_, err := parseFlags(append(slices.Clone(tgt), tc.args...), io.Discard, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "run.sh: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with %q", tc.args, err, tc.want)
		}
	}
	// pprof=: a Go service's profiler, by its listener, under the
	// target's URL's rules, with --load only.
	for _, tc := range []struct{ target, want string }{
		{"svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060", ""},
		{"svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060/debug/pprof/", ""},
		{"svc=http://127.0.0.1:8090,pprof=https://127.0.0.1:6060", "plain http:// port"},
		{"svc=http://127.0.0.1:8090,pprof=http://u:secret@127.0.0.1:6060", "credentials"},
		{"svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060/debug/vars", "the listener that serves /debug/pprof/"},
		{"svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060?seconds=9", "the listener that serves /debug/pprof/"},
		{"svc=http://127.0.0.1:8090,pprof=http://127.0.0.1", "the listener that serves /debug/pprof/"},
		{"svc=http://127.0.0.1:8090,pprof=", "the listener that serves /debug/pprof/"},
		{"svc=http://127.0.0.1:8090,pprof=http://10.1.2.3:6060", "not a loopback address"},
	} {
		o, err := parseFlags([]string{"--target", tc.target, "--load", "GET /x", "--bystander", "GET /h"}, io.Discard, now)
		switch {
		case tc.want == "" && (err != nil || o.Targets[0].Server.Pprof != "http://127.0.0.1:6060" && o.Targets[0].Server.Pprof != "http://127.0.0.1:6060/debug/pprof"):
			t.Errorf("%s: %v, targets %+v", tc.target, err, o.Targets)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "run.sh: ") || strings.Contains(err.Error(), "secret")):
			t.Errorf("%s: %v, want one line with %q", tc.target, err, tc.want)
		}
	}
	if _, err := parseFlags([]string{"--target", "svc=http://127.0.0.1:8090,pprof=http://127.0.0.1:6060"}, io.Discard, now); err == nil || !strings.Contains(err.Error(), "pprof= watches a service measured as it is") {
		t.Errorf("pprof= without --load: %v", err)
	}
	if _, err := parseFlags([]string{"--load", "GET /x", "--bystander", "GET /h"}, io.Discard, now); err == nil || !strings.Contains(err.Error(), "give one") {
		t.Errorf("--load without a --target: %v", err)
	}

}

func TestTargetFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" ok, else in the error
	}{
		{[]string{"--target", "node=http://127.0.0.1:8090", "--servers="}, ""},
		{[]string{"--target", "node=http://127.0.0.1:8090/", "--target", "b=http://localhost:1,loops=2,offload=8"}, ""},
		{[]string{"--target", "node=http://127.0.0.1:8090,workers=10"}, ""},
		{[]string{"--servers="}, "nothing to measure"},
		{[]string{"--target", "node"}, "NAME=URL"},
		{[]string{"--target", "Node=http://127.0.0.1:1"}, "lower-case"},
		{[]string{"--target", "pool=http://127.0.0.1:1"}, "taken"},
		{[]string{"--target", "a=http://127.0.0.1:1", "--target", "a=http://127.0.0.1:2"}, "taken"},
		{[]string{"--target", "a=http://127.0.0.1:1/fast"}, "base URL"},
		{[]string{"--target", "a=https://127.0.0.1:1"}, "plain http:// port"},
		{[]string{"--target", "a=http://127.0.0.1:1,loops=0"}, "positive"},
		{[]string{"--target", "a=http://127.0.0.1:1,threads=4"}, "unknown fact"},
		{[]string{"--target", "a=http://127.0.0.1:1,loops=2,workers=4"}, "both"},
		{[]string{"--target", "a=http://10.1.2.3:80"}, "loopback"},
		{[]string{"--target", "a=http://10.1.2.3:80", "--allow-remote"}, ""},
		{[]string{"--target", "a=http://10.1.2.3:80,pid=1", "--allow-remote"}, "remote"},
		{[]string{"--target", "a=http://127.0.0.1:1,pid=4194000"}, "no such process"},
		{[]string{"--target", "a=http://user:secret@127.0.0.1:1"}, "credentials"},
		{[]string{"--target", "a=http://user@127.0.0.1:1"}, "credentials"},
	} {
		_, err := parseFlags(tc.args, &bytes.Buffer{}, time.Now())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("%v: the error repeats the password: %v", tc.args, err)
		}
	}
}

func TestStageFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--stage"}, ""},
		{[]string{"--stage", "--auto", "--open", "--stage-addr", "127.0.0.1:0"}, ""},
		{[]string{"--stage", "--replay", "results/x"}, ""},
		{[]string{"--auto"}, "go with --stage"},
		{[]string{"--stage", "--auto-wait", "5s"}, "goes with --auto"},
		{[]string{"--stage", "--auto", "--auto-wait", "-1s"}, "0 or more"},
		{[]string{"--stage", "--auto", "--auto-wait", "0"}, ""},
		{[]string{"--replay", "x"}, "go with --stage"},
		{[]string{"--stage-addr", "127.0.0.1:1"}, "go with --stage"},
		{[]string{"--stage", "--repeat", "2"}, "repeat a screen with R"},
		{[]string{"--stage", "--phases", "sweep"}, "leave --phases out"},
	} {
		o, err := parseFlags(tc.args, &bytes.Buffer{}, time.Now())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		case tc.want == "" && !slices.Equal(o.Phases, experiment.StagePhases()):
			t.Errorf("%v: phases %v", tc.args, o.Phases)
		}
	}
}

// TestOutWhereTheUserStands: a relative --out or --replay is the user's
// directory's, wherever run.sh lives, and is said whole; the default lands
// beside the kit's bin directory, as the README says.
func TestOutWhereTheUserStands(t *testing.T) {
	runsh, err := filepath.Abs(filepath.Join(root, "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	here := t.TempDir()
	t.Chdir(here)
	o, err := parseFlags([]string{"--out", "relrun", "--bin", "/opt/kit/bin"}, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(here, "relrun"); o.Out != want {
		t.Errorf("--out relrun is %q, want %q", o.Out, want)
	}
	o, err = parseFlags([]string{"--bin", "/opt/kit/bin"}, io.Discard, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(o.Out, "/opt/kit/results/") {
		t.Errorf("the default --out is %q, want it under /opt/kit/results", o.Out)
	}
	// run.sh hands the user's directory over: run from elsewhere, a
	// relative --replay is looked for where the user stands.
	cmd := exec.Command(runsh, "--stage", "--replay", "rec")
	cmd.Dir = here
	b, err := cmd.CombinedOutput()
	if want := filepath.Join(here, "rec"); !strings.Contains(string(b), "--replay "+want+":") {
		t.Errorf("run.sh from %s, --replay rec: %v: %s", here, err, b)
	}
}
