package main

import (
	"os"
	"path/filepath"
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

// TestTalkCommand: report --talk writes a recorded talk as one page that
// carries its echarts and its frames (no script from elsewhere), and
// refuses, writing nothing, where echarts cannot be inlined: a talk file
// is opened where there may be no network, so never from a CDN.
func TestTalkCommand(t *testing.T) {
	const rec = "../docs/talk-run" // a stage run: its recording
	out := filepath.Join(t.TempDir(), "talk.html")
	var stdout, stderr strings.Builder
	t.Setenv("BYSTANDER_CACHE", t.TempDir()) // an empty cache
	if rc := mainExit([]string{"--talk", rec, "--offline", "--out", out}, &stdout, &stderr); rc != 1 || !strings.Contains(stderr.String(), "--talk needs echarts inlined, never from a CDN") {
		t.Errorf("without echarts: exit %d %q", rc, stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a talk file was written without echarts: %v", err)
	}
	stderr.Reset()
	if rc := mainExit([]string{"--talk", t.TempDir(), "--offline"}, &stdout, &stderr); rc != 1 || !strings.Contains(stderr.String(), "made with ./run.sh --stage") {
		t.Errorf("a directory without a recording: exit %d %q", rc, stderr.String())
	}
	// With echarts at hand (the cache the other pages use), the file: the
	// page in internal/page's TestTalkFile is this one.
	t.Setenv("BYSTANDER_CACHE", "")
	stdout.Reset()
	stderr.Reset()
	if rc := mainExit([]string{"--talk", rec, "--offline", "--out", out}, &stdout, &stderr); rc != 0 {
		t.Skipf("echarts is not in the cache here (%s): run report --fetch", stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "window.bystanderTalk") || strings.Contains(string(b), "<script src=") {
		t.Errorf("the talk file does not carry its frames, or loads a script from elsewhere")
	}
}
