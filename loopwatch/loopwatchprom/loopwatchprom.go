// Package loopwatchprom exports a loopwatch.Watcher's counts to Prometheus:
// for each loop, its episodes by cause (blocked; starved: its thread did
// not get a CPU; waiting_for_p: its goroutine, back from a system call,
// waited for a Go P; unknown) and how long they held it; and how many
// stacks were taken and what they paused.
//
//	prometheus.MustRegister(loopwatchprom.Collector(w))
package loopwatchprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bystander-kit/bystander/loopwatch"
)

var (
	episodes = prometheus.NewDesc("loopwatch_episodes_total",
		"Callbacks that held their event loop past the threshold, by cause: blocked (the callback held it), starved (its thread waited for a CPU), waiting_for_p (its goroutine, back from a system call, waited for a Go P), unknown (not on a locked thread: cannot tell).", []string{"loop", "cause"}, nil)
	held = prometheus.NewDesc("loopwatch_held_seconds_total",
		"How long the episodes that ended held their loop, in all.", []string{"loop"}, nil)
	stacks = prometheus.NewDesc("loopwatch_stacks_total",
		"Stacks taken of a holding goroutine (the world is stopped for part of each).", nil, nil)
	pauseTotal = prometheus.NewDesc("loopwatch_stack_pause_seconds_total",
		"Time spent taking those stacks, in all.", nil, nil)
	pauseMax = prometheus.NewDesc("loopwatch_stack_pause_seconds_max",
		"The longest time one stack took.", nil, nil)
)

// Collector reads w's counts each time Prometheus scrapes.
func Collector(w *loopwatch.Watcher) prometheus.Collector { return collector{w} }

type collector struct{ w *loopwatch.Watcher }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{episodes, held, stacks, pauseTotal, pauseMax} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.w.Loops() {
		n := l.Counts()
		for cause, v := range map[loopwatch.Cause]int64{loopwatch.Blocked: n.Blocked, loopwatch.Starved: n.Starved,
			loopwatch.WaitingForP: n.WaitingForP, loopwatch.Unknown: n.Unknown} {
			ch <- prometheus.MustNewConstMetric(episodes, prometheus.CounterValue, float64(v), l.Name(), cause.String())
		}
		ch <- prometheus.MustNewConstMetric(held, prometheus.CounterValue, n.Held.Seconds(), l.Name())
	}
	s := c.w.Stats()
	ch <- prometheus.MustNewConstMetric(stacks, prometheus.CounterValue, float64(s.Stacks))
	ch <- prometheus.MustNewConstMetric(pauseTotal, prometheus.CounterValue, s.StackPauseTotal.Seconds())
	ch <- prometheus.MustNewConstMetric(pauseMax, prometheus.GaugeValue, s.StackPauseMax.Seconds())
}
