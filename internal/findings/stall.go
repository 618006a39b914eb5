package findings

import (
	"slices"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/outside"
	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stall"
)

// StallCell is one connection of one stall measurement, on the loop it
// was dealt to in that measurement.
type StallCell struct {
	Conn, Loop int
	P50Us      float64 // from due
	SendP50Us  float64 // from send
	// WaitUs is the median of what the server made it wait (the figure the
	// stall rule judges).
	WaitUs         float64
	Answered, Due  int64
	Stalled        bool
	OnBlockedLoop  bool // its loop is one the blockers' requests were answered on
	CensoredProbes int64
}

// StallRow is one k of the stall phase over its repetitions.
type StallRow struct {
	*Group
	// Stalled, Expected and the waits are of the repetitions the rule
	// could judge; Conns of every one.
	Stalled, Expected, Conns Figure
	// Medians over the stalled and the other connections of their p50
	// from due, in us, one per judged repetition.
	StalledP50, OthersP50 Figure
	// StalledSendP50 is the same for the stalled connections timed from
	// each probe's send: one request's wait, without the queue behind it.
	StalledSendP50 Figure
	// StalledWait and OthersWait are the medians of what the server made
	// the stalled and the other connections wait, in us: the rule's figure.
	StalledWait, OthersWait Figure
	BaselineUs              Figure
	// Above is where the rule put a stall (half the block), us.
	Above Figure
	// Match: in every judged repetition the stalled connections were
	// exactly those on the loops the blockers' requests were answered on;
	// Mismatch says where not, connection by connection.
	Match    bool
	Mismatch []StallMismatch
	// Judged counts the repetitions the rule could judge; Unjudged gives
	// why each other one could not.
	Judged   int
	Unjudged []StallUnjudged
	Rule     string
	// BlockerBlock is the blockers' measured block (their X-Blocked-Ns),
	// ns, one per repetition that has it: what the verdict is judged
	// against; BlockOffNs is the first that was over blockTolerance off
	// the asked one (0: none was).
	BlockerBlock Figure
	BlockOffNs   float64
	// MachineBusy and MachineOthers are the shares of the machine busy, and
	// busy with other processes than the kit's, over each window (/proc).
	MachineBusy, MachineOthers Figure
	// The first repetition's loops blocked and connections.
	BlockedLoops []int
	Cells        []StallCell
	// What the server's own blocked-loop detector said (loop servers):
	// the loops it saw blocked in /slow in the first repetition with a lag
	// trace, in how many repetitions it was read, and whether in every one
	// of them those were exactly the loops the blockers' requests were
	// answered on.
	DetectorLoops []int
	// NotJudged are the loops held in /slow by holds the detector could
	// not judge (sleep and postgres modes: Go parks the loop's thread in
	// the call; only a hold whose stack was taken is judged).
	NotJudged     []int
	DetectorReps  int
	DetectorMatch bool
	// Culprits are where the detector saw those loops held, in that
	// repetition (loopwatch's stacks: one a second per loop at most); or,
	// for a server seen from outside, the threads the outside view found
	// held in the first repetition it looked.
	Culprits []culprit.Record
	// Seen is the outside view's verdict (nil for a server it did not
	// look at), and Outside the rest of what it said in words: how many of
	// each family of threads were held and what the others did, what it
	// could not read, and what it cost.
	Seen    *outside.Verdict
	Outside []string
}

// StallMismatch is where a judged repetition's stalled connections were
// not exactly those on the blockers' loops: a connection that stalled
// though no blocker was on its loop (Stalled), or did not though its loop
// was blocked, and what the server made it wait; or (NotKnown) a
// repetition whose blockers left no result, so which loops they held is
// not known.
type StallMismatch struct {
	NotKnown   bool
	Conn, Loop int
	Stalled    bool
	Wait       time.Duration
}

// StallUnjudged is why the stall rule could not judge a repetition, in
// the rule's words ("machine too busy to judge: ..."), and which one it
// was: Repeat, or 0 where the words need not name it (the measurement's
// only repetition, or a server's of no kind).
type StallUnjudged struct {
	Repeat int
	Why    string
}

// machineOf is what the machine did over a stall measurement's window.
func machineOf(u *results.Use) stall.Machine {
	if u == nil || u.WindowNs <= 0 || u.Cores <= 0 {
		return stall.Machine{}
	}
	w := float64(u.WindowNs)
	var kit float64
	for _, p := range []*results.ProcUse{u.Server, u.Generator, u.Prober, u.Conns} {
		if p != nil {
			kit += float64(p.CPUNs) / w
		}
	}
	m := stall.Machine{Known: true, Busy: u.MachineBusy, Others: max(0, u.MachineBusy-kit/float64(u.Cores))}
	if u.Server != nil {
		m.ServerRunq = float64(u.Server.RunqWaitNs) / w
		m.WakeWait = wakeWait(u.Server.RunqWaitNs, u.Server.RunqWaits)
		for _, lt := range u.Server.LoopThreads {
			if m.LoopWakeWait == nil {
				m.LoopWakeWait = map[int]time.Duration{}
			}
			m.LoopWakeWait[lt.Loop] = max(m.LoopWakeWait[lt.Loop], wakeWait(lt.RunqWaitNs, lt.RunqWaits))
		}
	}
	return m
}

// wakeWait is how long a wake-up waited for a CPU on average: run-queue
// time over run-queue waits (0 when none was counted).
func wakeWait(runqNs, waits int64) time.Duration {
	if waits <= 0 {
		return 0
	}
	return time.Duration(runqNs / waits)
}

func stallRow(g *Group) StallRow {
	r := StallRow{Group: g, Match: true, DetectorMatch: true, Rule: stall.Rule}
	for _, rep := range g.Reps {
		if rep.Conns == nil || rep.Conns.PerConn == nil {
			continue
		}
		r.addRep(g, rep)
	}
	if !r.Stalled.OK() {
		r.Match = false
	}
	if r.DetectorReps == 0 {
		r.DetectorMatch = false
	}
	return r
}

// blockers is where one repetition's blockers held the server: the loops
// their requests were answered on (their X-Loop), whether that is known,
// and the block they measured (the asked one when they did not say).
type blockers struct {
	loops map[int]bool
	known bool
	block time.Duration
}

// blockersOf reads rep's blockers, noting their measured block on r.
func (r *StallRow) blockersOf(g *Group, rep Rep) blockers {
	b := blockers{loops: map[int]bool{}, known: g.Step.K == 0, block: g.Step.Block.D()}
	if rep.Load == nil || rep.Load.Load == nil {
		return b
	}
	b.known = true
	l := rep.Load.Load
	for _, lc := range l.RequestsPerLoop {
		if lc.Count > 0 {
			b.loops[lc.Loop] = true
		}
	}
	if l.BlockedSamples > 0 {
		b.block = time.Duration(l.MeanBlockedNs)
		r.BlockerBlock = append(r.BlockerBlock, l.MeanBlockedNs)
		if _, off := BlockOff(g.Step.Block.D(), l.MeanBlockedNs); off && r.BlockOffNs == 0 {
			r.BlockOffNs = l.MeanBlockedNs
		}
	}
	return b
}

// stallTally is one repetition's connections, judged: the cells, and the
// stalled and other connections' figures.
type stallTally struct {
	cells                          []StallCell
	expected, stalled              int
	wrong                          []StallMismatch
	stalledP50, stalledSend, sWait []float64
	othersP50, oWait               []float64
}

func tally(pc *results.PerConn, conns []stall.Conn, v stall.Verdict, b blockers) stallTally {
	var t stallTally
	for i, c := range pc.Conns {
		cell := StallCell{Conn: c.Conn, Loop: c.Loop, P50Us: c.Latency.P50Us, SendP50Us: c.FromSend.P50Us, WaitUs: float64(conns[i].Wait) / 1e3,
			Answered: c.Samples, Due: c.Due, Stalled: v.Stalled[i], OnBlockedLoop: c.Loop >= 0 && b.loops[c.Loop], CensoredProbes: c.Censored}
		t.cells = append(t.cells, cell)
		if cell.OnBlockedLoop {
			t.expected++
		}
		if cell.Stalled != cell.OnBlockedLoop {
			t.wrong = append(t.wrong, StallMismatch{Conn: c.Conn, Loop: c.Loop, Stalled: cell.Stalled, Wait: conns[i].Wait})
		}
		if !cell.Stalled {
			t.othersP50 = append(t.othersP50, c.Latency.P50Us)
			t.oWait = append(t.oWait, cell.WaitUs)
			continue
		}
		t.stalled++
		t.stalledP50 = append(t.stalledP50, c.Latency.P50Us)
		t.sWait = append(t.sWait, cell.WaitUs)
		if c.FromSend.Count > 0 {
			t.stalledSend = append(t.stalledSend, c.FromSend.P50Us)
		}
	}
	return t
}

// addRep judges one repetition and adds it to r.
func (r *StallRow) addRep(g *Group, rep Rep) {
	pc := rep.Conns.PerConn
	b := r.blockersOf(g, rep)
	m := machineOf(rep.M.Use)
	if m.Known {
		r.MachineBusy = append(r.MachineBusy, m.Busy)
		r.MachineOthers = append(r.MachineOthers, m.Others)
	}
	conns := stall.From(pc)
	v := stall.Judge(conns, b.block, m)
	r.Conns = append(r.Conns, float64(len(pc.Conns)))
	r.BaselineUs = append(r.BaselineUs, pc.BaselineUs)
	t := tally(pc, conns, v, b)
	r.addDetector(rep, b)
	r.addOutside(rep)
	if r.Cells == nil {
		r.Cells = t.cells
		for l := range b.loops {
			r.BlockedLoops = append(r.BlockedLoops, l)
		}
		slices.Sort(r.BlockedLoops)
	}
	if !v.Judged {
		u := StallUnjudged{Why: v.Why}
		if g.Step.Server.Kind != "" && len(g.Reps) > 1 {
			u.Repeat = rep.M.Repeat
		}
		r.Unjudged = append(r.Unjudged, u)
		return
	}
	r.Judged++
	r.Above = append(r.Above, float64(v.Above)/1e3)
	if !b.known {
		r.Match = false
		r.Mismatch = append(r.Mismatch, StallMismatch{NotKnown: true})
	} else {
		r.Expected = append(r.Expected, float64(t.expected))
		if len(t.wrong) > 0 {
			r.Match = false
			r.Mismatch = append(r.Mismatch, t.wrong...)
		}
	}
	r.Stalled = append(r.Stalled, float64(t.stalled))
	if len(t.stalledP50) > 0 {
		r.StalledP50 = append(r.StalledP50, results.Median(t.stalledP50))
		r.StalledWait = append(r.StalledWait, results.Median(t.sWait))
	}
	if len(t.othersP50) > 0 {
		r.OthersP50 = append(r.OthersP50, results.Median(t.othersP50))
		r.OthersWait = append(r.OthersWait, results.Median(t.oWait))
	}
	if len(t.stalledSend) > 0 {
		r.StalledSendP50 = append(r.StalledSendP50, results.Median(t.stalledSend))
	}
}

// addDetector compares the loops the server's own detector saw held in
// /slow with the blockers' loops.
func (r *StallRow) addDetector(rep Rep, b blockers) {
	if rep.Lag == nil {
		return
	}
	lr, ok := lagOf(rep.Lag)
	if !ok {
		return
	}
	var want []int
	for l := range b.loops {
		want = append(want, l)
	}
	slices.Sort(want)
	if r.DetectorReps == 0 {
		r.DetectorLoops = lr.HeldInSlow
		for _, ll := range lr.Loops {
			if ll.Culprit != nil && slices.Contains(lr.HeldInSlow, ll.Loop) {
				r.Culprits = append(r.Culprits, *ll.Culprit)
			}
			if ll.UnknownIn["/slow"] > 0 {
				r.NotJudged = append(r.NotJudged, ll.Loop)
			}
		}
	}
	r.DetectorReps++
	if !b.known || !slices.Equal(lr.HeldInSlow, want) {
		r.DetectorMatch = false
	}
}

// addOutside takes what the outside view saw of the server's threads, in
// the first repetition where it looked.
func (r *StallRow) addOutside(rep Rep) {
	if rep.Threads == nil || r.Seen != nil || r.DetectorReps > 0 {
		return
	}
	v := outside.Decide(rep.Threads)
	r.Seen, r.Culprits, r.Outside = &v, v.Held, v.Lines()
	if len(v.Held) == 0 {
		r.Outside = append([]string{"the outside view found no thread held"}, r.Outside...)
	}
}

// Shared says whether other processes used the machine enough, at the
// median, that the row's figures were measured on a shared machine.
func (r StallRow) Shared() bool { return r.MachineOthers.Median() >= SharedAbove }
