// Package hist is the kit's latency histogram: HdrHistogram from 1 us to
// 60 s at 3 significant digits, so every percentile it reports is within
// 0.1 % of the value recorded, with the percentiles the reports quote.
package hist

import (
	"errors"
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Bounds of what a histogram records; values outside are clamped and counted.
const (
	Lowest  = time.Microsecond
	Highest = 60 * time.Second
)

// H is a latency histogram. It is not safe for concurrent use: give each
// worker its own and Merge them.
type H struct {
	h       *hdr.Histogram
	clamped int64
}

// New returns an empty histogram.
func New() *H {
	return &H{h: hdr.New(int64(Lowest/time.Microsecond), int64(Highest/time.Microsecond), 3)}
}

// Record adds one latency. Values under 1 us count as 1 us, over 60 s as 60 s.
func (h *H) Record(d time.Duration) {
	us := int64(d / time.Microsecond)
	switch {
	case us < 1:
		us = 1
	case us > int64(Highest/time.Microsecond):
		us = int64(Highest / time.Microsecond)
		h.clamped++
	}
	_ = h.h.RecordValue(us)
}

// RecordCorrected adds one latency of a sample due every interval, and the
// samples that could not be taken while it was late (HdrHistogram's
// coordinated-omission correction): a heartbeat 5 ms late at a 1 ms
// interval also counts the beats due 1, 2, 3 and 4 ms into the wait, which
// were late by 4, 3, 2 and 1 ms.
func (h *H) RecordCorrected(d, interval time.Duration) {
	h.Record(d)
	if interval <= 0 {
		return
	}
	for missed := d - interval; missed >= interval; missed -= interval {
		h.Record(missed)
	}
}

// Merge adds o's values into h.
func (h *H) Merge(o *H) {
	h.h.Merge(o.h)
	h.clamped += o.clamped
}

// P50 is the median as Summary gives it (its P50Us), without encoding
// the histogram: 0 when empty.
func (h *H) P50() time.Duration {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.ValueAtQuantile(50)) * time.Microsecond
}

// Count is the number of values recorded.
func (h *H) Count() int64 { return h.h.TotalCount() }

// Percentiles is the summary the kit reports, in microseconds.
type Percentiles struct {
	Count  int64   `json:"count"`
	MinUs  float64 `json:"min_us"`
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P95Us  float64 `json:"p95_us"`
	P99Us  float64 `json:"p99_us"`
	P999Us float64 `json:"p99_9_us"`
	MaxUs  float64 `json:"max_us"`
	// OverRange counts values above 60 s, recorded as 60 s.
	OverRange int64 `json:"over_range,omitempty"`
	// HDR is the whole histogram in HdrHistogram's standard V2 compressed
	// encoding, base64 (as HdrHistogram's own log format writes it), so any
	// percentile can be recomputed and histograms of repeats merged exactly.
	HDR string `json:"hdr_base64,omitempty"`
}

// Summary returns the percentiles (all zero when empty).
func (h *H) Summary() Percentiles {
	if h.h.TotalCount() == 0 {
		return Percentiles{}
	}
	q := func(p float64) float64 { return float64(h.h.ValueAtQuantile(p)) }
	enc, _ := h.h.Encode(hdr.V2CompressedEncodingCookieBase) // fails only on a write to memory
	return Percentiles{
		HDR:       string(enc),
		Count:     h.h.TotalCount(),
		MinUs:     float64(h.h.Min()),
		MeanUs:    h.h.Mean(),
		P50Us:     q(50),
		P90Us:     q(90),
		P95Us:     q(95),
		P99Us:     q(99),
		P999Us:    q(99.9),
		MaxUs:     float64(h.h.Max()),
		OverRange: h.clamped,
	}
}

// Decode reads back a histogram that Summary encoded in p.HDR.
func Decode(p Percentiles) (*H, error) {
	if p.HDR == "" {
		return nil, errors.New("hist: no encoded histogram")
	}
	h, err := hdr.Decode([]byte(p.HDR))
	if err != nil {
		return nil, fmt.Errorf("hist: %w", err)
	}
	return &H{h: h, clamped: p.OverRange}, nil
}
