package prose

import (
	"testing"

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
