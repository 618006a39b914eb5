package results

import "testing"

// TestCostOf: CPU per request is the CPU over the requests, in
// microseconds, and none without a request (not a division by zero's Inf
// or NaN in run.json, which encoding/json refuses).
func TestCostOf(t *testing.T) {
	for _, c := range []struct {
		cpuNs, requests int64
		want            float64
	}{
		{cpuNs: 3_000_000, requests: 1000, want: 3},
		{cpuNs: 1500, requests: 1, want: 1.5},
		{cpuNs: 5_000_000, requests: 0, want: 0},
		{cpuNs: 0, requests: 10, want: 0},
	} {
		got := CostOf(c.cpuNs, c.requests)
		if got.CPUUsPerRequest != c.want || got.CPUNs != c.cpuNs || got.Requests != c.requests {
			t.Errorf("CostOf(%d, %d) = %+v, want %v us per request", c.cpuNs, c.requests, got, c.want)
		}
	}
}

// TestInWindow: a process's CPU over the window is its cores, a wait over
// it the window's share; none without a window (a run.json of a stranger
// may hold 0), not a division by zero.
func TestInWindow(t *testing.T) {
	for _, c := range []struct {
		windowNs, ns int64
		want         float64
	}{
		{windowNs: 2_000_000_000, ns: 3_000_000_000, want: 1.5},
		{windowNs: 1000, ns: 250, want: 0.25},
		{windowNs: 0, ns: 250, want: 0},
		{windowNs: -5, ns: 250, want: 0},
	} {
		u := &Use{WindowNs: c.windowNs}
		if got := u.InWindow(c.ns); got != c.want {
			t.Errorf("window %d ns: InWindow(%d) = %v, want %v", c.windowNs, c.ns, got, c.want)
		}
	}
}

// TestInFlight: Little's law, throughput x mean latency: 1,000 req/s at
// 4 ms each keep 4 in flight; none without answers.
func TestInFlight(t *testing.T) {
	for _, c := range []struct {
		perS, meanUs, want float64
	}{
		{perS: 1000, meanUs: 4000, want: 4},
		{perS: 200, meanUs: 5000, want: 1},
		{perS: 0, meanUs: 5000, want: 0},
	} {
		l := &Load{ThroughputPerS: c.perS}
		l.Latency.MeanUs = c.meanUs
		if got := l.InFlight(); got != c.want {
			t.Errorf("%.0f req/s at %.0f us: InFlight() = %v, want %v", c.perS, c.meanUs, got, c.want)
		}
	}
}
