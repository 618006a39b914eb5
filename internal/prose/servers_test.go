package prose

import (
	"testing"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// TestStepCeilingWords: behind fewer database connections than workers,
// the ceiling's words are theirs, as the pages label it.
func TestStepCeilingWords(t *testing.T) {
	pool := results.Server{Name: "pool", Kind: "pool", Workers: 200, DBConns: 10}
	loop := results.Server{Name: "loop-gnet", Kind: "loop", Workers: 4, DBConns: 10}
	for _, tc := range []struct {
		step results.Step
		text string
	}{
		{results.Step{Server: pool, Endpoint: "/slow", Block: 5e6}, "10 database connections / 5ms = 2,000 req/s"},
		{results.Step{Server: loop, Endpoint: "/slow", Block: 5e6}, "4 loops / 5ms = 800 req/s"},
		{results.Step{Server: loop, Endpoint: "/offload", Block: 5e6}, "10 database connections / 5ms = 2,000 req/s"},
		{results.Step{Server: results.Server{Name: "mine", Kind: "other", External: true}, Endpoint: "/slow", Block: 5e6}, ""},
	} {
		if got := StepCeiling(tc.step, 200); got != tc.text {
			t.Errorf("%s %s: %q, want %q", tc.step.Server.Name, tc.step.Endpoint, got, tc.text)
		}
	}
}

// TestWorkersWords: a ceiling's workers said by their kind, one without an
// s; a preset of a server measured as it is says the workers it behaves as.
func TestWorkersWords(t *testing.T) {
	for _, tc := range []struct {
		s    findings.ServerSummary
		text string
	}{
		{findings.ServerSummary{Kind: "loop", Workers: 4, SweepWorkers: 4}, "4 loops"},
		{findings.ServerSummary{Kind: "loop", Workers: 1, SweepWorkers: 1}, "1 loop"},
		{findings.ServerSummary{Kind: "pool", Workers: 200, SweepWorkers: 200}, "200 slots"},
		{findings.ServerSummary{Kind: "loop", Workers: 4, SweepWorkers: 200}, "200 offload workers"},
		{findings.ServerSummary{Kind: "pool", Workers: 200, SweepWorkers: 10, DBConns: 10, DBBound: true}, "10 database connections"},
	} {
		if got := CeilingNoun(tc.s); got != tc.text {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.text)
		}
	}
	if got := Workers(64, findings.WorkerCallers); got != "64 callers" {
		t.Errorf("callers: %q", got)
	}
	if got := PresetWorkers(findings.Preset{Workers: 4, Binds: findings.WorkerLoops}); got != "4 loops" {
		t.Errorf("a preset: %q", got)
	}
	if got := PresetWorkers(findings.Preset{Workers: 4, AsIs: true}); got != "4 workers it behaves as" {
		t.Errorf("a preset measured as it is: %q", got)
	}
}
