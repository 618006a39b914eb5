package experiment

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/bystander-kit/bystander/internal/culprit"
	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/lag"
	"github.com/bystander-kit/bystander/internal/live"
	"github.com/bystander-kit/bystander/internal/stall"
)

// liveEvery is how often the stall rule judges the connections live: a
// verdict a frame of the stage's (stage.Every, TestStageLiveObserver).
const liveEvery = 250 * time.Millisecond

// tapLive tails a tool's --live-out file while a step runs; the returned
// stop reads what is left and ends.
func (r *runner) tapLive(path string, fn func(line []byte)) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		live.Tail(ctx, path, 50*time.Millisecond, fn)
		close(done)
	}()
	return func() { cancel(); <-done }
}

// liveArgs adds --live-out to a tool's arguments when an observer takes
// the live samples (the stage), and the tail that turns its lines into
// them.
func (r *runner) liveArgs(s Step, kind string, args []string) ([]string, func()) {
	if !r.wantsLive() {
		return args, func() {}
	}
	path := filepath.Join(r.dir, s.Phase, s.ID+".live-"+kind+".ndjson")
	args = append(args, "--live-out", path)
	switch kind {
	case "load":
		var hist []live.Load
		return args, r.tapLive(path, func(line []byte) {
			var v live.Load
			if json.Unmarshal(line, &v) != nil || v.End {
				return // the last line comes after the window: its rate would fall as the load stops
			}
			hist = append(hist, v)
			// The rate over the last second (or since the start).
			first := hist[0]
			for _, h := range hist {
				if h.Ms >= v.Ms-1000 {
					first = h
					break
				}
			}
			if v.Ms > first.Ms {
				r.emitLive(LiveRate{ID: s.ID, RPS: float64(v.Answered-first.Answered) * 1000 / float64(v.Ms-first.Ms)})
			}
		})
	case "fast":
		return args, r.tapLive(path, func(line []byte) {
			var v live.Probe
			if json.Unmarshal(line, &v) == nil && !v.Failed {
				r.emitLive(LiveProbe{ID: s.ID, Server: s.Server.Name, Ms: v.Ms})
			}
		})
	default: // perconn: the stall rule, live, on what each connection saw so far
		judge := newLiveJudge(s)
		return args, r.tapLive(path, func(line []byte) {
			var v live.Probe
			if json.Unmarshal(line, &v) != nil {
				return
			}
			conn, verdict := judge.add(v)
			r.emitLive(conn)
			if verdict != nil {
				r.emitLive(*verdict)
			}
		})
	}
}

// liveJudge keeps what each connection of a stall measurement has seen
// and applies the stall rule to it, as the tables will to the whole.
type liveJudge struct {
	s     Step
	conns map[int]*connSoFar
	order []int
	last  time.Time
	// stalled is the last verdict's, by connection: a connection heard of
	// since then is not in it.
	stalled map[int]bool
}

type connSoFar struct {
	loop int
	// waits is what the server made its answered probes wait, in the
	// prober's own histogram: its median is the figure the report gives
	// (stall.From of the prober's ServerWait), one computation.
	waits         *hist.H
	worstMs       float64 // its slowest answer from due
	due, answered int64
}

// wait is the median of what the server made c's probes wait: the
// figure the stall rule judges and the report's heatmap shows.
func (c *connSoFar) wait() time.Duration { return c.waits.P50() }

func newLiveJudge(s Step) *liveJudge { return &liveJudge{s: s, conns: map[int]*connSoFar{}} }

// add takes a probe; it returns the probe's connection as seen so far
// (whether it stalled as the rule last judged), and a verdict at most
// every liveEvery.
func (j *liveJudge) add(p live.Probe) (LiveConn, *LiveVerdict) {
	c := j.conns[p.Conn]
	if c == nil {
		c = &connSoFar{waits: hist.New()}
		j.conns[p.Conn] = c
		j.order = append(j.order, p.Conn)
		slices.Sort(j.order)
	}
	c.loop = p.Loop
	c.due++
	c.worstMs = max(c.worstMs, p.Ms)
	if !p.Failed {
		c.answered++
		if p.WaitMs > 0 { // the server said (the line omits a wait it did not)
			c.waits.Record(time.Duration(math.Round(p.WaitMs * 1e6))) // the prober's ns again: the line has them exactly
		}
	}
	var out *LiveVerdict
	if now := time.Now(); now.Sub(j.last) >= liveEvery {
		j.last = now
		var conns []stall.Conn
		for _, id := range j.order {
			k := j.conns[id]
			conns = append(conns, stall.Conn{ID: id, Loop: k.loop, Due: k.due, Answered: k.answered, Wait: k.wait(), FromServer: true})
		}
		v := stall.Judge(conns, j.s.Block.D(), stall.Machine{})
		j.stalled = map[int]bool{}
		for i, st := range v.Stalled {
			j.stalled[conns[i].ID] = st
		}
		out = &LiveVerdict{ID: j.s.ID, Judged: v.Judged, Stalled: v.Count, Conns: len(conns), Why: v.Why}
	}
	ev := LiveConn{ID: j.s.ID, Conn: p.Conn, Loop: c.loop, Ms: c.worstMs, Stalled: j.stalled[p.Conn], Due: c.due}
	if c.waits.Count() > 0 {
		ms := float64(c.wait()) / 1e6
		ev.WaitMs = &ms
	}
	return ev, out
}

// lagEvent tells the observers that take the live samples each loop's
// largest lag in a /lag event; nil when none does.
func (r *runner) lagEvent(server string) func(lag.Event) {
	if !r.wantsLive() {
		return nil
	}
	return func(ev lag.Event) {
		at := time.Unix(0, ev.TimeNs) // the window's end
		for _, l := range ev.Loops {
			where, heldMs := "", 0.0
			// A block that began in the last second: its record grows
			// from "so far" to its whole length as the events go by.
			if c := l.Culprit; c != nil && c.StartNs >= ev.TimeNs-int64(time.Second) && c.Cause != culprit.Starved && c.Cause != culprit.WaitingForP && len(c.Frames) > 0 {
				clean := c.Clean()
				where, heldMs = clean.Where(), float64(clean.HeldNs)/1e6
			}
			r.emitLive(LiveLag{Server: server, Loop: l.Loop, Ms: float64(l.LagMaxNs) / 1e6, Blocked: l.BlockedNow, At: at, Where: where, HeldMs: heldMs})
		}
	}
}
