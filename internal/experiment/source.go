package experiment

import "context"

// Job is one step for the runner: the step, its repetition, and where its
// measurement is recorded in run.json (Slot; -1: after the plan's, a
// measurement again). Skip, when not empty, is why the step is recorded
// as skipped instead of measured. SlipWhen, for a slip, is the file whose
// making slows the call before the plan's moment (loadgen --switch-when:
// the presenter's key, on stage); "" for the plan's moment.
type Job struct {
	Step     Step
	Rep      int
	Slot     int
	Skip     string
	SlipWhen string
}

// StepSource gives the runner its steps one at a time: the plan in order
// (planSteps), or as the presenter's keys ask (stageSteps).
type StepSource interface {
	// Next is the next job; false when there is none (the source is
	// done, or ctx ended).
	Next(ctx context.Context) (Job, bool)
	// Unreached is why a measurement the source never gave was not made.
	Unreached() string
}

// planSteps walks the plan in order, each repetition in turn: the default
// source. A step the plan skips comes with why.
type planSteps struct {
	plan Plan
	rep  int // 1 to Repeat
	i    int // the next step of the plan
	slot int
}

func newPlanSteps(p Plan) *planSteps { return &planSteps{plan: p, rep: 1} }

func (p *planSteps) Next(ctx context.Context) (Job, bool) {
	if p.i == len(p.plan.Steps) {
		p.rep, p.i = p.rep+1, 0
	}
	if ctx.Err() != nil || p.rep > p.plan.Options.Repeat || len(p.plan.Steps) == 0 {
		return Job{}, false
	}
	s := p.plan.Steps[p.i]
	j := Job{Step: s, Rep: p.rep, Slot: p.slot, Skip: p.plan.Skips[s.ID]}
	p.i++
	p.slot++
	return j, true
}

// Unreached: the plan's steps are all given unless the run is interrupted.
func (p *planSteps) Unreached() string { return "the run was interrupted before it" }
