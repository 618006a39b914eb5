package experiment

import (
	"context"

	"github.com/bystander-kit/bystander/internal/results"
)

// measure measures the steps src gives, as it gives them, and tells the
// observers; a step src skips is recorded as skipped, and the
// measurements it never gave as src says.
func (r *runner) measure(ctx context.Context, src StepSource) {
	for {
		job, ok := src.Next(ctx)
		if !ok {
			break
		}
		if job.Skip != "" {
			r.set(job.Slot, func(m *results.Measurement) { m.Status, m.Reason = "skipped", job.Skip })
			continue
		}
		r.emit(StepStarted{Step: job.Step, Rep: job.Rep})
		m := r.step(ctx, job)
		r.record(job.Slot, m)
		r.save()
		r.emit(StepEnded{M: m, Said: r.said(m)})
		r.sayWatch(m)
	}
	r.skipPending(ctx, src.Unreached())
}
