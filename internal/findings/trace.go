package findings

import (
	"time"

	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/results"
)

// Span is one part of an /async request over the repetitions: p50 and p99
// in us, and how many samples each percentile is of.
type Span struct {
	P50, P99, N Figure
}

func spanOf(rs []*results.Result, f func(*results.Trace) hist.Percentiles) Span {
	var s Span
	for _, r := range rs {
		if r.Trace == nil {
			continue
		}
		p := f(r.Trace)
		if p.Count == 0 {
			continue
		}
		s.P50 = append(s.P50, p.P50Us)
		s.P99 = append(s.P99, p.P99Us)
		s.N = append(s.N, float64(p.Count))
	}
	return s
}

// TraceRow is the /async trace of one server.
type TraceRow struct {
	*Group
	Accepted, Lateness, Return, Total Span
	Delay                             time.Duration
	// Waterfall is up to WaterfallSamples of the first repetition's
	// samples, evenly spread over its window.
	Waterfall []results.TraceSample
}

// WaterfallSamples is how many requests the trace chart draws per server.
const WaterfallSamples = 10

func traceRow(g *Group) TraceRow {
	r := TraceRow{Group: g,
		Accepted: spanOf(g.Trace, func(t *results.Trace) hist.Percentiles { return t.Accepted }),
		Lateness: spanOf(g.Trace, func(t *results.Trace) hist.Percentiles { return t.Lateness }),
		Return:   spanOf(g.Trace, func(t *results.Trace) hist.Percentiles { return t.Return }),
		Total:    spanOf(g.Trace, func(t *results.Trace) hist.Percentiles { return t.Total }),
	}
	for _, t := range g.Trace {
		if t.Trace == nil {
			continue
		}
		r.Delay = time.Duration(t.Params.DelayNs)
		samples := t.Trace.Samples
		if len(samples) <= WaterfallSamples {
			r.Waterfall = samples
		} else {
			for i := range WaterfallSamples {
				r.Waterfall = append(r.Waterfall, samples[i*len(samples)/WaterfallSamples])
			}
		}
		break
	}
	return r
}
