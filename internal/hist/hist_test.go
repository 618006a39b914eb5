package hist

import (
	"math"
	"testing"
	"time"
)

func TestSummary(t *testing.T) {
	h := New()
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	s := h.Summary()
	near := func(got, want float64) bool { return math.Abs(got-want) <= want*0.001+1 }
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p50", s.P50Us, 500_000}, {"p90", s.P90Us, 900_000}, {"p95", s.P95Us, 950_000},
		{"p99", s.P99Us, 990_000}, {"p99.9", s.P999Us, 999_000}, {"max", s.MaxUs, 1_000_000},
		{"min", s.MinUs, 1000}, {"mean", s.MeanUs, 500_500},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v within 0.1%%", c.name, c.got, c.want)
		}
	}
	if s.Count != 1000 {
		t.Errorf("count %d", s.Count)
	}
}

func TestClampAndMerge(t *testing.T) {
	a, b := New(), New()
	a.Record(0)
	a.Record(2 * time.Minute)
	b.Record(5 * time.Millisecond)
	a.Merge(b)
	s := a.Summary()
	if s.Count != 3 || s.MinUs != 1 || s.OverRange != 1 || s.MaxUs < 59_900_000 {
		t.Fatalf("%+v", s)
	}
	if (New().Summary() != Percentiles{}) {
		t.Fatal("an empty histogram has percentiles")
	}
}

// TestEncoded: the summary carries the whole histogram in HdrHistogram's
// standard encoding; decoded, it gives the same percentiles and merges.
func TestEncoded(t *testing.T) {
	h := New()
	for i := 1; i <= 500; i++ {
		h.Record(time.Duration(i) * 100 * time.Microsecond)
	}
	s := h.Summary()
	if s.HDR == "" {
		t.Fatal("no encoded histogram")
	}
	back, err := Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Summary(); got != s {
		t.Fatalf("decoded %+v\nwant    %+v", got, s)
	}
	back.Merge(h)
	if back.Count() != 1000 {
		t.Fatalf("merged count %d", back.Count())
	}
	if _, err := Decode(Percentiles{}); err == nil {
		t.Fatal("decoded an empty encoding")
	}
}

func TestRecordCorrected(t *testing.T) {
	h := New()
	h.RecordCorrected(5*time.Millisecond, time.Millisecond)
	if h.Count() != 5 {
		t.Fatalf("count %d, want 5 (the late beat and the 4 it hid)", h.Count())
	}
	s := h.Summary()
	if s.MinUs < 999 || s.MinUs > 1001 || s.MaxUs < 4995 || s.MaxUs > 5005 {
		t.Errorf("min %v max %v, want 1000 and 5000 us", s.MinUs, s.MaxUs)
	}
	h2 := New()
	h2.RecordCorrected(300*time.Microsecond, time.Millisecond)
	if h2.Count() != 1 {
		t.Errorf("a beat late by less than the interval hid nothing: count %d", h2.Count())
	}
}

// TestP50IsSummarys: P50 is the median Summary gives, without encoding.
func TestP50IsSummarys(t *testing.T) {
	h := New()
	if h.P50() != 0 {
		t.Errorf("empty: %v", h.P50())
	}
	for _, d := range []time.Duration{98765432, 120000001, 450000000, 451000000, 851234567, 903123456} {
		h.Record(d)
	}
	if got, want := h.P50(), time.Duration(h.Summary().P50Us*1e3); got != want || got == 451*time.Millisecond {
		t.Errorf("P50 %v, Summary's %v", got, want)
	}
}
