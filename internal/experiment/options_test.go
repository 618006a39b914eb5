package experiment

import (
	"testing"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

// The package's tests build Options by fields: run.sh's flags are the
// command's (internal/cmd/experiment, whose tests hold the flags' own).

// opts are the Options a test runs with: the defaults, edit, then what
// follows the others as run.sh's flags settle it (the trace's callers per
// loop, the slip's block, the default run directory), checked.
func opts(t *testing.T, edit func(o *Options)) Options {
	t.Helper()
	o, err := tryOpts(edit)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// tryOpts is opts with Validate's error said, not failed on.
func tryOpts(edit func(o *Options)) (Options, error) {
	o := Defaults()
	o.TraceCallers, o.SlipBlock = 0, 0
	if edit != nil {
		edit(&o)
	}
	if o.TraceCallers == 0 {
		o.TraceCallers = TraceCallersPerLoop * o.Loops
	}
	if o.SlipBlock == 0 {
		o.SlipBlock = SlipTimes * o.Block
	}
	if o.Out == "" {
		o.Out, o.OutFresh = DefaultOut(o.Bin, now), true
	}
	return o, o.Validate()
}

// quick is --quick: short durations (a test sets its own after it).
func quick(o *Options) {
	o.Quick, o.Duration, o.Warmup, o.JVMWarmup = true, QuickDuration, QuickWarmup, o.JVMWarmup/2
}

// onStage is --stage, with the stage's phases.
func onStage(o *Options) { o.Stage, o.Phases = true, StagePhases() }

// ms is a duration of n milliseconds.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// blk is a block of n milliseconds.
func blk(n int) results.Block { return results.Block(ms(n)) }
