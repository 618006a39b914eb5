package experiment

import (
	"slices"
	"time"

	"github.com/bystander-kit/bystander/internal/findings"
	"github.com/bystander-kit/bystander/internal/results"
)

// The phases, in the order they run.
var allPhases = findings.Phases

// Phases are the phases a run can measure, in the order they run.
func Phases() []string { return slices.Clone(allPhases) }

// Server and Step are the run index's types (internal/results).
type (
	Server = results.Server
	Step   = results.Step
)

// stallConnsPerLoop is how many /async connections the stall phase places
// on each loop.
const stallConnsPerLoop = 3

// stallInterval is how often each stall connection is probed: on a fixed
// schedule, so the probes sample every moment, blocked or not.
const stallInterval = 10 * time.Millisecond

// traceConnsPerLoop is how many /async connections per loop the trace
// phase takes apart at once, for enough samples while every loop is blocked.
const traceConnsPerLoop = 3

// stageSlipWait is how many of a slip's sides the stage waits for the
// presenter's key before it slows the call by itself.
const stageSlipWait = 4

// slipTick is the slip's timeline step.
const slipTick = 100 * time.Millisecond

// startCost is the time a step spends outside its measurement: starting
// and stopping processes, placing connections; jvmStart what a JVM adds.
const (
	startCost = 700 * time.Millisecond
	jvmStart  = 1500 * time.Millisecond
)

// startDelay is how far ahead the load and its bystander prober are told
// to start their clocks (--start-at): time for both processes to start and
// open their connections, so the two share one measured window.
const startDelay = 300 * time.Millisecond

// stagePhases are what the stage measures; its screens show them in the
// story's order (screenOf), not the plan's.
var stagePhases = []string{"sweep", "stall", "offload", "slip"}

// StagePhases are the phases the stage measures (its Options' Phases).
func StagePhases() []string { return slices.Clone(stagePhases) }

// The stage's six screens.
const screens = 6

// AutoWait is how long --auto waits for a page to open before it starts
// without one; autoSettle the beat a page that opened gets before the
// first measurement, so that none runs beside a browser still starting.
const (
	AutoWait   = time.Minute
	autoSettle = time.Second
)

// asIsConns is how many connections the bystander's per-connection prober
// keeps beside a load on a server measured as it is, as the stall phase
// does on 4 loops: 3 on each loop of a server that deals its connections
// round robin.
const asIsConns = 12

// placeAllowance is how much longer a step on a server measured as it is
// starts its clocks ahead: time for the 12-connection prober to open and
// place its connections (unloaded) before the load comes.
const placeAllowance = 700 * time.Millisecond

// JVMWarmup is how long a Java server is loaded on every endpoint after it
// starts and before it is measured (--jvm-warmup): a JVM interprets code at
// first and compiles what runs hot (its JIT), so its first seconds are
// several times slower. Measured here (docs/measurements.md): Netty's /fast
// went from 14k to 58k req/s over its first 4 s of load, Tomcat's from 12k
// to 44k.
const JVMWarmup = 4 * time.Second
