package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics is /metrics on the admin listener, in the Prometheus text
// format: the pool's slots and how long requests waited for one.
type metrics struct{ s *server }

var (
	mSlots    = prometheus.NewDesc("bystander_pool_slots", "Worker slots of the pool.", nil, nil)
	mBusy     = prometheus.NewDesc("bystander_pool_slots_busy", "Slots held now.", nil, nil)
	mQueue    = prometheus.NewDesc("bystander_pool_queue", "Requests waiting for a slot now.", nil, nil)
	mAcquired = prometheus.NewDesc("bystander_pool_slot_acquisitions_total", "Slots taken.", nil, nil)
	mWait     = prometheus.NewDesc("bystander_pool_queue_wait_seconds",
		"How long requests waited for a slot since the start, at a quantile (1: the longest).", []string{"quantile"}, nil)
)

func (m metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mSlots, mBusy, mQueue, mAcquired, mWait} {
		ch <- d
	}
}

func (m metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.s.stats()
	ch <- prometheus.MustNewConstMetric(mSlots, prometheus.GaugeValue, float64(st.Slots))
	ch <- prometheus.MustNewConstMetric(mBusy, prometheus.GaugeValue, float64(st.SlotsBusy))
	ch <- prometheus.MustNewConstMetric(mQueue, prometheus.GaugeValue, float64(st.QueueNow))
	ch <- prometheus.MustNewConstMetric(mAcquired, prometheus.CounterValue, float64(st.SlotAcquisitions))
	for q, v := range map[string]int64{"0.5": st.QueueWait.P50Ns, "0.99": st.QueueWait.P99Ns, "1": st.QueueWait.MaxNs} {
		ch <- prometheus.MustNewConstMetric(mWait, prometheus.GaugeValue, time.Duration(v).Seconds(), q)
	}
}
