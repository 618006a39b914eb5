// Package experiment is the orchestrator behind run.sh: it turns flags into
// a plan of measurements, runs each server, load generator and prober as its
// own process on loopback, samples the servers' cost from /proc, writes every
// result into one run directory with an index (run.json), prints the story
// as tables, and hands the directory to the report.
//
// The run is a pipeline, read in this order:
//
//   - options.go and validate.go: Options, the typed input of everything
//     after: Defaults, a run with no flags, and Validate, what is wrong
//     with a set of them, whatever built it. run.sh's flags are read into
//     them by the command, internal/cmd/experiment (its flags.go); the
//     package's tests build them by fields.
//   - plan.go: BuildPlan, the Plan as a pure value of the Options: the
//     steps, in order, each with its server, callers and durations
//     (testdata/plan-default.golden is the default's, TestPlanGolden);
//     describe.go says it.
//   - run.go: Run, which prepares the run (preflight, the run directory,
//     the --target checks, the database) and hands a StepSource to the
//     runner: planSteps (source.go) walks the plan in order, stageSteps
//     (stagesource.go) gives the steps as the presenter's keys ask.
//   - measure.go: the runner measures each step the source gives (step.go:
//     a fresh server, then load.go or stall.go) and tells its Observers the
//     events of events.go: progress.go prints them on the terminal, the
//     stage shows them on its page.
//   - live.go: while a step runs, what its tools see (their --live-out
//     lines, tailed) and its server's /lag stream (lagtap.go), told as the
//     typed live samples of events.go (a load's rate, a probe, a stall
//     connection so far, the stall rule's verdict, a loop's lag) to the
//     observers that take them, the LiveObservers: the stage, which turns
//     them into its page's events; the terminal takes none. The runner
//     asks the tools for their lines, and reads them, only when one does,
//     and knows nothing of the stage.
//
// Each file uses the names of files below it, never of one that uses its
// own (TestFilesLayered): shape.go, helpers.go and exit.go use nobody's.
package experiment
