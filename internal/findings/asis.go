package findings

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stall"
)

// A server measured as it is (run.sh --load and --bystander) speaks no
// protocol: it says neither how long its call blocked, nor on which loop
// it answered, nor when its handler began. What the run knows of it, it
// knows from its sweep alone, each figure computed here once:
//
//   - the call's own time: the load's median at 1 caller, nobody queued
//     ahead of it;
//   - the plateau: the sweep's highest throughput;
//   - the workers the service behaves as: the plateau times the call's
//     own time (Little's law: the callers it served at once), and its
//     ceiling, those workers over the call's time; when the sweep's most
//     callers were all served at once (nearAll), it has at least that many;
//   - at each step, which of the 12 bystander connections stalled, by the
//     rule on client-side waits (stall.JudgeClient), "too busy to judge"
//     where the machine starved the server;
//   - its class, decided from the sweep: a few threads the load holds
//     (connections stalled at 1 caller: the call holds the threads that
//     serve them), a pool that forgives the call up to N callers (none
//     stalled up to N), or cannot tell, with why;
//   - whether the call ran on a CPU (with pid=: its busiest thread's time
//     on a CPU and waiting for one at 1 caller, cpuBoundShare), or cannot
//     tell where the machine's starvation could have made either.

// CPUBoundShare: at 1 caller, back to back, a call that runs on a CPU
// keeps the thread it runs on wanting one for as long as the load runs,
// and one that waits (a socket, a lock, a sleep) leaves it asleep; the
// bystanders' requests, spread over the server's threads, add a little to
// each. A machine that starves the service blurs the two: a call on a CPU
// gets it only between the others' slices (on a busy machine Node's thread
// hashing with pbkdf2Sync ran 60% of the window and waited for a CPU much
// of the rest), and a call that waits waits for a CPU at each wake-up (the
// Netty shop's loop beside a load average of 25: on a CPU 4% of the
// window, waiting for one 63%). So its busiest thread at 1 caller tells
// one way each: on a CPU this share of the window or more, its call ran
// on a CPU (a thread that waits cannot run half the window); on a CPU or
// waiting for one under this share of the time the load kept a call
// running (the window, less the gaps a starved load left between its
// calls), its call waited (a call on a CPU wants one all along); between
// the two, the machine's starvation could have made either, and it is
// not told. (The whole server's CPU tells less: a JVM serving 1,200
// bystander requests a second kept 0.67 of a core busy at 1 caller beside
// a call that only waits on a socket.) A pool that hands each call to
// another thread spreads it over them: its busiest thread then says less
// than the call did.
const CPUBoundShare = 0.5

// nearAll: a sweep step whose callers were served this share of them at
// once or more (its throughput x the call's own time) queued none.
const nearAll = 0.9

// AsIs is one server measured as it is.
type AsIs struct {
	Server string
	// Load and Bystander are what it was asked ("POST /login", "@file: 3
	// requests"); PID its process when given.
	Load, Bystander string
	PID             int
	Steps           []AsIsStep
	// Call is the call's own time, us: the load's median at 1 caller, per
	// repetition.
	Call Figure
	// Plateau is the sweep's highest throughput (its median over the
	// repetitions), at PlateauAt callers.
	Plateau   float64
	PlateauAt int
	// Workers is the plateau x the call's own time (Little's law); AtLeast
	// when the sweep's most callers were all served at once (nearAll): the
	// service has at least Workers then, more than the sweep asked for.
	// Ceiling is Workers over the call's time, req/s (0: not known).
	Workers float64
	AtLeast bool
	Ceiling float64
	// CPUKnown when the server's threads were read (pid=); CPUShare is
	// the share of the window its busiest thread ran on a CPU at 1 caller,
	// RunqShare the share it waited for one, Running the share the load
	// kept a call running (its throughput x its mean latency, Little's
	// law, at most 1), CPUThread its name, Cores the whole server's cores
	// then.
	// CPUTold when those tell (cpuBoundShare): CPUBound on a CPU, else off
	// it; not told, the machine's starvation could have made either.
	CPUKnown, CPUTold, CPUBound  bool
	CPUShare, RunqShare, Running float64
	Cores                        float64
	CPUThread                    string
	// Class is one of findings' classes (ClassLoop: threads the load
	// holds; ClassPool: forgives it up to Forgives callers; ClassUnknown);
	// Case what decided it.
	Class    string
	Case     AsIsCase
	Forgives int
	// Watch is its top step watched, and what watching cost.
	Watch AsIsWatch
	// server and watched are its server and its watched step's group (nil:
	// none), for compute.
	server  results.Server
	watched *Group
}

// AsIsStep is one step of its sweep over its repetitions.
type AsIsStep struct {
	LoadRow
	// LoadP50 is the load's median latency, us, per repetition; Errors
	// its requests not answered 2xx or 3xx (by kind: ErrorsText).
	LoadP50 Figure
	Errors  []results.ErrorCount
	// Dials is the load's connections opened, per repetition: its callers,
	// unless the service closed them; PerClose its requests (the warm-up's
	// too) over the connections it closed (its dials past one a caller).
	Dials, PerClose Figure
	// The 12-connection prober: Stalled and Conns for the repetitions the
	// rule judged (Probed: how many connections each), Unjudged why the
	// others were not, Said the first judged one's verdict in the stall
	// rule's words; the stalled and other connections' median waits (from
	// the send), us; Unloaded their wait before the load, us.
	Stalled, Probed         Figure
	Judged                  int
	Unjudged                []AsIsUnjudged
	Said                    string
	StalledWait, OthersWait Figure
	Unloaded                Figure
	// Cells are the first judged repetition's connections.
	Cells []StallCell
}

// asIsOf computes every server measured as it is from its sweep's groups,
// in the run's order.
func asIsOf(gs []*Group, p Params) []AsIs {
	var out []AsIs
	index := map[string]int{}
	for _, g := range gs {
		if g.Step.Phase != "sweep" || !g.Step.Server.AsIs() {
			continue
		}
		s := g.Step.Server
		i, ok := index[s.Name]
		if !ok {
			i = len(out)
			index[s.Name] = i
			out = append(out, AsIs{Server: s.Name, Load: s.Load, Bystander: s.Bystander, PID: s.PID, server: s})
		}
		if g.Step.Variant == results.Watched {
			out[i].watched = g // beside its sweep, not in it
			continue
		}
		out[i].Steps = append(out[i].Steps, asIsStep(g, p))
	}
	for i := range out {
		out[i].compute()
		out[i].watchOf(out[i].watched, out[i].server, p, out[i].CallTime(), time.Duration(out[i].Unloaded()*1e3))
	}
	return out
}

// asIsStep reads one step's load and bystanders; the stall verdicts wait
// for the call's own time (judge).
func asIsStep(g *Group, p Params) AsIsStep {
	st := AsIsStep{LoadRow: loadRow(g, p)}
	st.Bounds = nil // against the workers inferred from the whole sweep: bound
	errs := map[string]int64{}
	for _, rep := range g.Reps {
		if rep.Load != nil && rep.Load.Load != nil {
			st.LoadP50 = append(st.LoadP50, rep.Load.Load.Latency.P50Us)
			l := rep.Load.Load
			st.Dials = append(st.Dials, float64(l.Dials))
			if closed := l.Dials - int64(g.Step.Conc); closed > 0 {
				st.PerClose = append(st.PerClose, float64(l.Requests+l.WarmupRequests)/float64(closed))
			}
			for _, e := range rep.Load.Errors {
				errs[e.Kind] += e.Count
			}
		}
	}
	for _, k := range errKinds(g) {
		st.Errors = append(st.Errors, results.ErrorCount{Kind: k, Count: errs[k]})
	}
	return st
}

// errKinds are the error kinds of g's load results, in their order.
func errKinds(g *Group) []string {
	var ks []string
	for _, r := range g.Load {
		for _, e := range r.Errors {
			if !slices.Contains(ks, e.Kind) {
				ks = append(ks, e.Kind)
			}
		}
	}
	return ks
}

// unloadedOf reads each repetition's wait unloaded: the 12 connections'
// placing requests, before the load.
func (st *AsIsStep) unloadedOf() {
	for _, rep := range st.Reps {
		if rep.Conns != nil && rep.Conns.PerConn != nil {
			st.Unloaded = append(st.Unloaded, rep.Conns.PerConn.BaselineUs)
		}
	}
}

// judge decides which connections stalled in each repetition of st, the
// waits unloaded taken as unloaded.
func (st *AsIsStep) judge(call, unloaded time.Duration) {
	for _, rep := range st.Reps {
		if rep.Conns == nil || rep.Conns.PerConn == nil {
			continue
		}
		pc := rep.Conns.PerConn
		conns := stall.From(pc)
		m := machineOf(rep.M.Use)
		m.Late = !m.Known && slices.ContainsFunc(rep.M.Notes, func(n string) bool { return strings.HasSuffix(n, ProcNotRead) })
		v := stall.JudgeClient(conns, unloaded, call, m)
		u := AsIsUnjudged{Repeat: rep.M.Repeat, Offset: connsOffset(rep)}
		if u.Offset != 0 {
			v = stall.Verdict{}
		}
		if !v.Judged {
			u.Busy, u.Why = v.Busy(), v.Why
			st.Unjudged = append(st.Unjudged, u)
			continue
		}
		st.Judged++
		t := tally(pc, conns, v, blockers{loops: map[int]bool{}})
		if st.Cells == nil {
			st.Cells, st.Said = t.cells, v.Said
		}
		st.Stalled = append(st.Stalled, float64(t.stalled))
		st.Probed = append(st.Probed, float64(len(pc.Conns)))
		if len(t.sWait) > 0 {
			st.StalledWait = append(st.StalledWait, results.Median(t.sWait))
		}
		if len(t.oWait) > 0 {
			st.OthersWait = append(st.OthersWait, results.Median(t.oWait))
		}
	}
}

// AsIsUnjudged is a repetition whose 12 connections were not judged, and
// why: their window did not lie over the load's (Offset), or the stall
// rule could not judge them (Why, its words; Busy when the machine was
// too busy to).
type AsIsUnjudged struct {
	// Repeat is the repetition (said when the step has more than one).
	Repeat int
	// Offset, when not 0, is how long after the load's (> 0) or before it
	// (< 0) the 12 connections' window began: past MaxWindowOffset either
	// way (connsOffset).
	Offset time.Duration
	Busy   bool
	Why    string
}

// connsOffset is how far a repetition's 12 connections' window began
// from the load's when past MaxWindowOffset, 0 when it lay over it: their
// clock started later (placed later than its allowance, their window ran
// on past the load's end) or earlier (the load started late), and the
// probes outside the load, unloaded, would lower a stalled connection's
// median: they are not judged.
func connsOffset(rep Rep) time.Duration {
	d := time.Duration(rep.Conns.StartLateNs)
	if rep.Load != nil && rep.Load.StartUnixNs != 0 && rep.Conns.StartUnixNs != 0 {
		d = time.Duration(rep.Conns.StartUnixNs - rep.Load.StartUnixNs)
	}
	if d > MaxWindowOffset || d < -MaxWindowOffset {
		return d
	}
	return 0
}

// AsIsOf is the server named name measured as it is, nil when it was not.
func (f *Findings) AsIsOf(name string) *AsIs {
	for i := range f.AsIs {
		if f.AsIs[i].Server == name {
			return &f.AsIs[i]
		}
	}
	return nil
}

// NotAnswered is how many of the load's requests were not answered 2xx or
// 3xx, over the repetitions.
func (st AsIsStep) NotAnswered() int64 { return results.TotalErrors(st.Errors) }

// step is the sweep's step at conc callers (nil: not measured).
func (a *AsIs) step(conc int) *AsIsStep {
	for i := range a.Steps {
		if a.Steps[i].Step.Conc == conc {
			return &a.Steps[i]
		}
	}
	return nil
}

// CallTime is the call's own time (0: not measured).
func (a AsIs) CallTime() time.Duration { return time.Duration(a.Call.Median() * 1e3) }

func (a *AsIs) compute() {
	slices.SortStableFunc(a.Steps, func(x, y AsIsStep) int { return x.Step.Conc - y.Step.Conc })
	if s1 := a.step(1); s1 != nil {
		a.Call = s1.LoadP50
	}
	call := a.CallTime()
	// The connections' wait unloaded is the service's, whatever the step:
	// the least of the sweep's, since what each step measured before its
	// load can only have been slowed (a service busy with the step before,
	// a JVM collecting: 1.93 ms at one step of a Netty shop, 0.11 ms at
	// another).
	var least float64
	for i := range a.Steps {
		a.Steps[i].unloadedOf()
		for _, u := range a.Steps[i].Unloaded {
			if u > 0 && (least == 0 || u < least) {
				least = u
			}
		}
	}
	most := 0
	for i := range a.Steps {
		st := &a.Steps[i]
		st.judge(call, time.Duration(least*1e3))
		if st.Throughput.OK() {
			if t := st.Throughput.Median(); t > a.Plateau {
				a.Plateau, a.PlateauAt = t, st.Step.Conc
			}
			most = max(most, st.Step.Conc)
		}
	}
	if call > 0 && a.Plateau > 0 {
		a.Workers = a.Plateau * call.Seconds()
		top := a.step(most)
		a.AtLeast = top.Throughput.Median()*call.Seconds() >= nearAll*float64(most)
		if !a.AtLeast {
			a.Ceiling = CeilingPerS(max(1, int(math.Round(a.Workers))), call)
		}
	}
	for i := range a.Steps {
		st := &a.Steps[i]
		for _, rep := range st.Reps {
			if b := asIsBound(rep.M.Step, rep.Load, rep.Cost, a); b != nil {
				st.Bounds = append(st.Bounds, b)
			}
		}
	}
	a.cpu()
	a.classify()
}

// cpu reads, at 1 caller, the share of the window the server's busiest
// thread ran on a CPU and waited for one, and decides from them whether
// its call ran on a CPU (cpuBoundShare).
func (a *AsIs) cpu() {
	s1 := a.step(1)
	if s1 == nil {
		return
	}
	var shares, runqs, running, cores Figure
	for _, rep := range s1.Reps {
		u := rep.M.Use
		if u == nil || u.Server == nil || u.Server.Busiest == nil || u.WindowNs <= 0 {
			continue
		}
		shares = append(shares, u.InWindow(u.Server.Busiest.CPUNs))
		runqs = append(runqs, u.InWindow(u.Server.Busiest.RunqWaitNs))
		cores = append(cores, u.InWindow(u.Server.CPUNs))
		r := 1.0 // not known: the whole window
		if l := rep.Load; l != nil && l.Load != nil && l.Load.ThroughputPerS > 0 && l.Load.Latency.MeanUs > 0 {
			r = min(1, l.Load.InFlight())
		}
		running = append(running, r)
		if a.CPUThread == "" {
			a.CPUThread = u.Server.Busiest.Name
		}
	}
	if !shares.OK() {
		return
	}
	a.CPUKnown, a.CPUShare, a.RunqShare, a.Running, a.Cores = true, shares.Median(), runqs.Median(), running.Median(), cores.Median()
	switch {
	case a.CPUShare >= CPUBoundShare:
		a.CPUTold, a.CPUBound = true, true
	case a.CPUShare+a.RunqShare < CPUBoundShare*a.Running:
		a.CPUTold = true
	}
}

// Closed says whether the service closed the load's connections: its
// callers dialled more than twice each.
func (st AsIsStep) Closed() bool {
	return st.Dials.OK() && st.Dials.Median() > 2*float64(st.Step.Conc)
}

// Unloaded is the 12 connections' wait before the load, us: the least of
// the sweep's (what the stall rule judges against).
func (a AsIs) Unloaded() float64 {
	var least float64
	for _, st := range a.Steps {
		for _, u := range st.Unloaded {
			if u > 0 && (least == 0 || u < least) {
				least = u
			}
		}
	}
	return least
}

// WaitOverUnloaded is how many times their wait unloaded the 12
// connections not stalled at st waited at the median: one prober, one
// clock (from the send), like for like (false when either is missing).
// The interval bystander's median from due is another prober's on
// another clock: it is shown beside it, never divided by this.
func (a AsIs) WaitOverUnloaded(st AsIsStep) (float64, bool) {
	u := a.Unloaded()
	if !st.OthersWait.OK() || u <= 0 {
		return 0, false
	}
	return st.OthersWait.Median() / u, true
}

// AsIsCase is what decided the class of a server measured as it is.
type AsIsCase int

const (
	AsIsNotMeasured AsIsCase = iota + 1 // its sweep at 1 caller not measured (that step's Why)
	AsIsCallShort                       // its call under stall.Floor at 1 caller: it holds nobody long enough to see whom
	AsIsNotJudged                       // at 1 caller its 12 connections not judged (that step's Unjudged)
	AsIsOneThread                       // a thread the load holds: at 1 caller every connection stalled
	AsIsFewThreads                      // a few threads the load holds: at 1 caller some stalled, the others did not
	AsIsForgives                        // a pool: none stalled up to Forgives callers
)

// classify decides the class from the sweep: connections stalled at 1
// caller say the call holds threads that serve others; none stalled up to
// N callers, a pool that forgives it up to N.
func (a *AsIs) classify() {
	a.Class = ClassUnknown
	s1 := a.step(1)
	switch {
	case s1 == nil || !s1.OK():
		a.Case = AsIsNotMeasured
		return
	case a.CallTime() < stall.Floor:
		a.Case = AsIsCallShort
		return
	case s1.Judged == 0:
		a.Case = AsIsNotJudged
		return
	}
	if n := s1.Stalled.Median(); n > 0 {
		a.Class, a.Case = ClassLoop, AsIsFewThreads
		if n >= s1.Probed.Median() {
			a.Case = AsIsOneThread
		}
		return
	}
	a.Class, a.Case, a.Forgives = ClassPool, AsIsForgives, 1
	for _, st := range a.Steps {
		if st.Step.Conc <= 1 {
			continue
		}
		if st.Judged == 0 || st.Stalled.Median() > 0 {
			break
		}
		a.Forgives = st.Step.Conc
	}
}

// asIsBound decides what bounds one step of a server measured as it is:
// the machine (the kit's processes use its cores), or the workers it
// behaves as over the call's own time, or the callers; nil without a cost.
func asIsBound(s results.Step, lr *results.Result, c *results.ServerCost, a *AsIs) *Bound {
	if lr == nil || lr.Load == nil || c == nil {
		return nil
	}
	l := lr.Load
	call := a.CallTime()
	b := &Bound{MeasuredBlock: call, Conc: s.Conc, AsIsWorkers: max(1, int(math.Round(a.Workers)))}
	cores := float64(c.Cores)
	b.useOf(s, lr, c, cores)
	b.CallersCeiling = CeilingPerS(s.Conc, call)
	b.WorkersCeiling = a.Ceiling
	switch {
	case cores > 0 && b.KitCores >= kitSaturation*cores && c.GeneratorCores+c.ProberCores >= c.ServerCores && !c.ServerNotMeasured:
		b.Kind, b.Case, b.Flagged = "generator", BoundAsIsGenerator, true
	case cores > 0 && c.MachineCores >= kitSaturation*cores:
		b.Kind, b.Case = "cpu", BoundAsIsCPU
	case call <= 0:
		b.Kind, b.Case = "none", BoundAsIsNoCall
	case b.WorkersCeiling > 0 && l.ThroughputPerS >= nearCeiling*b.WorkersCeiling && b.WorkersCeiling < b.CallersCeiling:
		b.Kind, b.Case, b.Share = "workers", BoundAsIsWorkers, l.ThroughputPerS/b.WorkersCeiling
	case l.ThroughputPerS >= nearCeiling*b.CallersCeiling:
		b.Kind, b.Case, b.Share = "callers", BoundAsIsCallers, l.ThroughputPerS/b.CallersCeiling
	default:
		b.Kind, b.Case = "none", BoundAsIsNone
		b.Lowest = b.CallersCeiling
		if b.WorkersCeiling > 0 {
			b.Lowest = min(b.Lowest, b.WorkersCeiling)
		}
		b.Share = shareOf(l.ThroughputPerS, b.Lowest)
	}
	return b
}
