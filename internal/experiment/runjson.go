package experiment

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
)

func newRun(plan Plan, start time.Time) *results.Run {
	o := plan.Options
	env := results.ReadEnv()
	run := &results.Run{
		Schema: results.RunSchema,
		// Until the run ends and says otherwise: a run killed outright
		// (SIGKILL, a crash) leaves this behind.
		Partial:       true,
		PartialReason: "unfinished: the run was still going when this was written, or was killed before it ended",
		Params: results.RunParams{
			Block: o.Block, StallBlock: o.StallBlock, Conc: o.Conc, DurationNs: int64(o.Duration),
			WarmupNs: int64(o.Warmup), Engines: o.Engines, Servers: o.Servers, Phases: o.Phases, Repeat: o.Repeat,
			Pin: o.Pin, Quick: o.Quick, Args: o.Args, Loops: o.Loops, PoolSlots: o.Slots, ProbeEveryNs: int64(o.ProbeInterval),
			BlockMode: o.BlockMode, DBPool: dbPool(o), DB: o.dbDesc, OffloadWorkers: o.Slots, AsyncDelayNs: int64(o.Delay), StallConns: stallConnsPerLoop * o.Loops,
			StallIntervalNs: int64(stallInterval), TraceCallers: o.TraceCallers, TraceConns: traceConnsPerLoop * o.Loops,
			Targets: targetServers(o.Targets), SweepEndpoint: o.SweepEndpoint, Stage: o.Stage, SlipBlock: slipBlock(o),
		},
		Manifest: results.Manifest{
			GitCommit: gitCommit(), GoVersion: goVersion(), Kernel: env.Kernel, CPUModel: env.CPUModel, Cores: env.NumCPU,
			StartUnixNs: start.UnixNano(), StartUTC: start.UTC().Format(time.RFC3339Nano), ExpectedNs: int64(plan.Expected()),
		},
		Processes: []results.Process{},
	}
	for rep := 1; rep <= o.Repeat; rep++ {
		for _, s := range plan.Steps {
			run.Measurements = append(run.Measurements, results.Measurement{Step: s, Repeat: rep, Status: "pending"})
		}
	}
	return run
}

func gitCommit() string {
	out, err := toolOutput("git", "rev-parse", "HEAD")
	if err != nil {
		return "unknown (not a git checkout)"
	}
	s := strings.TrimSpace(string(out))
	if st, err := toolOutput("git", "status", "--porcelain", "--untracked-files=no"); err == nil && len(st) > 0 {
		s += " (with uncommitted changes)"
	}
	return s
}

func goVersion() string {
	if out, err := toolOutput("go", "env", "GOVERSION"); err == nil {
		return strings.TrimSpace(string(out))
	}
	return runtime.Version()
}

// toolOutput is what a command the manifest asks (git, go) prints, within
// toolLimit, and waited for toolWaitDelay at most once it has ended: a
// child of its left holding its output does not hold the run.
func toolOutput(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = toolWaitDelay
	out, err := cmd.Output()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // it answered and ended; what it left behind kept the pipe
	}
	return out, err
}
