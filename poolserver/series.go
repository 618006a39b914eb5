package main

import (
	"sync"
	"time"

	"github.com/bystander-kit/bystander/internal/hist"
	"github.com/bystander-kit/bystander/internal/pace"
)

// The pool's equivalent of a loop's lag: how long requests waited for a
// slot, second by second, beside how many slots were busy.

// secondsKept is how many whole seconds /stats lists.
const secondsKept = 120

// sampleEvery is how often the slot occupancy is sampled.
const sampleEvery = 10 * time.Millisecond

// Second is one second of the pool: the requests that got a slot in it,
// how long they waited, and the slots busy and requests waiting, sampled
// every 10 ms.
type Second struct {
	UnixS         int64   `json:"t_unix_s"`
	Acquisitions  int64   `json:"acquisitions"`
	WaitP50Ns     int64   `json:"wait_p50_ns"`
	WaitP99Ns     int64   `json:"wait_p99_ns"`
	WaitMaxNs     int64   `json:"wait_max_ns"`
	SlotsBusyMean float64 `json:"slots_busy_mean"`
	SlotsBusyMax  int64   `json:"slots_busy_max"`
	QueueMax      int64   `json:"queue_max"`
}

// QueueWait is the slot waits since the server started.
type QueueWait struct {
	Count int64 `json:"count"`
	P50Ns int64 `json:"p50_ns"`
	P99Ns int64 `json:"p99_ns"`
	MaxNs int64 `json:"max_ns"`
}

type series struct {
	mu      sync.Mutex
	all     *hist.H // since start
	cur     *hist.H // this second
	at      int64   // unix second being filled
	n       int64
	samples int64
	busySum int64
	busyMax int64
	queMax  int64
	done    []Second // oldest first, at most secondsKept
}

func newSeries(now time.Time) *series {
	return &series{all: hist.New(), cur: hist.New(), at: now.Unix()}
}

// waited records one request's wait for a slot, at now.
func (s *series) waited(d time.Duration, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roll(now.Unix())
	s.all.Record(d)
	s.cur.Record(d)
	s.n++
}

// sample records the slots busy and requests waiting at now.
func (s *series) sample(busy, waiting int64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roll(now.Unix())
	s.samples++
	s.busySum += busy
	s.busyMax = max(s.busyMax, busy)
	s.queMax = max(s.queMax, waiting)
}

// roll closes the second being filled once sec has come.
func (s *series) roll(sec int64) {
	if sec <= s.at {
		return
	}
	sum := s.cur.Summary()
	ns := func(us float64) int64 { return int64(us * 1e3) }
	sd := Second{UnixS: s.at, Acquisitions: s.n, WaitP50Ns: ns(sum.P50Us), WaitP99Ns: ns(sum.P99Us), WaitMaxNs: ns(sum.MaxUs),
		SlotsBusyMax: s.busyMax, QueueMax: s.queMax}
	if s.samples > 0 {
		sd.SlotsBusyMean = float64(s.busySum) / float64(s.samples)
	}
	s.done = append(s.done, sd)
	if len(s.done) > secondsKept {
		s.done = s.done[len(s.done)-secondsKept:]
	}
	s.at, s.n, s.samples, s.busySum, s.busyMax, s.queMax = sec, 0, 0, 0, 0, 0
	s.cur = hist.New()
}

// snapshot is the whole seconds so far and the waits since start.
func (s *series) snapshot(now time.Time) ([]Second, QueueWait) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roll(now.Unix())
	sum := s.all.Summary()
	return append([]Second{}, s.done...), QueueWait{Count: sum.Count, P50Ns: int64(sum.P50Us * 1e3), P99Ns: int64(sum.P99Us * 1e3), MaxNs: int64(sum.MaxUs * 1e3)}
}

// watch samples the occupancy every sampleEvery until stop closes.
func (sl *slots) watch(stop <-chan struct{}) {
	pace.Every(stop, sampleEvery, func(now time.Time) { sl.series.sample(sl.busy.Load(), sl.waiting.Load(), now) })
}
