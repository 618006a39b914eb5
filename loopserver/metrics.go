package main

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bystander-kit/bystander/loopwatch/loopwatchprom"
)

// metrics is /metrics on the admin listener, in the Prometheus text
// format: what /stats says per loop, for the scrapers operators already
// run. It reads the same counters as /stats, when scraped.
type metrics struct{ s *server }

// collectors are /metrics' own: the loops', and the detector's
// (loopwatch's episodes by cause, its stacks and their pauses).
func (s *server) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{metrics{s}}
	if w := s.mon.Watcher(); w != nil {
		cs = append(cs, loopwatchprom.Collector(w))
	}
	return cs
}

var (
	mLag = prometheus.NewDesc("bystander_loop_lag_seconds",
		"Heartbeat lag of each loop since the start (when a beat ran less when it was handed over), at a quantile (1: the largest).",
		[]string{"loop", "quantile"}, nil)
	mBeats = prometheus.NewDesc("bystander_loop_heartbeats_total",
		"Heartbeats recorded per loop, with the ones a late beat hid (coordinated-omission correction).", []string{"loop"}, nil)
	mBlocks = prometheus.NewDesc("bystander_loop_blocks_total",
		"Blocks the detector saw per loop (a request that held its loop past --block-warn, its thread not short of a CPU nor its goroutine of a Go P), by the route the loop was serving.", []string{"loop", "route"}, nil)
	mBlocked = prometheus.NewDesc("bystander_loop_blocked_seconds_total",
		"Time each loop spent held past --block-warn, the ongoing block included.", []string{"loop"}, nil)
	mBlockedNow = prometheus.NewDesc("bystander_loop_blocked",
		"1 while the loop is held past --block-warn.", []string{"loop"}, nil)
	mRequests = prometheus.NewDesc("bystander_loop_requests_total", "Requests each loop served.", []string{"loop"}, nil)
	mConns    = prometheus.NewDesc("bystander_loop_connections", "Open client connections per loop.", []string{"loop"}, nil)
	mRefused  = prometheus.NewDesc("bystander_connections_refused_total",
		"Connections closed at once because the server held as many as its cap under the descriptor limit.", nil, nil)
)

func (m metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mLag, mBeats, mBlocks, mBlocked, mBlockedNow, mRequests, mConns, mRefused} {
		ch <- d
	}
}

func (m metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.s.stats()
	sec := func(ns int64) float64 { return time.Duration(ns).Seconds() }
	for _, l := range st.Loops {
		loop := strconv.Itoa(l.Loop)
		for q, v := range map[string]int64{"0.5": l.LagP50Ns, "0.99": l.LagP99Ns, "1": l.LagMaxNs} {
			ch <- prometheus.MustNewConstMetric(mLag, prometheus.GaugeValue, sec(v), loop, q)
		}
		ch <- prometheus.MustNewConstMetric(mBeats, prometheus.CounterValue, float64(l.LagBeats), loop)
		for route, n := range l.BlocksByRoute {
			ch <- prometheus.MustNewConstMetric(mBlocks, prometheus.CounterValue, float64(n), loop, route)
		}
		ch <- prometheus.MustNewConstMetric(mBlocked, prometheus.CounterValue, sec(l.BlockedNs), loop)
		now := 0.0
		if l.BlockedNow {
			now = 1
		}
		ch <- prometheus.MustNewConstMetric(mBlockedNow, prometheus.GaugeValue, now, loop)
		ch <- prometheus.MustNewConstMetric(mRequests, prometheus.CounterValue, float64(l.Requests), loop)
		ch <- prometheus.MustNewConstMetric(mConns, prometheus.GaugeValue, float64(l.ConnectionsOpen), loop)
	}
	ch <- prometheus.MustNewConstMetric(mRefused, prometheus.CounterValue, float64(st.Refused))
}
