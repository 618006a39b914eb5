package experiment

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/bystander-kit/bystander/internal/results"
	"github.com/bystander-kit/bystander/internal/stage"
)

// stageSteps is the stage seen from the runner: its step source, giving
// the slides' steps as the presenter's keys (or --auto) ask (next, goto
// N: the first slide of screen N, repeat: the slide shown, measured
// again; P pauses), and an observer that shows each step on the page and,
// as a LiveObserver, what the tools see while it runs. On
// the slip's slide the presenter's next key slows the call (the file
// loadgen --switch-when watches), the plan's moment at the latest.
type stageSteps struct {
	o      Options
	dir    string
	hub    *stage.Hub
	ctl    *stageControl
	slides []slide
	// row is a finished measurement's figures for the page (stepRow).
	row func(results.Measurement) *stage.StepRow
	// index is where each step's first measurement sits in run.json;
	// reps how often each was given.
	index map[string]int
	reps  map[string]int
	// pos is the slide shown (-1: none yet); todo its steps not yet
	// given; shown that its steps are being given.
	pos   int
	todo  []Step
	shown bool
	slip  *slipKey // the slip being measured, or nil
}

// newStageSteps is the stage's source for a run whose run.json holds
// measurements (in the plan's order) of steps; it says it waits for the
// presenter's first key (--auto presses it).
func newStageSteps(o Options, dir string, hub *stage.Hub, ctl *stageControl, steps []Step, measurements []results.Measurement,
	row func(results.Measurement) *stage.StepRow) *stageSteps {
	st := &stageSteps{o: o, dir: dir, hub: hub, ctl: ctl, slides: talkSlides(o, steps), row: row, index: map[string]int{}, reps: map[string]int{}, pos: -1}
	for i, m := range measurements {
		st.index[m.ID] = i
	}
	if o.Auto {
		ctl.take("next")
	}
	st.state("waiting: press Space")
	return st
}

func (st *stageSteps) state(s string) { st.hub.Add(stage.State{State: s}) }

// Next gives the shown slide's next step, else waits for the key that
// shows another slide; false once the talk is over or ctx ended.
func (st *stageSteps) Next(ctx context.Context) (Job, bool) {
	for {
		if len(st.todo) > 0 && ctx.Err() == nil {
			return st.give(ctx), true
		}
		st.todo = nil
		if st.shown {
			st.shown = false
			if st.slideDone() {
				return Job{}, false
			}
		}
		if ctx.Err() != nil {
			return Job{}, false
		}
		key, ok := st.ctl.next()
		if !ok {
			select {
			case <-ctx.Done():
			case <-st.ctl.wake:
			}
			continue
		}
		want, ok := st.want(key)
		if !ok {
			continue
		}
		if want >= len(st.slides) {
			return Job{}, false
		}
		st.show(want, key)
	}
}

// Unreached: the steps of the slides not shown.
func (st *stageSteps) Unreached() string { return "the stage ended before its screen" }

// want is the slide key asks for; false for a screen this run lacks.
func (st *stageSteps) want(key string) (int, bool) {
	want := st.pos + 1
	switch g, isGoto := stage.GotoScreen(key); {
	case key == "repeat" && st.pos >= 0:
		want = st.pos
	case isGoto:
		want = slices.IndexFunc(st.slides, func(s slide) bool { return s.screen == g })
		if want < 0 {
			st.state(fmt.Sprintf("no screen %d in this run: Space for the next", g))
			return 0, false
		}
	}
	return want, true
}

// show shows slide want: its steps, or its focus when not measured yet
// (or asked again with repeat).
func (st *stageSteps) show(want int, key string) {
	st.pos = want
	sl := st.slides[st.pos]
	st.hub.Add(stage.Screen{Screen: sl.screen, Focus: sl.focusID()})
	st.todo = sl.steps
	if f := sl.focus; f != nil && (st.reps[f.ID] == 0 || key == "repeat") {
		st.todo = []Step{*f}
	}
	st.shown = true
}

// give gives the slide's next step, once the presenter has not paused,
// and says in words what it measures (not its id).
func (st *stageSteps) give(ctx context.Context) Job {
	s := st.todo[0]
	st.todo = st.todo[1:]
	for st.ctl.isPaused() && ctx.Err() == nil {
		st.state("paused: P resumes")
		select {
		case <-ctx.Done():
		case <-st.ctl.wake:
		}
	}
	st.state(nowText(s, st.o.Loops))
	st.reps[s.ID]++
	j := Job{Step: s, Rep: st.reps[s.ID], Slot: -1} // measured again: after the plan's
	if j.Rep == 1 {
		j.Slot = st.index[s.ID]
	}
	if s.Phase == "slip" {
		j.SlipWhen = slipTold(st.dir, s) // the presenter's key makes it (armSlip)
	}
	return j
}

// slideDone ends a slide: --auto goes on by itself after a beat on its
// last figures (true past the last slide), the presenter is told.
func (st *stageSteps) slideDone() bool {
	if st.o.Auto {
		if st.pos == len(st.slides)-1 {
			return true
		}
		time.Sleep(time.Second) // a beat on each slide's last figures
		st.ctl.take("next")
	}
	st.state(fmt.Sprintf("screen %d done: Space for the next", st.slides[st.pos].screen))
	return false
}

// Observe shows a step on the page as it starts and ends; a slip's
// measurement takes the presenter's next key while it runs.
func (st *stageSteps) Observe(ev Event) {
	switch ev := ev.(type) {
	case StepStarted:
		if ev.Step.Phase == "slip" {
			st.armSlip(ev.Step)
		}
		st.hub.Add(stepEvent(ev.Step, "start", st.o.Slots, nil, st.row))
	case StepEnded:
		st.hub.Add(stepEvent(ev.M.Step, "end", st.o.Slots, &ev.M, st.row))
		st.disarmSlip()
	}
}

// ObserveLive shows the live samples on the page, each as its event: a
// stall connection once a frame, as its newest sample (the most probes
// due) says it, a loop's lag at the window's end on the stage's clock.
func (st *stageSteps) ObserveLive(ev Live) {
	switch ev := ev.(type) {
	case LiveRate:
		st.hub.Add(stage.Throughput{ID: ev.ID, RPS: ev.RPS})
	case LiveProbe:
		st.hub.Add(stage.Probe{ID: ev.ID, Server: ev.Server, Ms: ev.Ms})
	case LiveConn:
		st.hub.AddMax(fmt.Sprintf("conn/%s/%d", ev.ID, ev.Conn),
			stage.Conn{ID: ev.ID, Conn: ev.Conn, Loop: ev.Loop, Ms: ev.Ms, WaitMs: ev.WaitMs, Stalled: ev.Stalled}, float64(ev.Due))
	case LiveVerdict:
		st.hub.Add(stage.Verdict{ID: ev.ID, Judged: ev.Judged, Stalled: ev.Stalled, Conns: ev.Conns, Why: ev.Why})
	case LiveLag:
		st.hub.Add(stage.Lag{Server: ev.Server, Loop: ev.Loop, Ms: ev.Ms, Blocked: ev.Blocked, At: st.hub.Ms(ev.At), Where: ev.Where, HeldMs: ev.HeldMs})
	}
}

// slipKey is a slip measurement's key: said once the call was slowed,
// over once the measurement ended (a late key goes to the slides).
type slipKey struct {
	mu         sync.Mutex
	told       string
	said, over bool
	auto       *time.Timer
}

// armSlip gives the presenter's next key to slowing s's call; --auto
// rehearses the key: a side into the window, give or take the server's
// start.
func (st *stageSteps) armSlip(s Step) {
	k := &slipKey{told: slipTold(st.dir, s)}
	_ = os.Remove(k.told) // a repeat's key is its own
	tell := func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.said || k.over {
			return k.said
		}
		k.said = st.tellSlip(s, k.told)
		return k.said
	}
	st.ctl.hookNext(tell)
	if st.o.Auto {
		k.auto = time.AfterFunc(startDelay+s.Warmup+time.Second+s.Duration/(stageSlipWait+1), func() { tell() })
	}
	st.slip = k
}

// disarmSlip gives the next key to the slides again.
func (st *stageSteps) disarmSlip() {
	k := st.slip
	if k == nil {
		return
	}
	st.slip = nil
	if k.auto != nil {
		k.auto.Stop()
	}
	st.ctl.hookNext(nil)
	k.mu.Lock()
	k.over = true
	k.mu.Unlock()
	_ = os.Remove(k.told)
}

// tellSlip slows the slip's call now: it makes the file the load watches
// and tells the page when; false when the file cannot be made (the key
// then goes to the slides).
func (st *stageSteps) tellSlip(s Step, told string) bool {
	if err := os.WriteFile(told, nil, 0o644); err != nil {
		st.hub.Add(stage.State{State: "the call could not be slowed: " + err.Error()})
		return false
	}
	st.hub.Add(stage.Slip{ID: s.ID, At: st.hub.Ms(time.Now())})
	st.hub.Add(stage.State{State: fmt.Sprintf("now: %s, the call slowed to %s", s.Server.Name, s.SlipBlock.D())})
	return true
}
