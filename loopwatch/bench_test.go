package loopwatch

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkEnterExit is what marking one callback costs the loop.
//
//	go test ./loopwatch -run '^$' -bench . -benchtime 2s
func BenchmarkEnterExit(b *testing.B) {
	w := New(Options{Threshold: time.Hour, Logger: quiet})
	defer w.Stop()
	l := w.Loop("loop-0")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.Enter()
		l.Exit()
	}
}

// BenchmarkStack is what one episode's stack costs, the world stopped for
// part of it, with as many other goroutines parked as a server has
// connections or workers.
func BenchmarkStack(b *testing.B) {
	for _, n := range []int{10, 1000, 10000, 50000} {
		b.Run(fmt.Sprint(n, "-goroutines"), func(b *testing.B) {
			release := make(chan struct{})
			for i := 0; i < n; i++ {
				go func() { <-release }()
			}
			defer close(release)
			w := New(Options{Threshold: time.Hour, Logger: quiet})
			defer w.Stop()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.dump()
			}
			s := w.Stats()
			b.ReportMetric(float64(s.StackPauseMax.Microseconds()), "max_us")
		})
	}
}

// BenchmarkLook is one look at 8 loops, none held: what the watcher's
// goroutine spends every quarter of the threshold.
func BenchmarkLook(b *testing.B) {
	w := NewDriven(Options{Threshold: time.Hour, Logger: quiet})
	defer w.Stop()
	for i := 0; i < 8; i++ {
		l := w.Loop(fmt.Sprint("loop-", i))
		l.Enter()
		l.Exit()
	}
	now := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Look(now)
	}
}
