package main

import (
	"strings"
	"testing"
)

// Real runs of ./run.sh, kept as test data beside findings.
const (
	testRun    = "../internal/findings/testdata/run"
	nodeRun    = "../internal/findings/testdata/node-run"
	offloadRun = "../internal/findings/testdata/offload-run"
)

// TestCompareCommand: report --compare in the terminal, and its refusals.
func TestCompareCommand(t *testing.T) {
	var stdout, stderr strings.Builder
	if rc := mainExit([]string{"--compare", testRun, offloadRun}, &stdout, &stderr); rc != 0 {
		t.Fatalf("exit %d: %s", rc, stderr.String())
	}
	for _, want := range []string{"sweep endpoint: /slow vs /offload", "sweep loop-gnet 64 callers (/slow -> /offload)", "no test (n=1+1)", "A only: stall loop-gnet k=1"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the terminal lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, tc := range []struct {
		args []string
		rc   int
		why  string
	}{
		{[]string{"--compare", testRun}, 2, "two run directories"},
		{[]string{"--compare", testRun, "--out", "x.html"}, 2, "two run directories"},
		{[]string{"--compare", testRun, nodeRun, "--in", testRun}, 2, "takes no --in"},
		{[]string{"--compare", testRun, nodeRun}, 1, "no measurement in common"},
		{[]string{"--compare", testRun, t.TempDir()}, 1, "B ("},
	} {
		stdout.Reset()
		stderr.Reset()
		if rc := mainExit(tc.args, &stdout, &stderr); rc != tc.rc || !strings.Contains(stderr.String(), tc.why) {
			t.Errorf("%v: exit %d %q, want %d with %q", tc.args, rc, stderr.String(), tc.rc, tc.why)
		}
	}
}
